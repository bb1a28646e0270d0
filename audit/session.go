// Package audit replays finished agent sessions, read from the runtimes'
// own storage, through the same recognition (package recognize) and
// reconciliation (runtime.Manager) as `concord serve`, and reports how much
// stale context the model was sent and what Concord would have sent instead.
// A replay needs no workspace: each file is rebuilt from what the session
// itself showed and wrote (vfs.go). Nothing is ever written to the input.
package audit

import (
	"time"

	"github.com/concord-ctx/concord/recognize"
)

// Input formats.
const (
	FormatOpenHands = "openhands" // an OpenHands SDK conversation's persisted events
	FormatOpenCode  = "opencode"  // `opencode export <sessionID>` JSON
	FormatOpenAI    = "openai"    // an OpenAI-format message list (JSON or JSONL)
	FormatCodex     = "codex"     // a Codex CLI rollout (sessions/YYYY/MM/DD/rollout-*.jsonl)
)

// Session is one finished session, as a sequence of tool results and model
// calls in the order the runtime made them.
type Session struct {
	ID     string
	File   string // where it was read from
	Format string
	Steps  []Step
}

// Step is one tool result, or one model call (Model), which carried every
// step before it.
type Step struct {
	Model bool
	Time  time.Time // zero: unknown
	// Chars is what the step adds to the prompt of later calls (message
	// text, tool arguments and results), in characters.
	Chars int
	// Tool: a finished tool call (nil for a model call).
	Tool   *recognize.Call
	Anchor string // the tool call's id
	// After is the written file's whole content after the tool ran, when
	// the log keeps it (OpenHands' file_editor new_content).
	After *string
	// Forget: the runtime condensed its history; these tool calls' results
	// (and ForgetChars of prompt) left the prompt, which was rebuilt.
	Forget      []string
	ForgetChars int
	// Summary: the message that took the forgotten results' place (a
	// compaction summary, its full text), anchored at SummaryAnchor, when
	// the log keeps it ("": none). The replay reports it as compacted, so
	// the summary is tracked as a derived block built from what the
	// forgotten results showed.
	Summary       string
	SummaryAnchor string
}
