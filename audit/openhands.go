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
	args := map[string]json.RawMessage{}
	lastResponse := ""
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var ev ohEvent
		if err := json.Unmarshal(data, &ev); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Base(f), err)
		}
		if ev.Kind == "" {
			return nil, fmt.Errorf("%s: not an event (no kind)", filepath.Base(f))
		}
		at := ohTime(ev.Timestamp)
		switch ev.Kind {
		case "ActionEvent":
			if ev.LLMResponse == "" || ev.LLMResponse != lastResponse {
				s.Steps = append(s.Steps, Step{Model: true, Time: at})
				lastResponse = ev.LLMResponse
			}
			chars := 0
			for _, t := range ev.Thought {
				chars += len(t.Text)
			}
			if ev.ToolCall != nil {
				args[ev.ToolCallID] = json.RawMessage(ev.ToolCall.Arguments)
				chars += len(ev.ToolCall.Arguments)
			}
			s.Steps = append(s.Steps, Step{Chars: chars})
		case "ObservationEvent":
			if ev.Observation == nil {
				return nil, fmt.Errorf("%s: an observation event without its observation", filepath.Base(f))
			}
			o := ev.Observation
			out := o.text()
			call := &recognize.Call{Runtime: recognize.OpenHands, Tool: ev.ToolName, Args: args[ev.ToolCallID],
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
			s.Steps = append(s.Steps, Step{Tool: call, Anchor: ev.ToolCallID, Time: at, Chars: len(out), After: o.NewContent})
		case "MessageEvent":
			if ev.Source == "agent" {
				s.Steps = append(s.Steps, Step{Model: true, Time: at})
				lastResponse = ""
			}
			s.Steps = append(s.Steps, Step{Chars: len(ev.LLMMessage)})
		default:
			// System prompt, errors, condensations, state updates: no tool result.
			if ev.Kind == "SystemPromptEvent" {
				s.Steps = append(s.Steps, Step{Chars: len(data)})
			}
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
