package runtime

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/concord-ctx/concord/protocol"
)

// Request validation: the one place the rules of docs/protocol.md are
// checked, each error naming the wire field ("sources[1].range.end").
// What JSON types already refuse (a string for a number) is the decoder's.

func validateObservation(obs *protocol.ObserveParams) error {
	if obs.Agent == "" {
		return fieldErr("agent", "required")
	}
	if obs.Turn < 0 {
		return fieldErr("turn", "must be >= 0")
	}
	switch obs.Kind {
	case "":
		obs.Kind = protocol.Snapshot
	case protocol.Snapshot, protocol.Event:
	default:
		return fieldErr("kind", "must be snapshot or event, not %q", obs.Kind)
	}
	if len(obs.Sources) == 0 && obs.Kind != protocol.Event {
		return fieldErr("sources", "required: at least one source")
	}
	for i := range obs.Sources {
		if err := validateSource(fmt.Sprintf("sources[%d]", i), &obs.Sources[i]); err != nil {
			return err
		}
	}
	return ValidatePolicy("policy", obs.Policy)
}

func validateSource(field string, src *protocol.Source) error {
	if err := validateURI(field+".uri", src.URI); err != nil {
		return err
	}
	if r := src.Range; r != nil {
		if r.Start < 1 {
			return fieldErr(field+".range.start", "must be >= 1 (lines are 1-based)")
		}
		if r.End == 0 { // absent: 0 is never a valid end
			return fieldErr(field+".range.end", "required: the last line read (inclusive, >= start)")
		}
		if r.End < r.Start {
			return fieldErr(field+".range.end", "must be >= start (%d)", r.Start)
		}
	}
	return nil
}

func validateURI(field, uri string) error {
	if uri == "" {
		return fieldErr(field, "required")
	}
	if scheme(uri) == "" {
		return fieldErr(field, "must be a URI with a scheme (file:///abs/path, res://…), not %q", clip(uri, 80))
	}
	return nil
}

func validateSync(req protocol.SyncParams) error {
	if req.Agent == "" {
		return fieldErr("agent", "required")
	}
	if req.Turn < 0 {
		return fieldErr("turn", "must be >= 0")
	}
	if req.PromptChars < 0 {
		return fieldErr("promptChars", "must be >= 0")
	}
	return nil
}

func validateRelease(req protocol.ReleaseParams) error {
	if len(req.Blocks) == 0 && len(req.Anchors) == 0 {
		return fieldErr("blocks", "required: blocks or anchors (with agent)")
	}
	if len(req.Anchors) > 0 && req.Agent == "" {
		return fieldErr("agent", "required with anchors")
	}
	return nil
}

// scheme returns the URI's lower-cased scheme, or "" when it has none.
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

// clip shortens s to n bytes for an error message, never cutting a character.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
