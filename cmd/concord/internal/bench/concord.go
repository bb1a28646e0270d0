package bench

import (
	"context"
	"fmt"
	"strings"

	"github.com/concord-ctx/concord/rpc/client"

	"github.com/concord-ctx/concord/rpc/protocol"

	"github.com/concord-ctx/concord/cmd/concord/internal/bench/race"
)

// concordSession drives the real `concord serve` exactly as a binding does:
// every read_file result (and every grep hit) is observed as a block, a sync
// runs before each model call, and stale tool messages are replaced by the
// repaired text or the notice.
type concordSession struct {
	c     *client.Client
	ws    *race.Workspace
	kinds map[string]string // anchor -> tool name, to re-render in the tool's format
}

const benchAgent = "main"

func startConcord(ctx context.Context, cfg Config, ws *race.Workspace) (*concordSession, error) {
	c, err := client.Options{Stderr: cfg.ServerLog}.Start(ctx, cfg.ConcordBin, "serve")
	if err != nil {
		return nil, fmt.Errorf("concord mode: %w", err)
	}
	params := protocol.InitializeParams{
		ProtocolVersion: protocol.Version,
		ClientInfo:      &protocol.Info{Name: "concord-bench", Version: "1"},
		Roots:           []string{ws.Dir},
		Watch:           protocol.WatchAuto,
	}
	if cfg.ConcordLocal != "" {
		params.Policy = &protocol.PolicyConfig{Global: protocol.Policy{Local: protocol.Action(cfg.ConcordLocal)}}
	}
	var init protocol.InitializeResult
	err = c.Call(ctx, protocol.MethodInitialize, params, &init)
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("concord initialize: %w", err)
	}
	return &concordSession{c: c, ws: ws, kinds: map[string]string{}}, nil
}

// observe registers a read or a grep result under its tool call id.
func (s *concordSession) observe(ctx context.Context, turn int, anchor string, res race.Result) error {
	var srcs []protocol.Source
	kind := ""
	switch {
	case res.Read != nil:
		kind = race.ToolRead
		srcs = []protocol.Source{{
			URI:     s.ws.URI(res.Read.File),
			Range:   &protocol.Range{Start: res.Read.Start, End: res.Read.End},
			Text:    strings.Join(res.Read.Lines, "\n"),
			Version: res.Read.Version,
		}}
	case len(res.Hits) > 0:
		kind = race.ToolGrep
		for _, h := range res.Hits {
			srcs = append(srcs, protocol.Source{URI: s.ws.URI(h.File), Range: &protocol.Range{Start: h.Line, End: h.Line}, Text: h.Text, Version: h.Version})
		}
	default:
		return nil
	}
	var out protocol.ObserveResult
	if err := s.c.Call(ctx, protocol.MethodObserve, protocol.ObserveParams{Agent: benchAgent, Turn: turn, Anchor: anchor, Kind: "snapshot", Sources: srcs}, &out); err != nil {
		return fmt.Errorf("concord observe %s: %w", anchor, err)
	}
	s.kinds[anchor] = kind
	return nil
}

// sync applies the projection's delta to views (anchor -> shown content).
func (s *concordSession) sync(ctx context.Context, turn int, views map[string]string) ([]ViewTrace, error) {
	var out protocol.SyncResult
	if err := s.c.Call(ctx, protocol.MethodSync, protocol.SyncParams{Agent: benchAgent, Turn: turn}, &out); err != nil {
		return nil, fmt.Errorf("concord sync: %w", err)
	}
	var tr []ViewTrace
	for _, b := range out.Blocks {
		switch b.Status {
		case "valid", "released":
			delete(views, b.Anchor)
		case "patched":
			views[b.Anchor] = s.render(b.Anchor, b.Sources)
		case "stale":
			views[b.Anchor] = s.render(b.Anchor, b.Sources) + "\n" + b.Notice
		default: // invalid, superseded: the notice alone
			views[b.Anchor] = b.Notice
		}
		tr = append(tr, ViewTrace{Anchor: b.Anchor, Status: string(b.Status), Reason: b.Reason, Shown: views[b.Anchor]})
	}
	return tr, nil
}

// render re-renders sources in the tool's own format at their new lines.
func (s *concordSession) render(anchor string, srcs []protocol.Source) string {
	var parts []string
	for _, src := range srcs {
		start := 1
		if src.Range != nil {
			start = src.Range.Start
		}
		lines := strings.Split(src.Text, "\n")
		switch s.kinds[anchor] {
		case race.ToolGrep:
			rel := s.rel(src.URI)
			for i, l := range lines {
				parts = append(parts, race.RenderHit(rel, start+i, l))
			}
		default:
			parts = append(parts, race.RenderRead(start, lines))
		}
	}
	return strings.Join(parts, "\n")
}

func (s *concordSession) rel(uri string) string {
	p := strings.TrimPrefix(uri, "file://")
	return strings.TrimPrefix(strings.TrimPrefix(p, s.ws.Dir), "/")
}

func (s *concordSession) stats(ctx context.Context) map[string]any {
	var st map[string]any
	if err := s.c.Call(ctx, protocol.MethodStats, nil, &st); err != nil {
		return map[string]any{"error": err.Error()}
	}
	return st
}

func (s *concordSession) close() error {
	if err := s.c.Close(); err != nil {
		return fmt.Errorf("concord close: %w", err)
	}
	return nil
}
