package hook

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/concord-ctx/concord/protocol"
)

// ClaudeCode is Claude Code's hooks (@anthropic-ai/claude-code 2.1.328):
// every hook gets one JSON object on stdin with session_id, cwd,
// hook_event_name and, inside a subagent, agent_id; PostToolUse adds
// tool_name, tool_input, tool_response and tool_use_id; SessionStart adds
// source; PostCompact adds compact_summary, the summary that replaced the
// agent's earlier messages (its reads become the summary's provenance). A PostToolUse or UserPromptSubmit (or SessionStart) answer's
// hookSpecificOutput.additionalContext reaches the model in its next
// request, appended to that tool result (docs/protocol.md, "Hook
// transport").
type ClaudeCode struct{}

// ClaudeCodeRuntime is the runtime's name, in `concord hook` and in
// recognize's call.runtime.
const ClaudeCodeRuntime = "claude-code"

func (ClaudeCode) Name() string { return ClaudeCodeRuntime }

type claudeInput struct {
	commonInput
	AgentID      string          `json:"agent_id"`
	ToolName     string          `json:"tool_name"`
	ToolInput    json.RawMessage `json:"tool_input"`
	ToolResponse json.RawMessage `json:"tool_response"`
	ToolUseID    string          `json:"tool_use_id"`
	// CompactSummary is PostCompact's: the summary the compaction wrote.
	CompactSummary string `json:"compact_summary"`
}

var claudeKinds = map[string]Kind{
	"PostToolUse":      KindToolDone,
	"UserPromptSubmit": KindPrompt,
	"SessionStart":     KindSessionStart,
	"PostCompact":      KindCompacted,
	"SubagentStop":     KindSubagentStop,
	"SessionEnd":       KindSessionEnd,
}

func (ClaudeCode) Kind(event string) Kind { return claudeKinds[event] }

func (ClaudeCode) Parse(input []byte) (Event, error) {
	var in claudeInput
	if err := json.Unmarshal(input, &in); err != nil {
		return Event{}, fmt.Errorf("claude-code hook input: %w", err)
	}
	ev, err := in.event(ClaudeCode{})
	if err != nil {
		return Event{}, err
	}
	if in.AgentID != "" {
		ev.Agent = in.AgentID
	}
	ev.Summary = in.CompactSummary
	if ev.Kind == KindToolDone {
		if in.ToolName == "" || in.ToolUseID == "" {
			return Event{}, errors.New("claude-code hook input: PostToolUse without tool_name or tool_use_id")
		}
		ev.Anchor = in.ToolUseID
		// The response is the tool's structured result (Read's file with its
		// lines, Bash's stdout): recognize reads it as the call's metadata.
		ev.Call = protocol.ToolCall{Runtime: ClaudeCodeRuntime, Tool: in.ToolName, Arguments: in.ToolInput,
			Metadata: in.ToolResponse, Cwd: in.Cwd}
	}
	return ev, nil
}

// Answer is additionalContext for a tool result, a prompt or a session's start.
func (ClaudeCode) Answer(ev Event, text string) []byte {
	return contextAnswer(ev, text, KindToolDone, KindPrompt, KindSessionStart)
}
