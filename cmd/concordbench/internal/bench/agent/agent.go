// Package agent holds the benchmark's agents: a chat history in the
// OpenAI chat-completions shape, the tools' schemas, a deterministic
// scripted reader and a client for any OpenAI-compatible endpoint.
package agent

import (
	"context"
	"strings"

	"github.com/concord-ctx/concord/cmd/concordbench/internal/bench/tasks"
)

// Message is one chat message.
type Message struct {
	Role       string     `json:"role"` // system, user, assistant, tool
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	// Anchor is the runtime's handle of a message that is no tool result
	// (a compaction summary): Concord's views and errata name it. Not sent
	// to a model.
	Anchor string `json:"-"`
}

// ID is what Concord's views and errata name m by: its tool call, or its anchor.
func (m Message) ID() string {
	if m.ToolCallID != "" {
		return m.ToolCallID
	}
	return m.Anchor
}

// CompactionPrefix opens the message that replaces a compacted history
// (the wording of Claude Code's continuation message).
const CompactionPrefix = "This session is being continued from a previous conversation that ran out of context. The conversation is summarized below:"

// Compacted reports whether msgs carry a compaction summary.
func Compacted(msgs []Message) bool {
	for i, m := range msgs {
		if i > 1 && m.Role == "user" && strings.HasPrefix(m.Content, CompactionPrefix) {
			return true
		}
	}
	return false
}

// ToolCall is one function call an assistant message makes.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // JSON object
}

// ToolSpec describes a tool to the model.
type ToolSpec struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  map[string]any `json:"parameters"`
}

// Usage is a provider's token accounting for one call.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	CachedTokens     int `json:"cached_tokens"`
}

// Reply is one model call's result: an assistant message (tool calls, or
// content as a final answer) and, from real providers, their usage.
type Reply struct {
	Message Message
	Usage   *Usage
}

// Session answers one task, one model call at a time.
type Session interface {
	Next(ctx context.Context, msgs []Message, tools []ToolSpec) (Reply, error)
}

// Agent makes a session per task.
type Agent interface {
	Name() string
	Session(t tasks.Task) Session
}

// Tools returns the tool schemas: coding adds edit and run (the long
// workload), diff adds the diff tool.
func Tools(coding, diff bool) []ToolSpec {
	obj := func(props map[string]any, req ...string) map[string]any {
		// "required" must be a list, never null: strict providers reject null.
		return map[string]any{"type": "object", "properties": props, "required": append([]string{}, req...)}
	}
	str := func(d string) map[string]any { return map[string]any{"type": "string", "description": d} }
	num := func(d string) map[string]any { return map[string]any{"type": "integer", "description": d} }
	ts := []ToolSpec{
		{Name: "glob", Description: "List workspace files whose path matches a glob pattern (e.g. \"*\" or \"*.txt\").",
			Parameters: obj(map[string]any{"pattern": str("glob pattern")}, "pattern")},
		{Name: "grep", Description: "Search every workspace file for lines matching a regular expression (RE2). Prints path:line:text for each hit.",
			Parameters: obj(map[string]any{"pattern": str("regular expression")}, "pattern")},
		{Name: "read_file", Description: "Read a workspace file, optionally a line range. Prints N: text for each line.",
			Parameters: obj(map[string]any{"path": str("file path"), "start_line": num("first line, 1-based (optional)"), "end_line": num("last line, inclusive (optional)")}, "path")},
		{Name: "answer", Description: "Give the final answer: a short phrase (an entity, date or number), or yes/no.",
			Parameters: obj(map[string]any{"answer": str("the final answer")}, "answer")},
	}
	if coding {
		ts = append(ts,
			ToolSpec{Name: "edit", Description: "Replace old_str, which must occur exactly once in the file, by new_str. Prints a snippet of the edited lines.",
				Parameters: obj(map[string]any{"path": str("file path"), "old_str": str("the exact text to replace"), "new_str": str("the replacement")}, "path", "old_str", "new_str")},
			ToolSpec{Name: "run", Description: "Run a shell command in the workspace (tests, scripts) and print its output.",
				Parameters: obj(map[string]any{"command": str("the command")}, "command")})
	}
	if diff {
		ts = append(ts, ToolSpec{Name: "diff", Description: "Show files that changed on disk after you saw them: - what you saw, + what is there now.",
			Parameters: obj(map[string]any{})})
	}
	return ts
}

// SystemPrompt is the instruction every agent gets.
func SystemPrompt(coding, diff bool) string {
	if coding {
		s := "You are a coding agent working on the Python package in the workspace. Use glob, grep and read_file to look at the code, edit to change it, run to run its tests. " +
			"When the work is done, call answer with what the task asks you to report. Files can change while you work (the user edits them too); trust what is on disk now."
		if diff {
			s += " The diff tool shows what changed since you saw it; the answer tool may ask you to run it first."
		}
		return s
	}
	s := "You answer a question using only the files in a workspace (one file per encyclopedia paragraph, one sentence per line). " +
		"Use grep, glob and read_file to find the evidence, then call answer with a short answer: a name, date or number from the files, or yes/no. " +
		"Files can change while you work; trust what is on disk now."
	if diff {
		s += " The diff tool shows what changed since you saw it; the answer tool may ask you to run it first."
	}
	return s
}

// UserPrompt states the task.
func UserPrompt(t tasks.Task) string { return "Question: " + t.Question }
