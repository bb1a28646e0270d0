package hook

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/concord-ctx/concord/protocol"
)

// GeminiCLI is Gemini CLI's hooks (@google/gemini-cli 0.61.0; inputs
// captured in testdata/gemini/hooks): every hook gets session_id,
// transcript_path, cwd, hook_event_name and timestamp; AfterTool adds
// tool_name, tool_input and tool_response ({llmContent, returnDisplay,
// error}), and no call id; SessionStart adds source (startup, resume,
// clear). An AfterTool or BeforeAgent answer's
// hookSpecificOutput.additionalContext reaches the model in its next
// request: AfterTool's inside that tool's functionResponse output, as
// "\n\n<hook_context>TEXT</hook_context>".
//
// PreCompress is not a compaction: 0.61.0 fires it (trigger "auto") before
// every model call, compressed or not, so it releases nothing.
type GeminiCLI struct{}

// GeminiCLIRuntime is the runtime's name, in `concord hook` and in
// recognize's call.runtime.
const GeminiCLIRuntime = "gemini-cli"

func (GeminiCLI) Name() string { return GeminiCLIRuntime }

type geminiInput struct {
	commonInput
	Timestamp    string          `json:"timestamp"`
	ToolName     string          `json:"tool_name"`
	ToolInput    json.RawMessage `json:"tool_input"`
	ToolResponse struct {
		LLMContent json.RawMessage `json:"llmContent"`
		Error      json.RawMessage `json:"error"`
	} `json:"tool_response"`
}

var geminiKinds = map[string]Kind{
	"AfterTool":    KindToolDone,
	"BeforeAgent":  KindPrompt,
	"SessionStart": KindSessionStart,
	"SessionEnd":   KindSessionEnd,
}

func (GeminiCLI) Kind(event string) Kind { return geminiKinds[event] }

func (GeminiCLI) Parse(input []byte) (Event, error) {
	var in geminiInput
	if err := json.Unmarshal(input, &in); err != nil {
		return Event{}, fmt.Errorf("gemini-cli hook input: %w", err)
	}
	ev, err := in.event(GeminiCLI{})
	if err != nil {
		return Event{}, err
	}
	if ev.Kind != KindToolDone {
		return ev, nil
	}
	if in.ToolName == "" {
		return Event{}, errors.New("gemini-cli hook input: AfterTool without tool_name")
	}
	// llmContent is the text the model is sent; a non-text result (an image's inline data)
	// leaves it empty, and recognize then finds nothing to track.
	var out string
	_ = json.Unmarshal(in.ToolResponse.LLMContent, &out)
	failed := len(in.ToolResponse.Error) > 0 && string(in.ToolResponse.Error) != "null"
	ev.Anchor = geminiAnchor(in)
	ev.Call = protocol.ToolCall{Runtime: GeminiCLIRuntime, Tool: in.ToolName, Arguments: in.ToolInput,
		Output: out, Cwd: in.Cwd, Error: failed}
	return ev, nil
}

// geminiAnchor names a tool call for the errata the model reads: Gemini CLI's hooks carry no
// call id, so the tool, what it was called on and when ("read_file config.yaml at
// 09:20:14.902"; the time tells apart two calls on the same file).
func geminiAnchor(in geminiInput) string {
	var args map[string]any
	_ = json.Unmarshal(in.ToolInput, &args)
	on := ""
	for _, k := range []string{"file_path", "pattern", "command", "dir_path"} {
		if s, ok := args[k].(string); ok && s != "" {
			on = s
			break
		}
	}
	if filepath.IsAbs(on) && in.Cwd != "" {
		if rel, err := filepath.Rel(in.Cwd, on); err == nil && !strings.HasPrefix(rel, "..") {
			on = rel
		}
	}
	if r := []rune(on); len(r) > 60 {
		on = string(r[:59]) + "…"
	}
	at := in.Timestamp
	if t, err := time.Parse(time.RFC3339Nano, in.Timestamp); err == nil {
		at = t.UTC().Format("15:04:05.000")
	}
	name := in.ToolName
	if on != "" {
		name += " " + on
	}
	return name + " at " + at
}

// Answer is additionalContext for AfterTool and BeforeAgent.
func (GeminiCLI) Answer(ev Event, text string) []byte {
	return contextAnswer(ev, text, KindToolDone, KindPrompt)
}
