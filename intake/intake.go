// Package intake is the one path from a finished tool call to the context
// manager: package recognize decides what the call showed and wrote, the
// writes are reported (sourceChanged, with the call as anchor) and what it
// showed is registered as one block, whose renderer the core keeps with the
// block (runtime.View). The server's recognize method (and through it every
// binding and hook) and the audit's replay of finished sessions all come in
// here; nothing outside the core keeps per-block state.
package intake

import (
	"context"
	"fmt"
	"net/url"
	"strings"

	"github.com/concord-ctx/concord/protocol"
	"github.com/concord-ctx/concord/recognize"
	"github.com/concord-ctx/concord/runtime"
)

// Core is what the intake needs of the context manager; *runtime.Manager
// satisfies it.
type Core interface {
	SourceChanged(ctx context.Context, p protocol.SourceChangedParams) (protocol.SourceChangedResult, error)
	ObserveView(ctx context.Context, p protocol.ObserveParams, v runtime.View) (protocol.ObserveResult, error)
}

// Seen is told of each call once it is recognized, before its writes are
// reported and what it showed is registered: the audit's replay rebuilds
// its virtual workspace from it. An error fails the call.
type Seen func(ctx context.Context, call recognize.Call, res recognize.Result) error

// Intake turns tool calls into blocks of one core.
type Intake struct {
	core  Core
	files recognize.Files
	seen  Seen
}

// New returns the intake into core, reading the workspace through files
// (recognize.OS for a server; the audit's virtual files for a replay).
// seen may be nil.
func New(core Core, files recognize.Files, seen Seen) *Intake {
	return &Intake{core: core, files: files, seen: seen}
}

// Recognize decides what p's call showed, reports what it wrote and
// registers what it showed (docs/protocol.md, "recognize"). A malformed
// call is a *protocol.FieldError naming the field.
func (in *Intake) Recognize(ctx context.Context, p protocol.RecognizeParams) (protocol.RecognizeResult, error) {
	if !recognize.Known(p.Call.Runtime) {
		return protocol.RecognizeResult{}, protocol.FieldErrorf("call.runtime", "must be one of %s", strings.Join(recognize.Runtimes(), ", "))
	}
	if p.Call.Tool == "" {
		return protocol.RecognizeResult{}, protocol.FieldErrorf("call.tool", "required")
	}
	call := callOf(p.Call)
	res, err := recognize.Recognize(ctx, call, in.files)
	if err != nil {
		if ctx.Err() != nil {
			return protocol.RecognizeResult{}, ctx.Err()
		}
		return protocol.RecognizeResult{}, protocol.FieldErrorf("call.arguments", "%v", err)
	}
	if in.seen != nil {
		if err := in.seen(ctx, call, res); err != nil {
			return protocol.RecognizeResult{}, fmt.Errorf("recognize %s: %w", p.Anchor, err)
		}
	}
	out := protocol.RecognizeResult{Kind: string(res.Kind), Format: res.Format, Reason: res.Reason, Superseded: []string{}}
	for _, w := range res.Writes {
		uri := FileURI(w)
		changed, err := in.core.SourceChanged(ctx, protocol.SourceChangedParams{URI: uri, Agent: p.Agent, Anchor: p.Anchor})
		if err != nil {
			return protocol.RecognizeResult{}, fmt.Errorf("recognize %s: report the write of %s: %w", p.Anchor, w, err)
		}
		out.Writes = append(out.Writes, uri)
		out.Changed = append(out.Changed, changed.Blocks...)
	}
	obs := protocol.ObserveParams{Agent: p.Agent, Turn: p.Turn, Anchor: p.Anchor, Policy: p.Policy, Sources: []protocol.Source{}}
	var view runtime.View
	switch res.Kind {
	case recognize.KindRead, recognize.KindListing, recognize.KindQuery:
		obs.Kind = protocol.Snapshot
		for _, part := range res.Parts {
			obs.Sources = append(obs.Sources, Source(part))
		}
		view = viewOf{res.Renderer()}
	case recognize.KindWrite:
		return out, nil // nothing shown: the write is all there is
	default:
		obs.Kind = protocol.Event
	}
	reg, err := in.core.ObserveView(ctx, obs, view)
	if err != nil {
		return protocol.RecognizeResult{}, fmt.Errorf("recognize %s: %w", p.Anchor, err)
	}
	out.Block, out.Status = reg.Block, reg.Status
	if reg.Superseded != nil {
		out.Superseded = reg.Superseded
	}
	if obs.Kind == protocol.Snapshot {
		for _, src := range obs.Sources {
			out.Sources = append(out.Sources, protocol.SourceRef{URI: src.URI, Range: src.Range})
		}
	}
	return out, nil
}

// callOf is the wire's tool call as recognize takes it.
func callOf(c protocol.ToolCall) recognize.Call {
	return recognize.Call{Runtime: c.Runtime, Tool: c.Tool, Args: c.Arguments, Output: c.Output,
		ExitCode: c.ExitCode, Cwd: c.Cwd, Truncated: c.Truncated, Error: c.Error, Metadata: c.Metadata}
}

// Source is a recognized part as an observe source: a file's window (its
// path as a file URI), or a listing or query source by its URI.
func Source(p recognize.Part) protocol.Source {
	src := protocol.Source{URI: p.URI, Text: p.Text}
	if src.URI == "" {
		src.URI = FileURI(p.Path)
	}
	if !p.Whole() {
		src.Range = &protocol.Range{Start: p.Start, End: p.End}
	}
	return src
}

// FileURI is the file URI of an absolute path.
func FileURI(path string) string { return (&url.URL{Scheme: "file", Path: path}).String() }

// viewOf renders a block's sources through its tool's renderer.
type viewOf struct{ r recognize.Renderer }

func (v viewOf) Render(srcs []protocol.Source) (string, bool) {
	parts := make([]recognize.Part, len(srcs))
	for k, src := range srcs {
		parts[k] = recognize.Part{Text: src.Text}
		if u, err := url.Parse(src.URI); err == nil {
			parts[k].Path = u.Path
		}
		if src.Range != nil {
			parts[k].Start, parts[k].End = src.Range.Start, src.Range.End
		}
		if src.TotalLines != nil {
			parts[k].Total = *src.TotalLines
		}
	}
	return v.r.Render(parts)
}

