package rpc

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/concord-ctx/concord/protocol"
	"github.com/concord-ctx/concord/recognize"
)

// recognized keeps, per block registered by recognize, how its tool showed
// it, so sync can render the block's view in the tool's own format.
type recognized struct {
	mu      sync.Mutex
	byBlock map[string]recognize.Result
}

func (rc *recognized) put(block string, res recognize.Result) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.byBlock == nil {
		rc.byBlock = map[string]recognize.Result{}
	}
	rc.byBlock[block] = res
}

func (rc *recognized) get(block string) (recognize.Result, bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	res, ok := rc.byBlock[block]
	return res, ok
}

func (rc *recognized) drop(blocks []string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, b := range blocks {
		delete(rc.byBlock, b)
	}
}

// recognize decides what a tool call showed (package recognize, reading
// the files as they are now), reports what it wrote as sourceChanged and
// registers what it showed through observe, and answers what it did.
func (s *Server) recognize(ctx context.Context, raw *params) (any, error) {
	p, err := paramsOf[protocol.RecognizeParams](raw)
	if err != nil {
		return nil, err
	}
	if !recognize.Known(p.Call.Runtime) {
		return nil, invalidField("call.runtime", "must be one of %s", strings.Join(recognize.Runtimes(), ", "))
	}
	if p.Call.Tool == "" {
		return nil, invalidField("call.tool", "required")
	}
	core, err := s.session()
	if err != nil {
		return nil, err
	}
	call := recognize.Call{Runtime: p.Call.Runtime, Tool: p.Call.Tool, Args: p.Call.Arguments, Output: p.Call.Output,
		ExitCode: p.Call.ExitCode, Cwd: p.Call.Cwd, Truncated: p.Call.Truncated, Error: p.Call.Error, Metadata: p.Call.Metadata}
	res, err := recognize.Recognize(ctx, call, recognize.OS{})
	if err != nil {
		return nil, invalidField("call.arguments", "%v", err)
	}
	out := protocol.RecognizeResult{Kind: string(res.Kind), Format: res.Format, Reason: res.Reason, Superseded: []string{}}
	for _, w := range res.Writes {
		uri := fileURI(w)
		changed, err := core.SourceChanged(ctx, protocol.SourceChangedParams{URI: uri, Agent: p.Agent, Anchor: p.Anchor})
		if err != nil {
			return nil, fmt.Errorf("recognize %s: report the write of %s: %w", p.Anchor, w, err)
		}
		out.Writes = append(out.Writes, uri)
		out.Changed = append(out.Changed, changed.Blocks...)
	}
	obs := protocol.ObserveParams{Agent: p.Agent, Turn: p.Turn, Anchor: p.Anchor, Policy: p.Policy, Sources: []protocol.Source{}}
	switch res.Kind {
	case recognize.KindRead, recognize.KindListing, recognize.KindQuery:
		obs.Kind = protocol.Snapshot
		for _, part := range res.Parts {
			obs.Sources = append(obs.Sources, source(part))
		}
	case recognize.KindWrite:
		return out, nil // nothing shown: the write is all there is
	default:
		obs.Kind = protocol.Event
	}
	reg, err := core.Observe(ctx, obs)
	if err != nil {
		return nil, fmt.Errorf("recognize %s: %w", p.Anchor, err)
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
	if reg.Block != "" && res.Renders() {
		s.rec.put(reg.Block, res)
	}
	return out, nil
}

// source is a recognized part as an observe source.
func source(p recognize.Part) protocol.Source {
	src := protocol.Source{URI: p.URI, Text: p.Text}
	if src.URI == "" {
		src.URI = fileURI(p.Path)
	}
	if !p.Whole() {
		src.Range = &protocol.Range{Start: p.Start, End: p.End}
	}
	return src
}

func fileURI(path string) string { return (&url.URL{Scheme: "file", Path: path}).String() }

// syncViews is sync, with each in-place view of a block registered by
// recognize rendered in its tool's format.
func (s *Server) syncViews(ctx context.Context, raw *params) (any, error) {
	p, err := paramsOf[protocol.SyncParams](raw)
	if err != nil {
		return nil, err
	}
	core, err := s.session()
	if err != nil {
		return nil, err
	}
	res, err := syncNonNil(core, ctx, p)
	if err != nil {
		return nil, err
	}
	var gone []string
	for i := range res.Blocks {
		v := &res.Blocks[i]
		if v.Status == protocol.Released || v.Status == protocol.Superseded {
			gone = append(gone, v.Block)
			continue
		}
		rec, ok := s.rec.get(v.Block)
		if !ok || v.Placement != "" || len(v.Sources) == 0 {
			continue
		}
		parts := make([]recognize.Part, len(v.Sources))
		for k, src := range v.Sources {
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
		v.View = rec.Render(parts)
	}
	s.rec.drop(gone)
	return res, nil
}
