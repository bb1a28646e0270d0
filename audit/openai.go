package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/concord-ctx/concord/recognize"
)

// An OpenAI-format session: a chat-completions message list.
//
//	[{"role":"user","content":"..."},
//	 {"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"read","arguments":"{...}"}}]},
//	 {"role":"tool","tool_call_id":"c1","content":"..."}, ...]
//
// or {"id":..., "runtime":..., "messages":[...]} (one session), as JSON, or
// as JSONL with one message a line. Each assistant message is one model
// call, which carried every message before it. Tool names are taken as
// OpenHands' or OpenCode's (by name, or the object's "runtime"); a tool
// message may carry "exitCode", "cwd", "error" and "metadata" as the
// runtime had them.
type oaMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCalls  []oaToolCall    `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
	Name       string          `json:"name"`
	ExitCode   *int            `json:"exitCode"`
	Cwd        string          `json:"cwd"`
	Error      bool            `json:"error"`
	Metadata   json.RawMessage `json:"metadata"`
}

type oaToolCall struct {
	ID       string `json:"id"`
	Function struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	} `json:"function"`
}

type oaSession struct {
	ID       string      `json:"id"`
	Runtime  string      `json:"runtime"`
	Messages []oaMessage `json:"messages"`
}

// openhandsTools and opencodeTools tell a message list's runtime by tool name.
var (
	openhandsTools = map[string]bool{"file_editor": true, "str_replace_editor": true, "planning_file_editor": true,
		"terminal": true, "execute_bash": true}
	opencodeTools = map[string]bool{"read": true, "edit": true, "write": true, "grep": true, "glob": true, "bash": true}
)

// parseOpenAI reads an OpenAI-format file (JSON or JSONL).
func parseOpenAI(file string, data []byte) (*Session, error) {
	var sess oaSession
	trim := bytes.TrimSpace(data)
	switch {
	case len(trim) == 0:
		return nil, errors.New("empty file")
	case trim[0] == '[':
		if err := json.Unmarshal(trim, &sess.Messages); err != nil {
			return nil, fmt.Errorf("not a message list: %w", err)
		}
	case json.Valid(trim):
		if err := json.Unmarshal(trim, &sess); err != nil {
			return nil, fmt.Errorf("not a session object: %w", err)
		}
		if sess.Messages == nil {
			return nil, errors.New("a JSON object without \"messages\"")
		}
	default:
		for n, line := range bytes.Split(trim, []byte("\n")) {
			line = bytes.TrimSpace(line)
			if len(line) == 0 {
				continue
			}
			var m oaMessage
			if err := json.Unmarshal(line, &m); err != nil {
				return nil, fmt.Errorf("line %d: %w", n+1, err)
			}
			sess.Messages = append(sess.Messages, m)
		}
	}
	return sess.steps(file)
}

func (sess *oaSession) steps(file string) (*Session, error) {
	s := &Session{ID: sess.ID, File: file, Format: FormatOpenAI}
	if s.ID == "" {
		s.ID = baseName(file)
	}
	calls := map[string]oaToolCall{}
	for i, m := range sess.Messages {
		text := contentText(m.Content)
		switch m.Role {
		case "assistant":
			chars := len(text)
			for _, tc := range m.ToolCalls {
				calls[tc.ID] = tc
				chars += len(tc.Function.Name) + len(tc.Function.Arguments)
			}
			s.Steps = append(s.Steps, Step{Model: true}, Step{Chars: chars})
		case "tool":
			tc, ok := calls[m.ToolCallID]
			if !ok {
				return nil, fmt.Errorf("message %d: a tool result for %q, which no assistant message called", i+1, m.ToolCallID)
			}
			args := unquoteArgs(tc.Function.Arguments)
			call := &recognize.Call{Runtime: sess.Runtime, Tool: tc.Function.Name, Args: args, Output: text,
				ExitCode: m.ExitCode, Cwd: m.Cwd, Error: m.Error, Metadata: m.Metadata}
			if call.Runtime == "" {
				call.Runtime = runtimeOf(tc.Function.Name)
			}
			if call.Runtime == recognize.OpenHands && ohTerminals[call.Tool] && m.ExitCode == nil {
				openhandsTerminal(call)
			}
			st := Step{Anchor: m.ToolCallID, Chars: len(text)}
			if call.Runtime != "" {
				st.Tool = call
			}
			s.Steps = append(s.Steps, st)
		case "user", "system", "developer":
			s.Steps = append(s.Steps, Step{Chars: len(text)})
		case "":
			return nil, fmt.Errorf("message %d: no role", i+1)
		}
	}
	return s, nil
}

var ohTerminals = map[string]bool{"terminal": true, "execute_bash": true, "bash": true}

func runtimeOf(tool string) string {
	switch {
	case openhandsTools[tool]:
		return recognize.OpenHands
	case opencodeTools[tool]:
		return recognize.OpenCode
	}
	return ""
}

// unquoteArgs: OpenAI sends arguments as a JSON string holding an object.
func unquoteArgs(raw json.RawMessage) json.RawMessage {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return json.RawMessage(s)
	}
	return raw
}

// contentText is a message content's text: a string, or text parts.
func contentText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}

// OpenHands' terminal shows the model its output with the command's
// metadata around it (openhands-tools 1.58.2, TerminalObservation.
// to_llm_content): prefix + output + "\n[The command completed with exit
// code N.]" + "\n[Current working directory: D]" + "\n[Python interpreter:
// P]" + "\n[Command finished with exit code N]". The binding hands
// recognize the output alone, with the exit code and directory beside it.
var (
	ohExitDone  = lazyRegexp(`\n\[The command completed with exit code (-?\d+)\.[^\]\n]*\]$`)
	ohExitFinal = lazyRegexp(`\n\[Command finished with exit code (-?\d+)\]$`)
	ohPython    = lazyRegexp(`\n\[Python interpreter: [^\]\n]*\]$`)
	ohCwd       = lazyRegexp(`\n\[Current working directory: ([^\]\n]*)\]$`)
)

const ohCutPrefix = "[Previous command outputs are truncated."

// openhandsTerminal takes the metadata off a terminal result as the model
// saw it.
func openhandsTerminal(call *recognize.Call) {
	out := call.Output
	var exit *int
	take := func(re *regexp.Regexp) string {
		if m := re.FindStringSubmatchIndex(out); m != nil {
			v := ""
			if len(m) > 2 {
				v = out[m[2]:m[3]]
			}
			out = out[:m[0]]
			return v
		}
		return ""
	}
	if v := take(ohExitFinal()); v != "" {
		n, _ := strconv.Atoi(v)
		exit = &n
	}
	take(ohPython())
	if cwd := take(ohCwd()); cwd != "" && call.Cwd == "" {
		call.Cwd = cwd
	}
	if v := take(ohExitDone()); v != "" && exit == nil {
		n, _ := strconv.Atoi(v)
		exit = &n
	}
	if call.ExitCode == nil {
		call.ExitCode = exit
	}
	if strings.HasPrefix(out, ohCutPrefix) {
		call.Truncated = true
	}
	call.Output = out
}
