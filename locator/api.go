// Package locator decides where a line range an agent saw now lives in a
// changed text, and whether the change is small enough to patch the agent's
// copy in place. It is a pure function of (old text, new text, range): no I/O,
// no clocks, deterministic.
//
// The invariant every caller relies on: a Result whose Status is not Invalid
// carries in Text exactly the lines of the new text at Range.
//
// How a span is located:
//
//   - Lines are split on "\n" with one trailing "\r" stripped (SplitLines), so
//     CRLF, mixed endings and a missing final newline compare equal.
//   - Old text known (Locate, or Diff once and Edit.Locate per span): equal
//     texts are Unchanged at once ("hash"). Otherwise one line diff (go-diff in
//     line mode, DiffTimeout from Params, 0 = no deadline; large regions are
//     first split at lines unique to both sides, which bounds the work). A
//     span outside every hunk is Unchanged or Moved by the shift; a span a
//     hunk touches maps to the new region (replaced lines pair by position)
//     and is Patched if the locality policy calls the edit local. A span the
//     edit deleted or rewrote is looked for verbatim among the inserted lines
//     (a cut and paste); otherwise it is Invalid.
//   - Old text unknown (NewAnchor, Relocate): the span's exact text, then its
//     context on both sides, then single anchors; see Relocate.
//   - Locality (judge): token sequences of old span and new region; local when
//     they have equal length with at most max(MinSubstitutions,
//     floor(len*SubstitutionRatio)) substitutions, or when Similarity (2*LCS/T
//     over tokens, see Tokenize) is at least MinSimilarity.
//   - Ranges are 1-based inclusive. Locate does not clamp: a range outside the
//     old text is Invalid with a reason. NewAnchor clamps.
//   - Ambiguity (a span's text at several places that its context does not
//     tell apart) is Invalid, never a guess.
package locator

import "time"

// Status is the verdict on one span.
type Status string

const (
	// Unchanged: same range, same text.
	Unchanged Status = "unchanged"
	// Moved: same text, shifted to another range by edits elsewhere.
	Moved Status = "moved"
	// Patched: the span itself was edited, locally enough to rewrite in place.
	Patched Status = "patched"
	// Invalid: deleted, drifted too far, or not locatable (ambiguity included).
	Invalid Status = "invalid"
)

// Range is a 1-based, inclusive line range. The zero Range means "no lines".
type Range struct {
	Start int `json:"start"`
	End   int `json:"end"`
}

// Lines is the number of lines the range covers.
func (r Range) Lines() int {
	if r.End < r.Start {
		return 0
	}
	return r.End - r.Start + 1
}

// Params are the locality thresholds. The defaults reproduce the method's
// policy: local when equal token length with at most max(MinSubstitutions,
// floor(tokens*SubstitutionRatio)) substitutions, or similarity >= MinSimilarity.
type Params struct {
	MinSimilarity     float64       `json:"minSimilarity"`     // default 0.78
	SubstitutionRatio float64       `json:"substitutionRatio"` // default 0.2 (floor(len/5))
	MinSubstitutions  int           `json:"minSubstitutions"`  // default 2
	ContextLines      int           `json:"contextLines"`      // lines of context kept around a span, default 3
	DiffTimeout       time.Duration `json:"-"`                 // explicit so results never depend on timing; 0 = no deadline
}

// DefaultParams returns the method's thresholds.
func DefaultParams() Params {
	return Params{MinSimilarity: 0.78, SubstitutionRatio: 0.2, MinSubstitutions: 2, ContextLines: 3}
}

// Evidence explains a verdict, for logs, golden files and users tuning thresholds.
type Evidence struct {
	Method        string   `json:"method"`                  // "hash", "diff", "anchored" ("diff-coarse": patched through an approximate diff)
	Similarity    float64  `json:"similarity"`              // sequence similarity of old and new span, 0..1
	Tokens        int      `json:"tokens"`                  // token length of the old span
	Substitutions int      `json:"substitutions,omitempty"` // token substitutions when lengths are equal
	Anchors       []string `json:"anchors,omitempty"`       // which anchors located the span ("span", "before", "after"; "start"/"end" for the file's edges)
}

// Result is the verdict on one span.
type Result struct {
	Status   Status   `json:"status"`
	Range    Range    `json:"range"` // new range; zero when Invalid
	Text     string   `json:"text"`  // new text at Range, lines joined by "\n", no trailing newline; "" when Invalid
	Evidence Evidence `json:"evidence"`
	Reason   string   `json:"reason"`
	// Near, for an Invalid result only, is where the span's place now is
	// when the edit around it is known (the diff, or context found on both
	// sides): the lines that replaced it, drifted beyond a local edit. A
	// re-read notice names them instead of the old line numbers. Nil when
	// the place is unknown (ambiguous, not locatable) or the lines are gone.
	Near *Range `json:"near,omitempty"`
	// Removed, for an Invalid result only: the edit deleted the span's lines.
	Removed bool `json:"removed,omitempty"`
}

// Anchor is what is remembered of a span when the whole old text is not:
// the span's own lines plus a few lines of context on each side.
type Anchor struct {
	Range  Range    `json:"range"`           // where the span was
	Span   []string `json:"span"`            // its lines, no line terminators
	Before []string `json:"before"`          // up to ContextLines lines just before it
	After  []string `json:"after"`           // up to ContextLines lines just after it
	AtEnd  bool     `json:"atEnd,omitempty"` // the span ended the file: the file's end stands in for missing after-context
}
