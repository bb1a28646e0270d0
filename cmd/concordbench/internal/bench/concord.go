package bench

import (
	"context"
	"fmt"
	"strings"

	"github.com/concord-ctx/concord/cmd/concordbench/internal/bench/agent"
	"github.com/concord-ctx/concord/cmd/concordbench/internal/bench/race"
	"github.com/concord-ctx/concord/protocol"
)

// concordSession drives the real `concord serve` exactly as a binding does:
// every read_file result (and every grep hit) is observed as a block, a sync
// runs before each model call, and stale tool messages are replaced by the
// repaired text or the notice.
type concordSession struct {
	c     caller
	ws    *race.Workspace
	kinds map[string]string // anchor -> tool name, to re-render in the tool's format
	// notes are the errata placed at the tail (placement tail or auto), as
	// a binding keeps them: each sticks, byte-identical, to the message
	// that was newest when it arrived, until a sync says flushed.
	notes []note
	// rebuilt: the runtime compacted its history since the last sync; the
	// next sync says so (prefixRebuilt), as a binding does.
	rebuilt bool
}

// note is one sync's errata, attached after message at.
type note struct {
	at   int
	text string
}

// attach appends the notes to the messages they stick to.
func (s *concordSession) attach(msgs []agent.Message) {
	for _, n := range s.notes {
		if n.at >= 0 && n.at < len(msgs) {
			msgs[n.at].Content += "\n\n" + n.text
		}
	}
}

const benchAgent = "main"

func startConcord(ctx context.Context, cfg Config, ws *race.Workspace) (*concordSession, error) {
	c, err := dial(ctx, cfg.ConcordBin, cfg.ServerLog)
	if err != nil {
		return nil, fmt.Errorf("concord mode: %w", err)
	}
	params := protocol.InitializeParams{
		ProtocolVersion: protocol.Version,
		ClientInfo:      &protocol.Info{Name: "concord-bench", Version: "1"},
		Roots:           []string{ws.Dir},
		Watch:           protocol.WatchAuto,
		Placement:       cfg.ConcordPlacement, // docs/protocol.md, Placement
	}
	if cfg.ConcordWatch != "" {
		params.Watch = cfg.ConcordWatch
	}
	if cfg.ConcordPrice && cfg.Price.Cached {
		params.Cache = &protocol.CacheParams{Price: &protocol.CachePrice{Write: cfg.Price.Write, Read: cfg.Price.Read}}
	}
	if cfg.ConcordLocal != "" || cfg.ConcordDerived != "" {
		params.Policy = &protocol.PolicyConfig{Global: protocol.Policy{Local: protocol.Action(cfg.ConcordLocal), Derived: cfg.ConcordDerived}}
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
	case res.Edit != nil:
		kind = race.ToolEdit
		srcs = []protocol.Source{{
			URI:     s.ws.URI(res.Edit.File),
			Range:   &protocol.Range{Start: res.Edit.Start, End: res.Edit.End},
			Text:    strings.Join(res.Edit.Lines, "\n"),
			Version: res.Edit.Version,
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

// changed reports a write an agent made with its own tool (sourceChanged);
// anchor is the edit's tool call id when known.
func (s *concordSession) changed(ctx context.Context, agentID, file, anchor string) error {
	var out protocol.SourceChangedResult
	if err := s.c.Call(ctx, protocol.MethodSourceChanged, protocol.SourceChangedParams{URI: s.ws.URI(file), Agent: agentID, Anchor: anchor}, &out); err != nil {
		return fmt.Errorf("concord sourceChanged %s: %w", file, err)
	}
	return nil
}

// sync applies the projection's delta to views (anchor -> shown content).
// Views placed at the tail leave their message alone: their errata, joined,
// become one note after message newest.
// chars is the size of the prompt as it stands (promptChars).
func (s *concordSession) sync(ctx context.Context, turn int, views map[string]string, newest, chars int) ([]ViewTrace, error) {
	var out protocol.SyncResult
	if err := s.c.Call(ctx, protocol.MethodSync, protocol.SyncParams{Agent: benchAgent, Turn: turn, PromptChars: chars, PrefixRebuilt: s.rebuilt}, &out); err != nil {
		return nil, fmt.Errorf("concord sync: %w", err)
	}
	s.rebuilt = false
	var tr []ViewTrace
	if out.Flushed {
		s.notes = nil
	}
	var errata []string
	for _, b := range out.Blocks {
		if b.Placement == protocol.PlacementTail {
			errata = append(errata, s.ws.Neutral(b.Erratum))
			tr = append(tr, ViewTrace{Anchor: b.Anchor, Status: string(b.Status), Reason: b.Reason, Shown: TailPrefix + s.ws.Neutral(b.Erratum)})
			continue
		}
		switch b.Status {
		case protocol.DerivedStale: // a summary: as written, then its correction
			views[b.Anchor] = s.ws.Neutral(*b.Show)
		case "valid", "released":
			delete(views, b.Anchor)
		case "patched":
			views[b.Anchor] = s.render(b.Anchor, b.Sources)
		case "stale":
			views[b.Anchor] = s.render(b.Anchor, b.Sources) + "\n" + s.ws.Neutral(b.Notice)
		default: // invalid, superseded: the notice alone
			views[b.Anchor] = s.ws.Neutral(b.Notice)
		}
		tr = append(tr, ViewTrace{Anchor: b.Anchor, Status: string(b.Status), Reason: b.Reason, Shown: views[b.Anchor]})
	}
	if len(errata) > 0 {
		s.notes = append(s.notes, note{at: newest, text: strings.Join(errata, "\n")})
	}
	return tr, nil
}

// compacted tells Concord that the messages of the replaced tool calls
// were compacted into the summary message anchored at anchor.
func (s *concordSession) compacted(ctx context.Context, turn int, anchor, text string, replaced []string) (protocol.CompactedResult, error) {
	var out protocol.CompactedResult
	if err := s.c.Call(ctx, protocol.MethodCompacted, protocol.CompactedParams{Agent: benchAgent, Anchor: anchor, Text: text, Replaced: replaced, Turn: turn}, &out); err != nil {
		return out, fmt.Errorf("concord compacted: %w", err)
	}
	s.rebuilt = true
	s.notes = nil // the messages they were attached to are gone; the flush restates what holds
	return out, nil
}

// TailPrefix marks a view trace whose erratum went to the tail.
const TailPrefix = "(at the tail) "

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
		case race.ToolEdit:
			parts = append(parts, race.RenderEdit(s.ws.DisplayPath(s.rel(src.URI)), start, lines))
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
