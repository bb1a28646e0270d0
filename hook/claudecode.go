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
// source. A PostToolUse or UserPromptSubmit (or SessionStart) answer's
// hookSpecificOutput.additionalContext reaches the model in its next
// request, appended to that tool result (docs/protocol.md, "Hook
// transport").
type ClaudeCode struct{}

// ClaudeCodeRuntime is the runtime's name, in `concord hook` and in
// recognize's call.runtime.
const ClaudeCodeRuntime = "claude-code"

func (ClaudeCode) Name() string { return ClaudeCodeRuntime }

type claudeInput struct {
	SessionID     string          `json:"session_id"`
	Cwd           string          `json:"cwd"`
	HookEventName string          `json:"hook_event_name"`
	AgentID       string          `json:"agent_id"`
	Source        string          `json:"source"`
	ToolName      string          `json:"tool_name"`
	ToolInput     json.RawMessage `json:"tool_input"`
	ToolResponse  json.RawMessage `json:"tool_response"`
	ToolUseID     string          `json:"tool_use_id"`
}

var claudeKinds = map[string]Kind{
	"PostToolUse":      KindToolDone,
	"UserPromptSubmit": KindPrompt,
	"SessionStart":     KindSessionStart,
	"PreCompact":       KindPreCompact,
	"SubagentStop":     KindSubagentStop,
	"SessionEnd":       KindSessionEnd,
}

func (ClaudeCode) Parse(input []byte) (Event, error) {
	var in claudeInput
	if err := json.Unmarshal(input, &in); err != nil {
		return Event{}, fmt.Errorf("claude-code hook input: %w", err)
	}
	if in.SessionID == "" {
		return Event{}, errors.New("claude-code hook input: no session_id")
	}
	ev := Event{Kind: claudeKinds[in.HookEventName], Name: in.HookEventName, Session: in.SessionID,
		Agent: MainAgent, Cwd: in.Cwd, Source: in.Source}
	if in.AgentID != "" {
		ev.Agent = in.AgentID
	}
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

// Answer is {"hookSpecificOutput": {"hookEventName": NAME,
// "additionalContext": TEXT}} for the events that take context; nothing
// when there is nothing to say.
func (ClaudeCode) Answer(ev Event, text string) []byte {
	if text == "" {
		return nil
	}
	switch ev.Kind {
	case KindToolDone, KindPrompt, KindSessionStart:
	default:
		return nil
	}
	out, err := json.Marshal(map[string]any{"hookSpecificOutput": map[string]string{
		"hookEventName": ev.Name, "additionalContext": text}})
	if err != nil {
		return nil // strings always marshal
	}
	return append(out, '\n')
}
