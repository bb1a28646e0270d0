package main

import (
	"fmt"
	"strings"
	"unicode"
)

// bindingUses names what the bindings use of the protocol: constants, and
// types (each with the types it refers to). Both bindings get this same
// subset, so they keep one vocabulary; schema.json keeps everything.
var bindingUses = []string{
	"Version", "MethodInitialize", "MethodObserve", "MethodSourceChanged", "MethodSync", "MethodRelease",
	"MethodStats", "MethodRecognize", "MethodCompacted", "MethodShutdown", "MethodExit",
	"CodeInternalError", "CodeMethodNotFound", "CodeOutsideRoots", "CodeUnsupportedProto",
	"BindingMaxRestarts", "BindingBackoffMs", "BindingRequestTimeoutMs", "BindingStartTimeoutMs",
	"InitializeParams", "InitializeResult", "ObserveParams", "ObserveResult", "SourceChangedParams",
	"SourceChangedResult", "SyncParams", "SyncResult", "ReleaseParams", "ReleaseResult", "StatsResult",
	"RecognizeParams", "RecognizeResult", "CompactedParams", "CompactedResult", "Error",
}

// forBindings is doc cut to bindingUses, in the same order.
func forBindings(doc *Document) (*Document, error) {
	defs := map[string]*Schema{}
	for _, d := range doc.Defs {
		defs[d.Name] = d.Schema
	}
	consts := map[string]bool{}
	for _, c := range doc.Consts {
		consts[c.Name] = true
	}
	keep := map[string]bool{}
	var visit func(s *Schema)
	visit = func(s *Schema) {
		if s == nil {
			return
		}
		if n := refName(s.Ref); s.Ref != "" && !keep[n] {
			keep[n] = true
			visit(defs[n])
		}
		visit(s.Items)
		visit(s.AdditionalProperties)
		visit(s.PropertyNames)
		for _, a := range s.AnyOf {
			visit(a)
		}
		if s.Properties != nil {
			for _, p := range *s.Properties {
				visit(p.Schema)
			}
		}
	}
	for _, name := range bindingUses {
		if n, ok := renames[name]; ok {
			name = n
		}
		switch {
		case defs[name] != nil:
			visit(&Schema{Ref: "#/$defs/" + name})
		case consts[name]:
			keep[name] = true
		default:
			return nil, fmt.Errorf("bindingUses names %s, which package protocol does not define", name)
		}
	}
	out := *doc
	out.Defs, out.Consts = nil, nil
	for _, d := range doc.Defs {
		if keep[d.Name] {
			out.Defs = append(out.Defs, d)
		}
	}
	for _, c := range doc.Consts {
		if keep[c.Name] {
			out.Consts = append(out.Consts, c)
		}
	}
	return &out, nil
}

// oneLine is a description's first sentence (or line), for a one-line doc.
func oneLine(text string) string {
	if i := strings.Index(text, ".\n"); i >= 0 {
		text = text[:i+1]
	}
	text = strings.Join(strings.Fields(text), " ")
	for i := 0; i+2 < len(text); i++ { // ". " before a capital ends it ("e.g. x" does not)
		if text[i] == '.' && text[i+1] == ' ' && unicode.IsUpper(rune(text[i+2])) {
			return text[:i+1]
		}
	}
	return text
}

// pack joins items with sep into lines of at most width characters (an
// item longer than that gets a line of its own): the bindings' wire files
// are compact; the fields' docs are in protocol.go and schema.json.
func pack(items []string, sep string, width int) []string {
	var lines []string
	cur := ""
	for _, it := range items {
		switch {
		case cur == "":
			cur = it
		case len(cur)+len(sep)+len(it) <= width:
			cur += sep + it
		default:
			lines = append(lines, cur)
			cur = it
		}
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}
