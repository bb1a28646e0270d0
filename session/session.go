// Package session wires one Concord session: a runtime.Manager with the
// file adapter for file:// sources, the query adapter for query:// sources
// (confined to the same roots) and the keyed adapter (readSource) for every
// other scheme, and the intake of tool calls into it (package intake).
// `concord serve` hands it to the transport (rpc.Serve), and the in-process
// transcript tests build sessions the same way through it; it knows no
// transport.
package session

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"time"

	"github.com/concord-ctx/concord/feed"
	"github.com/concord-ctx/concord/fileadapter"
	"github.com/concord-ctx/concord/intake"
	"github.com/concord-ctx/concord/protocol"
	"github.com/concord-ctx/concord/query"
	"github.com/concord-ctx/concord/queryadapter"
	"github.com/concord-ctx/concord/recognize"
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

// Config is one session's settings and its ties back to its client: the
// client's options, validated, with the operator's policy laid under them
// (the transport's initialize does both).
type Config struct {
	Options protocol.InitializeParams
	// Notify tells the client that the blocks of these agents changed. It
	// never blocks.
	Notify func(agents []string)
	// Fetch asks the client for a keyed source's content (readSource).
	Fetch  func(ctx context.Context, uri string) (runtime.Content, error)
	Logger *slog.Logger
}

// manager is the context manager a session serves: *runtime.Manager, or
// the manager joined to a change feed.
type manager interface {
	Observe(ctx context.Context, p protocol.ObserveParams) (protocol.ObserveResult, error)
	ObserveView(ctx context.Context, p protocol.ObserveParams, v runtime.View) (protocol.ObserveResult, error)
	SourceChanged(ctx context.Context, p protocol.SourceChangedParams) (protocol.SourceChangedResult, error)
	Sync(ctx context.Context, p protocol.SyncParams) (protocol.SyncResult, error)
	Release(ctx context.Context, p protocol.ReleaseParams) (protocol.ReleaseResult, error)
	Compacted(ctx context.Context, p protocol.CompactedParams) (protocol.CompactedResult, error)
	Stats() protocol.StatsResult
	Close() error
}

// Core is one session: its context manager, the intake of tool calls into
// it, and the URI schemes its adapters serve.
type Core struct {
	manager
	in      *intake.Intake
	schemes []string
}

// Recognize takes a finished tool call in (package intake), reading the
// workspace as it is now.
func (c *Core) Recognize(ctx context.Context, p protocol.RecognizeParams) (protocol.RecognizeResult, error) {
	return c.in.Recognize(ctx, p)
}

// Schemes are the URI schemes the session serves, as its adapters declare
// them ("*": any other, by readSource).
func (c *Core) Schemes() []string { return c.schemes }

// newCore wraps m with its intake; serving lists the adapters that serve.
func newCore(m manager, serving ...runtime.Adapter) *Core {
	c := &Core{manager: m, in: intake.New(m, recognize.OS{}, nil)}
	for _, a := range serving {
		c.schemes = append(c.schemes, a.Scheme())
	}
	return c
}

// New returns the function that builds sessions with these options. It
// reports the effective watch mode; a *protocol.FieldError (a root that
// does not exist) names the offending field.
func New(o Options) func(ctx context.Context, cfg Config) (*Core, string, error) {
	return func(ctx context.Context, cfg Config) (*Core, string, error) {
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
			mgr, err := withFeed(ctx, m, fo, o.OpenFeed, nil, ka, "", cfg.Logger)
			if err != nil {
				return nil, "", err
			}
			return newCore(mgr, ka), protocol.WatchHooks, nil
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
		mgr, err := withFeed(ctx, m, fo, o.OpenFeed, fa, ka, feedRoot(fo, opts.Roots), cfg.Logger)
		if err != nil {
			return nil, "", err
		}
		hint.attach(mgr)
		return newCore(mgr, fa, qa, ka), fa.Mode(), nil
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
