package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/concord-ctx/concord/recognize"
)

// An OpenHands SDK conversation persisted with persistence_dir
// (openhands-sdk 1.58.2): <dir>/base_state.json and <dir>/events/
// event-<idx>-<event id>.json, one event a file, in idx order. Model calls
// are the distinct llm_response_id of ActionEvents, and agent
// MessageEvents (a reply without tools); ObservationEvents are the tool
// results, with the action's arguments from its ActionEvent (tool_call_id).
type ohEvent struct {
	ID          string          `json:"id"`
	Kind        string          `json:"kind"`
	Timestamp   string          `json:"timestamp"`
	Source      string          `json:"source"`
	ToolName    string          `json:"tool_name"`
	ToolCallID  string          `json:"tool_call_id"`
	LLMResponse string          `json:"llm_response_id"`
	ToolCall    *ohToolCall     `json:"tool_call"`
	Observation *ohObservation  `json:"observation"`
	LLMMessage  json.RawMessage `json:"llm_message"`
	Thought     []struct {
		Text string `json:"text"`
	} `json:"thought"`
	Forgotten []string `json:"forgotten_event_ids"` // Condensation
	Summary   *string  `json:"summary"`
}

type ohToolCall struct {
	Arguments string `json:"arguments"`
}

type ohObservation struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	IsError    bool    `json:"is_error"`
	ExitCode   *int    `json:"exit_code"`
	Timeout    bool    `json:"timeout"`
	NewContent *string `json:"new_content"`
	Metadata   *struct {
		ExitCode   *int   `json:"exit_code"`
		WorkingDir string `json:"working_dir"`
		Prefix     string `json:"prefix"`
	} `json:"metadata"`
}

func (o *ohObservation) text() string {
	var b strings.Builder
	for _, c := range o.Content {
		if c.Type == "text" {
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

func loadOpenHands(dir string) (*Session, error) {
	files, err := filepath.Glob(filepath.Join(dir, "events", "event-*.json"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, errors.New("no events/event-*.json")
	}
	idx := func(f string) int {
		n, _ := strconv.Atoi(strings.SplitN(strings.TrimPrefix(filepath.Base(f), "event-"), "-", 2)[0])
		return n
	}
	sort.Slice(files, func(i, j int) bool { return idx(files[i]) < idx(files[j]) })
	s := &Session{ID: filepath.Base(dir), File: dir, Format: FormatOpenHands}
	var state struct {
		ID string `json:"id"`
	}
	if data, err := os.ReadFile(filepath.Join(dir, "base_state.json")); err == nil && json.Unmarshal(data, &state) == nil && state.ID != "" {
		s.ID = state.ID
	}
	r := ohReader{s: s, args: map[string]json.RawMessage{}, events: map[string]ohSeen{}}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if err := r.event(data); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Base(f), err)
		}
	}
	return s, nil
}

func ohTime(s string) time.Time {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	return time.Time{}
}

// ohReader turns events into steps, one at a time.
type ohReader struct {
	s            *Session
	args         map[string]json.RawMessage // tool call id -> the action's arguments
	lastResponse string
	events       map[string]ohSeen // event id -> what it added, for condensations
}

// ohSeen is what one event added to the prompt.
type ohSeen struct {
	anchor string // an observation's tool call id
	chars  int
}

func (r *ohReader) event(data []byte) error {
	var ev ohEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return err
	}
	if ev.Kind == "" {
		return errors.New("not an event (no kind)")
	}
	s, at := r.s, ohTime(ev.Timestamp)
	n := len(s.Steps)
	defer func() {
		seen := ohSeen{}
		for _, st := range s.Steps[n:] {
			seen.chars += st.Chars
			if st.Tool != nil {
				seen.anchor = st.Anchor
			}
		}
		if ev.ID != "" {
			r.events[ev.ID] = seen
		}
	}()
	switch ev.Kind {
	case "ActionEvent":
		if ev.LLMResponse == "" || ev.LLMResponse != r.lastResponse {
			s.Steps = append(s.Steps, Step{Model: true, Time: at})
			r.lastResponse = ev.LLMResponse
		}
		chars := 0
		for _, t := range ev.Thought {
			chars += len(t.Text)
		}
		if ev.ToolCall != nil {
			r.args[ev.ToolCallID] = json.RawMessage(ev.ToolCall.Arguments)
			chars += len(ev.ToolCall.Arguments)
		}
		s.Steps = append(s.Steps, Step{Chars: chars})
	case "ObservationEvent":
		if ev.Observation == nil {
			return errors.New("an observation event without its observation")
		}
		st := r.observation(&ev)
		st.Time = at
		s.Steps = append(s.Steps, st)
	case "MessageEvent":
		if ev.Source == "agent" {
			s.Steps = append(s.Steps, Step{Model: true, Time: at})
			r.lastResponse = ""
		}
		s.Steps = append(s.Steps, Step{Chars: len(ev.LLMMessage)})
	case "SystemPromptEvent":
		s.Steps = append(s.Steps, Step{Chars: len(data)})
	case "Condensation":
		// The condenser dropped these events from the view the model gets
		// (their summary takes their place): the prompt is rebuilt.
		st := Step{Forget: []string{}}
		for _, id := range ev.Forgotten {
			seen := r.events[id]
			st.ForgetChars += seen.chars
			if seen.anchor != "" {
				st.Forget = append(st.Forget, seen.anchor)
			}
		}
		if ev.Summary != nil {
			st.Chars = len(*ev.Summary)
			if ev.ID != "" && *ev.Summary != "" {
				// The SDK puts the summary in the view as an event of its
				// own, "<condensation id>-summary": a later condensation
				// forgets it by that id (testdata/audit/sessions/openhands).
				st.Summary, st.SummaryAnchor = *ev.Summary, ev.ID+"-summary"
				r.events[st.SummaryAnchor] = ohSeen{anchor: st.SummaryAnchor, chars: len(*ev.Summary)}
			}
		}
		s.Steps = append(s.Steps, st)
	}
	// Other kinds (errors, state updates) carry no tool result.
	return nil
}

// observation is a tool result as the binding hands it to recognize.
func (r *ohReader) observation(ev *ohEvent) Step {
	o := ev.Observation
	out := o.text()
	call := &recognize.Call{Runtime: recognize.OpenHands, Tool: ev.ToolName, Args: r.args[ev.ToolCallID],
		Output: out, Error: o.IsError}
	if a := call.Args; len(a) > 0 && !json.Valid(a) {
		call.Args = nil
	}
	exit := o.ExitCode
	if o.Metadata != nil {
		if exit == nil {
			exit = o.Metadata.ExitCode
		}
		call.Cwd = o.Metadata.WorkingDir
		call.Truncated = o.Metadata.Prefix != "" // "[Previous command outputs are truncated ...]"
	}
	if exit != nil && !o.Timeout {
		call.ExitCode = exit
	}
	return Step{Tool: call, Anchor: ev.ToolCallID, Chars: len(out), After: o.NewContent}
}
