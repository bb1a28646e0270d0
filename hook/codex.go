package hook

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/concord-ctx/concord/protocol"
)

// Codex is Codex CLI's hooks (@openai/codex 0.169.0, testdata/codex): every
// hook gets one JSON object on stdin with session_id, transcript_path (the
// session's rollout), cwd and hook_event_name; PostToolUse adds tool_name,
// tool_input, tool_response (a string, or content parts) and tool_use_id.
// A command (exec_command) arrives as tool_name "Bash", tool_input
// {"command"}, its raw output, and cwd the directory it ran in; its exit
// code is not in the input: it is read from the rollout, where Codex has
// already written the command's item_completed when the hook runs. A
// PostToolUse answer's hookSpecificOutput.additionalContext reaches the
// model in its next request, as a developer message just before that
// call's output.
type Codex struct{}

// CodexRuntime is the runtime's name, in `concord hook` and in recognize's
// call.runtime.
const CodexRuntime = "codex"

func (Codex) Name() string { return CodexRuntime }

type codexInput struct {
	commonInput
	TranscriptPath string          `json:"transcript_path"`
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"`
	ToolResponse   json.RawMessage `json:"tool_response"`
	ToolUseID      string          `json:"tool_use_id"`
}

var codexKinds = map[string]Kind{
	"PostToolUse":      KindToolDone,
	"UserPromptSubmit": KindPrompt,
	"SessionStart":     KindSessionStart,
	"PreCompact":       KindPreCompact,
	"SessionEnd":       KindSessionEnd,
}

func (Codex) Kind(event string) Kind { return codexKinds[event] }

func (Codex) Parse(input []byte) (Event, error) {
	var in codexInput
	if err := json.Unmarshal(input, &in); err != nil {
		return Event{}, fmt.Errorf("codex hook input: %w", err)
	}
	ev, err := in.event(Codex{})
	if err != nil {
		return Event{}, err
	}
	if ev.Kind != KindToolDone {
		return ev, nil
	}
	if in.ToolName == "" || in.ToolUseID == "" {
		return Event{}, errors.New("codex hook input: PostToolUse without tool_name or tool_use_id")
	}
	ev.Anchor = in.ToolUseID
	ev.Call = protocol.ToolCall{Runtime: CodexRuntime, Tool: in.ToolName, Arguments: in.ToolInput,
		Output: codexOutput(in.ToolResponse), Cwd: in.Cwd}
	if in.ToolName == "Bash" && in.TranscriptPath != "" {
		// Without it the command stays an event ("the exit code is unknown").
		ev.Call.ExitCode = codexExitCode(in.TranscriptPath, in.ToolUseID)
	}
	return ev, nil
}

// codexOutput is a tool response as text: the string it is (a command's
// output, apply_patch's report), else its JSON (view_image's image parts).
func codexOutput(resp json.RawMessage) string {
	var s string
	if json.Unmarshal(resp, &s) == nil {
		return s
	}
	return string(resp)
}

// rolloutTail bounds what is read of a rollout: the command's record was
// written just before its hook, at the end.
const rolloutTail = 8 << 20

// codexExitCode finds the exit code of the command id in the rollout at
// path: the last item_completed CommandExecution with that id; nil when
// there is none. It reads the rollout's end first, then more of it, so a
// long session's rollout costs a hook what its last records weigh.
func codexExitCode(path, id string) *int {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil
	}
	want := []byte(`"id":` + quote(id))
	for n := int64(64 << 10); ; n *= 4 {
		n = min(n, rolloutTail, st.Size())
		data := make([]byte, n)
		if _, err := f.ReadAt(data, st.Size()-n); err != nil && !errors.Is(err, io.EOF) {
			return nil
		}
		if n < st.Size() {
			// The first line may be cut: the next round reads it whole.
			if i := bytes.IndexByte(data, '\n'); i >= 0 {
				data = data[i+1:]
			}
		}
		if code, ok := findExitCode(data, want, id); ok {
			return code
		}
		if n == st.Size() || n == rolloutTail {
			return nil
		}
	}
}

// findExitCode looks for the command's item_completed in data, a run of
// whole rollout lines, the last one first.
func findExitCode(data, want []byte, id string) (*int, bool) {
	lines := bytes.Split(data, []byte("\n"))
	for i := len(lines) - 1; i >= 0; i-- {
		line := lines[i]
		if !bytes.Contains(line, want) || !bytes.Contains(line, []byte(`"CommandExecution"`)) {
			continue
		}
		var l struct {
			Type    string `json:"type"`
			Payload struct {
				Type string `json:"type"`
				Item struct {
					Type     string `json:"type"`
					ID       string `json:"id"`
					ExitCode *int   `json:"exit_code"`
				} `json:"item"`
			} `json:"payload"`
		}
		if json.Unmarshal(line, &l) == nil && l.Type == "event_msg" && l.Payload.Type == "item_completed" &&
			l.Payload.Item.Type == "CommandExecution" && l.Payload.Item.ID == id {
			return l.Payload.Item.ExitCode, true
		}
	}
	return nil, false
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Answer is additionalContext for a tool result, a prompt or a session's start.
func (Codex) Answer(ev Event, text string) []byte {
	return contextAnswer(ev, text, KindToolDone, KindPrompt, KindSessionStart)
}
