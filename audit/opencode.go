package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/concord-ctx/concord/recognize"
)

// OpenCode 1.18 keeps its sessions in SQLite ($XDG_DATA_HOME/opencode/
// opencode.db); a SQLite reader would add megabytes to the plugin binary,
// so the audit reads what `opencode export <sessionID>` prints instead:
//
//	{"info": {"id": "ses_…", "directory": "/abs/project", …},
//	 "messages": [{"info": {"role": "assistant", "time": {"created": ms}, …},
//	               "parts": [{"type": "step-start"}, {"type": "text", "text": …},
//	                         {"type": "tool", "tool": "read", "callID": …,
//	                          "state": {"status": "completed", "input": {…},
//	                                    "output": "…", "metadata": {…}, "time": {…}}}, …]}]}
//
// Each step-start part is one model call (an assistant message without
// step parts counts as one); a tool part is its completed result. A user
// message with a compaction part asks for a summary: the next assistant
// message, marked summary, whose text takes the place of everything before
// it (anchored by its message id).
type ocExport struct {
	Info *struct {
		ID        string `json:"id"`
		Directory string `json:"directory"`
	} `json:"info"`
	Messages []struct {
		Info struct {
			ID      string `json:"id"`
			Role    string `json:"role"`
			Summary bool   `json:"summary"` // the summary a compaction asked for
			Time    struct {
				Created int64 `json:"created"`
			} `json:"time"`
		} `json:"info"`
		Parts []ocPart `json:"parts"`
	} `json:"messages"`
}

type ocPart struct {
	Type   string `json:"type"`
	Text   string `json:"text"`
	Tool   string `json:"tool"`
	CallID string `json:"callID"`
	State  *struct {
		Status   string          `json:"status"`
		Input    json.RawMessage `json:"input"`
		Output   string          `json:"output"`
		Error    string          `json:"error"`
		Metadata json.RawMessage `json:"metadata"`
		Time     struct {
			Start int64 `json:"start"`
			End   int64 `json:"end"`
		} `json:"time"`
	} `json:"state"`
}

func isOpenCodeExport(raw map[string]json.RawMessage) bool {
	_, info := raw["info"]
	_, msgs := raw["messages"]
	return info && msgs
}

func parseOpenCode(file string, data []byte) (*Session, error) {
	var ex ocExport
	if err := json.Unmarshal(data, &ex); err != nil {
		return nil, fmt.Errorf("not an opencode export: %w", err)
	}
	if ex.Info == nil || ex.Info.ID == "" {
		return nil, errors.New("an opencode export without info.id")
	}
	s := &Session{ID: ex.Info.ID, File: file, Format: FormatOpenCode}
	// A compaction part starts the history over: the summary call still
	// carries the old messages, the calls after it only the summary.
	var compact *Step
	var anchors []string
	chars := 0
	for _, m := range ex.Messages {
		n := len(s.Steps)
		at := ms(m.Info.Time.Created)
		if compact != nil && !m.Info.Summary {
			s.Steps = append(s.Steps, *compact)
			if compact.Summary != "" {
				anchors = append(anchors, compact.SummaryAnchor) // a later compaction replaces it too
			}
			compact = nil
		}
		if compact != nil && m.Info.Summary && m.Info.Role == "assistant" && m.Info.ID != "" {
			compact.Summary, compact.SummaryAnchor = ocText(m.Parts), m.Info.ID
		}
		if m.Info.Role == "assistant" && !hasStep(m.Parts) {
			s.Steps = append(s.Steps, Step{Model: true, Time: at})
		}
		for _, p := range m.Parts {
			switch p.Type {
			case "compaction":
				compact = &Step{Forget: append([]string{}, anchors...), ForgetChars: chars}
			case "step-start":
				s.Steps = append(s.Steps, Step{Model: true, Time: at})
			case "text", "reasoning":
				s.Steps = append(s.Steps, Step{Chars: len(p.Text)})
			case "tool":
				if p.State == nil || (p.State.Status != "completed" && p.State.Status != "error") {
					continue // never finished: the model was not shown a result
				}
				out := p.State.Output
				if p.State.Status == "error" {
					out = p.State.Error
				}
				call := &recognize.Call{Runtime: recognize.OpenCode, Tool: p.Tool, Args: p.State.Input, Output: out,
					Cwd: ex.Info.Directory, Error: p.State.Status == "error", Metadata: p.State.Metadata}
				s.Steps = append(s.Steps, Step{Tool: call, Anchor: p.CallID, Time: ms(p.State.Time.End),
					Chars: len(p.State.Input) + len(out)})
				anchors = append(anchors, p.CallID)
			}
		}
		for _, st := range s.Steps[n:] {
			chars += st.Chars
		}
	}
	return s, nil
}

// ocText is a message's text: its text parts, one after another.
func ocText(parts []ocPart) string {
	var texts []string
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n")
}

func hasStep(parts []ocPart) bool {
	for _, p := range parts {
		if p.Type == "step-start" {
			return true
		}
	}
	return false
}

func ms(v int64) time.Time {
	if v <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(v).UTC()
}
