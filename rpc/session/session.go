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

	"github.com/concord-ctx/concord/fileadapter"
	"github.com/concord-ctx/concord/rpc"
	"github.com/concord-ctx/concord/rpc/protocol"
	"github.com/concord-ctx/concord/runtime"
	"github.com/concord-ctx/concord/runtime/keyed"
)

// Options are the operator's settings (serve's flags); zero values take the
// file adapter's defaults.
type Options struct {
	PollInterval time.Duration
	Debounce     time.Duration
	MaxSource    int64 // largest file read as a source, bytes
}

// New returns the rpc.NewSessionFunc that builds sessions with these options.
func New(o Options) rpc.NewSessionFunc {
	return func(ctx context.Context, cfg rpc.SessionConfig) (rpc.Core, string, error) {
		m := runtime.New(runtime.Config{Policy: cfg.Policy, Locator: cfg.Locator, OnChange: cfg.Notify, Logger: cfg.Logger,
			Placement: cfg.Placement, CacheTTL: cfg.CacheTTL, Price: cfg.Price})
		if len(cfg.Roots) == 0 {
			// Keyed sources only: file URIs must be refused, not taken for keys.
			m.AddAdapter(noFiles{})
			m.AddAdapter(keyed.New(cfg.Fetch))
			return m, protocol.WatchHooks, nil
		}
		fa, err := fileadapter.New(fileadapter.Config{
			Roots:        cfg.Roots,
			Mode:         cfg.Watch,
			PollInterval: o.PollInterval,
			Debounce:     o.Debounce,
			MaxBytes:     o.MaxSource,
			Logger:       cfg.Logger,
		}, m.Hint)
		if err != nil {
			m.Close()
			var re *fileadapter.RootError
			if errors.As(err, &re) && (errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) || errors.Is(err, fs.ErrInvalid)) {
				return nil, "", rpc.FieldError(fmt.Sprintf("roots[%d]", re.Index), err.Error())
			}
			return nil, "", fmt.Errorf("start file watching: %w", err)
		}
		m.AddAdapter(fa)
		m.AddAdapter(keyed.New(cfg.Fetch))
		return m, fa.Mode(), nil
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
