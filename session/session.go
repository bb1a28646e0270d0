// Package session wires one Concord session for rpc.Serve: a runtime.Manager
// with the file adapter for file:// sources and the keyed adapter
// (readSource) for every other scheme. `concord serve` and the in-process
// transcript tests build sessions the same way through it.
package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/concord-ctx/concord/feed"
	"github.com/concord-ctx/concord/fileadapter"
	"github.com/concord-ctx/concord/protocol"
	"github.com/concord-ctx/concord/rpc"
	"github.com/concord-ctx/concord/runtime"
	"github.com/concord-ctx/concord/runtime/keyed"
)

// Options are the operator's settings (serve's flags); zero values take the
// file adapter's defaults.
type Options struct {
	PollInterval time.Duration
	Debounce     time.Duration
	MaxSource    int64 // largest file read as a source, bytes
	// Feed is the operator's change feed (serve's --feed flags); initialize's
	// feed overrides it field by field. OpenFeed opens its transport: nil in
	// a build without one (then a feed asked for is refused).
	Feed     FeedOptions
	OpenFeed feed.OpenFunc
}

// New returns the rpc.NewSessionFunc that builds sessions with these options.
func New(o Options) rpc.NewSessionFunc {
	return func(ctx context.Context, cfg rpc.SessionConfig) (rpc.Core, string, error) {
		opts := cfg.Options
		fo, err := o.Feed.merge(opts.Feed, o.OpenFeed)
		if err != nil {
			return nil, "", err
		}
		m := runtime.New(runtime.Config{Options: opts, OnChange: cfg.Notify, Logger: cfg.Logger})
		if len(opts.Roots) == 0 {
			// Keyed sources only: file URIs must be refused, not taken for keys.
			m.AddAdapter(noFiles{})
			ka := keyed.New(cfg.Fetch)
			m.AddAdapter(ka)
			core, err := withFeed(ctx, m, fo, o.OpenFeed, nil, ka, "", cfg.Logger)
			return core, protocol.WatchHooks, err
		}
		hint := &feedHint{m: m}
		fa, err := fileadapter.New(fileadapter.Config{
			Roots:        opts.Roots,
			Mode:         opts.Watch,
			PollInterval: o.PollInterval,
			Debounce:     o.Debounce,
			MaxBytes:     o.MaxSource,
			Logger:       cfg.Logger,
		}, hint.notify)
		if err != nil {
			m.Close()
			var re *fileadapter.RootError
			if errors.As(err, &re) && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) || errors.Is(err, fs.ErrInvalid)) {
				return nil, "", protocol.FieldErrorf(fmt.Sprintf("roots[%d]", re.Index), "%s", err.Error())
			}
			return nil, "", fmt.Errorf("start file watching: %w", err)
		}
		m.AddAdapter(fa)
		ka := keyed.New(cfg.Fetch)
		m.AddAdapter(ka)
		core, err := withFeed(ctx, m, fo, o.OpenFeed, fa, ka, feedRoot(fo, opts.Roots), cfg.Logger)
		if err != nil {
			return nil, "", err
		}
		hint.attach(core)
		return core, fa.Mode(), nil
	}
}

// noFiles serves the file scheme of a session without roots: it refuses
// every file.
type noFiles struct{}

func (noFiles) Scheme() string { return "file" }
func (noFiles) Normalize(uri string) (string, error) {
	return "", fmt.Errorf("%s: %w (the session has no roots)", uri, runtime.ErrOutsideRoots)
}
func (noFiles) Read(context.Context, string) (runtime.Content, error) {
	return runtime.Content{}, runtime.ErrOutsideRoots
}
func (noFiles) Stamp(context.Context, string) (string, error) { return "", runtime.ErrOutsideRoots }
func (noFiles) Watch(string) error                            { return runtime.ErrOutsideRoots }
func (noFiles) Unwatch(string)                                {}
func (noFiles) Close() error                                  { return nil }

var _ runtime.Adapter = noFiles{}
