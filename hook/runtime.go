// Package hook carries an agent runtime's hook events to one Concord session
// per runtime session: `concord hook RUNTIME` is a short-lived process per
// event (JSON on stdin, the answer on stdout) that reaches the session's
// `concord serve --socket` over a unix socket, starting it when there is
// none, and speaks the ordinary protocol to it (initialize, recognize, sync,
// release, shutdown). The session's state lives in that server only; this
// package keeps none between events. docs/protocol.md, "Hook transport", is
// the contract.
//
// What differs per runtime is small (Runtime): reading its event JSON and
// writing its answer. A new runtime is a type implementing Runtime and a
// line in the runtimes table.
package hook

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/concord-ctx/concord/protocol"
)

// Kind is what an event means to Concord.
type Kind int

const (
	// KindOther is an event Concord has nothing to do for: answered with
	// no context.
	KindOther Kind = iota
	// KindToolDone: a tool call finished (Claude Code's PostToolUse). Its
	// call is recognized, then the agent synced: what changed is the answer.
	KindToolDone
	// KindPrompt: the user submitted a prompt (UserPromptSubmit): the
	// agent is synced.
	KindPrompt
	// KindSessionStart: the session started, resumed or was rebuilt
	// (Source). The server is started early; "compact" and "clear" mean
	// the agent's earlier tool results left the prompt: they are released.
	KindSessionStart
	// KindPreCompact: the runtime is about to compact the agent's context:
	// its earlier tool results are released.
	KindPreCompact
	// KindSubagentStop: a subagent ended: its tool results are released.
	KindSubagentStop
	// KindSessionEnd: the session ended: its server is shut down.
	KindSessionEnd
	// KindCompacted: the runtime compacted the agent's context into a
	// summary (Summary): the summary takes the place of its earlier tool
	// results (compacted), and is corrected when what they showed changes.
	KindCompacted
)

var kindNames = [...]string{"other", "tool-done", "prompt", "session-start", "pre-compact", "subagent-stop", "session-end", "compacted"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind?"
}

// MainAgent names the session's main agent; a subagent is named by the
// id its runtime gives it.
const MainAgent = "main"

// Sources of KindSessionStart after which the agent's earlier tool results
// are gone from its prompt.
const (
	SourceCompact = "compact"
	SourceClear   = "clear"
)

// Event is one hook event as Concord needs it.
type Event struct {
	Kind Kind
	// Name is the runtime's own name of the event ("PostToolUse"):
	// answers carry it.
	Name    string
	Session string // the runtime's session id (never used raw in a path)
	Agent   string // MainAgent or a subagent's id
	Cwd     string // the session's working directory
	Source  string // KindSessionStart: startup, resume, clear, compact
	// Anchor is the tool call's id and Call the call as recognize takes it
	// (KindToolDone).
	Anchor string
	Call   protocol.ToolCall
	// Summary is the compaction's summary, as the model reads it
	// (KindCompacted).
	Summary string
}

// Runtime is what one agent runtime's hooks need of Concord.
type Runtime interface {
	// Name names the runtime in `concord hook NAME`, in socket names and
	// in logs ("claude-code").
	Name() string
	// Kind is what the runtime's event name means to Concord.
	Kind(event string) Kind
	// Parse reads one event from the hook's input (in the session's
	// server, Handle). An event without a session id is an error.
	Parse(input []byte) (Event, error)
	// Answer is what the hook prints on stdout for ev with text for the
	// model (errata joined by "\n"); text may be "" (nothing to say). nil
	// prints nothing.
	Answer(ev Event, text string) []byte
}

// runtimes is every runtime `concord hook` serves, by name.
var runtimes = map[string]Runtime{
	ClaudeCode{}.Name(): ClaudeCode{},
	GeminiCLI{}.Name():  GeminiCLI{},
	Codex{}.Name():      Codex{},
}

// Lookup returns the runtime named name.
func Lookup(name string) (Runtime, bool) {
	rt, ok := runtimes[name]
	return rt, ok
}

// Runtimes lists the runtimes' names, sorted.
func Runtimes() []string {
	names := make([]string, 0, len(runtimes))
	for n := range runtimes {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// commonInput is what every runtime's hook input carries (Claude Code,
// Codex and Gemini CLI name these fields alike).
type commonInput struct {
	SessionID     string `json:"session_id"`
	Cwd           string `json:"cwd"`
	HookEventName string `json:"hook_event_name"`
	Source        string `json:"source"`
}

// event is the Event these fields make for rt; an input without a session
// is refused.
func (c commonInput) event(rt Runtime) (Event, error) {
	if c.SessionID == "" {
		return Event{}, errors.New(rt.Name() + " hook input: no session_id")
	}
	return Event{Kind: rt.Kind(c.HookEventName), Name: c.HookEventName, Session: c.SessionID,
		Agent: MainAgent, Cwd: c.Cwd, Source: c.Source}, nil
}

// Peek reads what the hook process needs of an event (its session, its
// kind) and no more: the rest is the server's to read (Handle). It reads
// the fields as encoding/json would into commonInput, keys matched exactly
// (as the runtimes write them), without encoding/json's cost (scan.go).
func Peek(rt Runtime, input []byte) (Event, error) {
	var c commonInput
	fields := map[string]*string{"session_id": &c.SessionID, "cwd": &c.Cwd, "hook_event_name": &c.HookEventName, "source": &c.Source}
	var bad error
	err := objectMembers(input, func(key string, raw []byte) bool {
		dst, ok := fields[key]
		if !ok || string(raw) == "null" {
			return true
		}
		if *dst, bad = unquote(raw); bad != nil {
			bad = fmt.Errorf("%s: want a string: %w", key, bad)
			return false
		}
		return true
	})
	if err == nil {
		err = bad
	}
	if err != nil {
		return Event{}, fmt.Errorf("%s hook input: %w", rt.Name(), err)
	}
	return c.event(rt)
}

// contextAnswer is {"hookSpecificOutput": {"hookEventName": NAME,
// "additionalContext": TEXT}}, the answer all three runtimes take, for an
// event of a kind in takes; nothing when there is nothing to say.
func contextAnswer(ev Event, text string, takes ...Kind) []byte {
	if text == "" || !slices.Contains(takes, ev.Kind) {
		return nil
	}
	out, err := json.Marshal(map[string]any{"hookSpecificOutput": map[string]string{
		"hookEventName": ev.Name, "additionalContext": text}})
	if err != nil {
		return nil // strings always marshal
	}
	return append(out, '\n')
}
