package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/concord-ctx/concord/runtime"
)

func (s *Server) observe(ctx context.Context, raw *json.RawMessage) (any, error) {
	var p ObserveParams
	if err := decodeParams(raw, &p); err != nil {
		return nil, err
	}
	if err := requireText(raw, p.Kind); err != nil {
		return nil, err
	}
	core, err := s.session()
	if err != nil {
		return nil, err
	}
	o := runtime.Observation{Agent: p.Agent, Turn: p.Turn, Anchor: p.Anchor, Kind: runtime.Kind(p.Kind), Policy: p.Policy.core()}
	if o.Kind == "" {
		o.Kind = runtime.Snapshot
	}
	for _, src := range p.Sources {
		o.Sources = append(o.Sources, runtime.SourceRef{URI: src.URI, Range: src.Range.core(), Text: src.Text, Version: src.Version})
	}
	res, err := core.Observe(ctx, o)
	if err != nil {
		return nil, err
	}
	return ObserveResult{Block: res.Block, Status: string(res.Status), Superseded: nonNil(res.Superseded)}, nil
}

func (p *ObserveParams) validate() error {
	if p.Agent == "" {
		return invalidField("agent", "required")
	}
	if p.Turn < 0 {
		return invalidField("turn", "must be >= 0")
	}
	switch runtime.Kind(p.Kind) {
	case "", runtime.Snapshot, runtime.Event:
	default:
		return invalidField("kind", "must be snapshot or event, not %q", p.Kind)
	}
	if len(p.Sources) == 0 && runtime.Kind(p.Kind) != runtime.Event {
		return invalidField("sources", "required: at least one source")
	}
	for i := range p.Sources {
		if err := p.Sources[i].validate(fmt.Sprintf("sources[%d]", i)); err != nil {
			return err
		}
	}
	if p.Policy != nil {
		return p.Policy.validate("policy")
	}
	return nil
}

func (src *Source) validate(field string) error {
	if err := validateURI(field+".uri", src.URI); err != nil {
		return err
	}
	if r := src.Range; r != nil {
		if r.Start < 1 {
			return invalidField(field+".range.start", "must be >= 1 (lines are 1-based)")
		}
		if r.End == 0 { // absent: 0 is never a valid end
			return invalidField(field+".range.end", "required: the last line read (inclusive, >= start)")
		}
		if r.End < r.Start {
			return invalidField(field+".range.end", "must be >= start (%d)", r.Start)
		}
	}
	if scheme(src.URI) != "file" && src.Version == "" {
		return invalidField(field+".version", "required for keyed (non-file) sources")
	}
	return nil
}

// requireText refuses a snapshot source without "text" (absent or null):
// the server checks what the tool showed against the source, so a missing
// text would make every such block invalid without a word. "" is a valid
// text (an empty file or range). Events need no text.
func requireText(raw *json.RawMessage, kind string) error {
	if runtime.Kind(kind) == runtime.Event || raw == nil {
		return nil
	}
	var p struct {
		Sources []map[string]json.RawMessage `json:"sources"`
	}
	if json.Unmarshal(*raw, &p) != nil {
		return nil // decodeParams already accepted it; nothing more to learn
	}
	for i, src := range p.Sources {
		if t, ok := src["text"]; !ok || string(t) == "null" {
			return invalidField(fmt.Sprintf("sources[%d].text", i), "required: the lines as the tool showed them, joined by \"\\n\" (\"\" for empty content)")
		}
	}
	return nil
}

func validateURI(field, uri string) error {
	if uri == "" {
		return invalidField(field, "required")
	}
	if scheme(uri) == "" {
		return invalidField(field, "must be a URI with a scheme (file:///abs/path, res://…), not %q", clip(uri, 80))
	}
	return nil
}

// scheme returns the URI's scheme, or "" when it has none.
func scheme(uri string) string {
	i := strings.IndexByte(uri, ':')
	if i <= 0 {
		return ""
	}
	for j, c := range uri[:i] {
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		if !letter && (j == 0 || !(c >= '0' && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return ""
		}
	}
	return strings.ToLower(uri[:i])
}

func (r *Range) core() *runtime.Range {
	if r == nil {
		return nil
	}
	return &runtime.Range{Start: r.Start, End: r.End}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
