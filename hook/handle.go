package hook

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/concord-ctx/concord/protocol"
)

// Core is what handling an event needs of the session: the protocol's
// methods, called in the server's process.
type Core interface {
	Recognize(ctx context.Context, p protocol.RecognizeParams) (protocol.RecognizeResult, error)
	Sync(ctx context.Context, p protocol.SyncParams) (protocol.SyncResult, error)
	Release(ctx context.Context, p protocol.ReleaseParams) (protocol.ReleaseResult, error)
	Compacted(ctx context.Context, p protocol.CompactedParams) (protocol.CompactedResult, error)
}

// CompactedAnchor names a runtime's compaction summary in the errata the
// model reads ("The summary in the compacted conversation is outdated:
// …"). One per agent: a later compaction summarizes the earlier summary
// too, and takes its place (its provenance carried over).
const CompactedAnchor = "the compacted conversation"

// Outcome is what handling an event gives: the hook's stdout, and whether
// the session ended (the server then shuts down).
type Outcome struct {
	Output     []byte
	EndSession bool
}

// Handle does what one hook event means with the session's core, in the
// server: the hook process only carries the event here and the output
// back, so the per-event work runs in a warm process (the hook's cost per
// tool call is its own start and one round trip).
func Handle(ctx context.Context, core Core, log *slog.Logger, runtime string, input []byte) (Outcome, error) {
	rt, ok := Lookup(runtime)
	if !ok {
		return Outcome{}, &InputError{fmt.Errorf("unknown runtime %q (want %s)", runtime, strings.Join(Runtimes(), ", "))}
	}
	ev, err := rt.Parse(input)
	if err != nil {
		return Outcome{}, &InputError{err}
	}
	text, err := handle(ctx, core, log.With("event", ev.Name, "agent", ev.Agent), ev)
	if err != nil {
		return Outcome{}, err
	}
	return Outcome{Output: rt.Answer(ev, text), EndSession: ev.Kind == KindSessionEnd}, nil
}

// handle returns the text for the model after ev.
func handle(ctx context.Context, core Core, log *slog.Logger, ev Event) (string, error) {
	switch ev.Kind {
	case KindToolDone:
		if _, err := core.Recognize(ctx, protocol.RecognizeParams{Agent: ev.Agent, Anchor: ev.Anchor, Call: ev.Call}); err != nil {
			if ctx.Err() != nil {
				return "", err
			}
			// Refused (a file outside the roots, a tool it cannot read):
			// nothing tracked; the sync still runs.
			log.Warn("recognize refused", "tool", ev.Call.Tool, "anchor", ev.Anchor, "error", err)
		}
		return syncErrata(ctx, core, log, ev.Agent)
	case KindPrompt:
		return syncErrata(ctx, core, log, ev.Agent)
	case KindSessionStart:
		// After a compaction the runtime says with what summary
		// (KindCompacted), which then takes the place of the agent's reads;
		// a cleared context has none.
		if ev.Source == SourceClear {
			return "", releaseAll(ctx, core, log, ev.Agent)
		}
	case KindPreCompact, KindSubagentStop:
		return "", releaseAll(ctx, core, log, ev.Agent)
	case KindCompacted:
		return "", compacted(ctx, core, log, ev.Agent, ev.Summary)
	}
	return "", nil
}

// compacted tells the session that agent's summary replaced its earlier
// tool results: the server keeps what they showed as the summary's
// provenance and releases them (derived context, docs/protocol.md
// "compacted"). A compaction without a summary releases them.
func compacted(ctx context.Context, core Core, log *slog.Logger, agent, summary string) error {
	if strings.TrimSpace(summary) == "" {
		return releaseAll(ctx, core, log, agent)
	}
	// The earlier summary is not among the replaced: the new one takes its
	// anchor, and its provenance with it.
	anchors, err := anchorsOf(ctx, core, agent, CompactedAnchor)
	if err != nil {
		return err
	}
	res, err := core.Compacted(ctx, protocol.CompactedParams{Agent: agent, Anchor: CompactedAnchor, Text: summary, Replaced: anchors})
	if err != nil {
		return fmt.Errorf("compacted: %w", err)
	}
	log.Info("compacted", "replaced", len(anchors), "released", len(res.Released), "provenance", len(res.Provenance))
	return nil
}

// anchorsOf lists the anchors of agent's blocks but except (a full sync;
// the prefix was rebuilt: the runtime just rewrote the agent's context).
func anchorsOf(ctx context.Context, core Core, agent, except string) ([]string, error) {
	res, err := core.Sync(ctx, protocol.SyncParams{Agent: agent, Full: true, PrefixRebuilt: true})
	if err != nil {
		return nil, fmt.Errorf("sync: %w", err)
	}
	seen := map[string]bool{}
	var anchors []string
	for _, v := range res.Blocks {
		if v.Anchor != "" && v.Anchor != except && !seen[v.Anchor] {
			seen[v.Anchor] = true
			anchors = append(anchors, v.Anchor)
		}
	}
	return anchors, nil
}

// syncErrata syncs agent and joins the errata of its tail views: the note
// the runtime appends after the newest tool result. Under tail placement
// each is delivered once; the runtime keeps it in the transcript.
func syncErrata(ctx context.Context, core Core, log *slog.Logger, agent string) (string, error) {
	res, err := core.Sync(ctx, protocol.SyncParams{Agent: agent})
	if err != nil {
		return "", fmt.Errorf("sync: %w", err)
	}
	var lines []string
	for _, v := range res.Blocks {
		switch {
		case v.Placement == protocol.PlacementTail && v.Erratum != "":
			lines = append(lines, v.Erratum)
		case v.Placement == "" && (v.View != "" || len(v.Sources) > 0 || v.Notice != ""):
			// An in-place view: a hook can only append, never rewrite.
			log.Debug("in-place view not applied", "anchor", v.Anchor, "status", v.Status)
		}
	}
	return strings.Join(lines, "\n"), nil
}

// releaseAll releases every block agent still has: its earlier tool
// results left its prompt (a compaction, a cleared context, a subagent
// that ended). A full sync lists them.
func releaseAll(ctx context.Context, core Core, log *slog.Logger, agent string) error {
	anchors, err := anchorsOf(ctx, core, agent, "")
	if err != nil || len(anchors) == 0 {
		return err
	}
	rel, err := core.Release(ctx, protocol.ReleaseParams{Agent: agent, Anchors: anchors})
	if err != nil {
		return fmt.Errorf("release: %w", err)
	}
	log.Info("released", "blocks", len(rel.Released))
	return nil
}

// InputError is an event the server cannot read: the hook sent what its
// runtime does not write (the protocol's invalid params).
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }
