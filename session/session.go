// Package session wires one Concord session for rpc.Serve: a runtime.Manager
// with the file adapter for file:// sources, the query adapter for query://
// sources (confined to the same roots) and the keyed adapter
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
	"github.com/concord-ctx/concord/query"
	"github.com/concord-ctx/concord/queryadapter"
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
		opts.Policy = queryPolicy(opts.Policy)
		m := runtime.New(runtime.Config{Options: opts, OnChange: cfg.Notify, Logger: cfg.Logger})
		if len(opts.Roots) == 0 {
			// Keyed sources only: file URIs must be refused, not taken for keys.
			m.AddAdapter(noFiles{})
			m.AddAdapter(noFiles{scheme: query.Scheme})
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
		qa, err := queryadapter.New(queryadapter.Config{
			Confine: confine(fa),
			Watch:   fa.Mode() == fileadapter.ModeFsnotify || fa.Mode() == fileadapter.ModeAuto,
			Logger:  cfg.Logger,
		}, hint.notify)
		if err != nil {
			m.Close()
			return nil, "", fmt.Errorf("start query sources: %w", err)
		}
		m.AddAdapter(qa)
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

// queryPolicy lays the query sources' default under the session's policy:
// a query whose output drifted is refreshed in place (Refresh), not
// suppressed with a notice to re-read, since what a re-read would get is
// exactly the output just re-run (as the runtime does for a whole file).
// An operator's or client's policy for "query" wins.
func queryPolicy(in *protocol.PolicyConfig) *protocol.PolicyConfig {
	var pc protocol.PolicyConfig
	if in != nil {
		pc = *in
	}
	if _, set := pc.ByType[query.Scheme]; set {
		return in
	}
	by := make(map[string]protocol.Policy, len(pc.ByType)+1)
	for k, v := range pc.ByType {
		by[k] = v
	}
	by[query.Scheme] = protocol.Policy{Drift: protocol.Refresh}
	pc.ByType = by
	return &pc
}

// confine is the file adapter's rule for the query adapter: a path
// resolved, inside the roots, or refused.
func confine(fa *fileadapter.Adapter) func(string) (string, error) {
	return func(p string) (string, error) {
		id, err := fa.Normalize(p)
		if err != nil {
			return "", err
		}
		return fileadapter.Path(id)
	}
}

// noFiles serves the file scheme (or, with scheme set, query sources) of a
// session without roots: it refuses every one, so none is taken for a key.
type noFiles struct{ scheme string }

func (n noFiles) Scheme() string {
	if n.scheme != "" {
		return n.scheme
	}
	return "file"
}
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
