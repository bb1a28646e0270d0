package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/concord-ctx/concord/cmd/concordbench/internal/bench/agent"
	"github.com/concord-ctx/concord/cmd/concordbench/internal/bench/race"
	"github.com/concord-ctx/concord/cmd/concordbench/internal/bench/tasks"
	"github.com/concord-ctx/concord/cmd/concordbench/internal/tokens"
)

// TaskResult is one task in one mode, with its trace.
type TaskResult struct {
	ID               string         `json:"id"`
	Question         string         `json:"question"`
	Gold             string         `json:"gold"`
	Answer           string         `json:"answer"`
	Recovered        bool           `json:"recovered"`
	Steps            int            `json:"steps"` // model calls
	Reads            int            `json:"reads"` // read_file calls
	PromptTokens     int            `json:"prompt_tokens"`
	CompletionTokens int            `json:"completion_tokens"`
	CountedPrompt    int            `json:"counted_prompt_tokens"`
	ReusedTokens     int            `json:"reused_prefix_tokens"`
	ProviderCached   int            `json:"provider_cached_tokens,omitempty"`
	Restores         []race.Restore `json:"restores"`
	ConcordStats     map[string]any `json:"concord_stats,omitempty"`
	Error            string         `json:"error,omitempty"`
	Trace            []StepTrace    `json:"trace"`
}

// StepTrace is one model call and the tools it ran.
type StepTrace struct {
	Step             int         `json:"step"`
	PromptTokens     int         `json:"prompt_tokens"`
	CompletionTokens int         `json:"completion_tokens"`
	ReusedTokens     int         `json:"reused_prefix_tokens"`
	Views            []ViewTrace `json:"concord_views,omitempty"`
	Content          string      `json:"content,omitempty"`
	Calls            []CallTrace `json:"calls"`
}

// CallTrace is one tool call.
type CallTrace struct {
	ID       string         `json:"id"`
	Tool     string         `json:"tool"`
	Args     string         `json:"args"`
	Output   string         `json:"output"`
	Restores []race.Restore `json:"restores,omitempty"`
}

// ViewTrace records how Concord rewrote one earlier tool message.
type ViewTrace struct {
	Anchor string `json:"anchor"`
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
	Shown  string `json:"shown,omitempty"` // what the tool message now shows ("" = its original output)
}

// episode is the state of one task in one mode.
type episode struct {
	cfg   Config
	mode  string
	task  tasks.Task
	ws    *race.Workspace
	ctl   *race.Controller
	cc    *concordSession
	tools []agent.ToolSpec

	msgs  []agent.Message
	views map[string]string // tool call id -> content shown instead (concord)

	alerts     []string       // alert mode: paths restored since the last tool output
	undiffed   []race.Restore // diff mode: seen restores no diff has shown yet
	prevPrompt []int
	ids        map[string]bool
	res        TaskResult
}

// runEpisode plays task t in mode; dir (created, then removed) is its workspace.
func runEpisode(ctx context.Context, cfg Config, dir, mode string, t tasks.Task) TaskResult {
	e := &episode{cfg: cfg, mode: mode, task: t, views: map[string]string{}}
	e.res = TaskResult{ID: t.ID, Question: t.Question, Gold: t.Answer}
	if err := e.run(ctx, dir); err != nil {
		e.res.Error = err.Error()
	}
	e.res.Recovered = e.res.Error == "" && tasks.ExactMatch(e.res.Answer, t.Answer)
	e.res.Restores = e.ctl.Log()
	return e.res
}

func (e *episode) run(ctx context.Context, dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("episode %s: %w", e.task.ID, err)
	}
	defer os.RemoveAll(dir)
	var err error
	e.ws, err = race.NewWorkspace(dir, e.task)
	if err != nil {
		return err
	}
	e.ctl = race.NewController(e.ws)
	if e.mode != ModeOracle {
		if err := e.ctl.Arm(e.task.Mutations); err != nil {
			return err
		}
	}
	if e.mode == ModeConcord {
		e.cc, err = startConcord(ctx, e.cfg, e.ws)
		if err != nil {
			return err
		}
		defer func() {
			e.res.ConcordStats = e.cc.stats(ctx)
			if err := e.cc.close(); err != nil && e.res.Error == "" {
				e.res.Error = err.Error()
			}
		}()
	}
	e.tools = agent.Tools(e.mode == ModeDiff)
	e.msgs = []agent.Message{
		{Role: "system", Content: agent.SystemPrompt(e.mode == ModeDiff)},
		{Role: "user", Content: agent.UserPrompt(e.task)},
	}
	sess := e.cfg.Agent.Session(e.task)
	for step := 1; step <= e.cfg.MaxSteps; step++ {
		tr := StepTrace{Step: step}
		if e.cc != nil {
			vs, err := e.cc.sync(ctx, step, e.views)
			if err != nil {
				return err
			}
			tr.Views = vs
		}
		prompt := e.prompt()
		seq := promptTokens(e.cfg.Counter, e.tools, prompt)
		reused := tokens.CommonPrefix(e.prevPrompt, seq)
		e.prevPrompt = seq
		reply, err := sess.Next(ctx, prompt, e.tools)
		if err != nil {
			return fmt.Errorf("step %d: %w", step, err)
		}
		msg := reply.Message
		msg.Role = "assistant"
		e.uniqueIDs(&msg, step)
		e.msgs = append(e.msgs, msg)
		e.res.Steps++
		tr.PromptTokens, tr.CompletionTokens, tr.ReusedTokens = len(seq), completionTokens(e.cfg.Counter, msg), reused
		e.res.CountedPrompt += len(seq)
		e.res.ReusedTokens += reused
		if u := reply.Usage; u != nil {
			tr.PromptTokens, tr.CompletionTokens = u.PromptTokens, u.CompletionTokens
			e.res.ProviderCached += u.CachedTokens
		}
		e.res.PromptTokens += tr.PromptTokens
		e.res.CompletionTokens += tr.CompletionTokens
		tr.Content = msg.Content

		final, answered := "", false
		if len(msg.ToolCalls) == 0 {
			// A reply without tool calls is the model's final answer.
			out, ok, err := e.answer(msg.Content)
			if err != nil {
				return err
			}
			if ok {
				final, answered = msg.Content, true
			} else {
				e.msgs = append(e.msgs, agent.Message{Role: "user", Content: out})
			}
		}
		for _, tc := range msg.ToolCalls {
			ct, ans, ok, err := e.tool(ctx, step, tc)
			if err != nil {
				return err
			}
			tr.Calls = append(tr.Calls, ct)
			if ok && !answered {
				final, answered = ans, true
			}
		}
		e.res.Trace = append(e.res.Trace, tr)
		if answered {
			e.res.Answer = final
			return nil
		}
	}
	// Out of steps: leave the workspace as the race would before an answer.
	if _, err := e.ctl.Before(race.Call{Name: race.ToolAnswer}); err != nil {
		return err
	}
	return nil
}

// prompt is the history as the model sees it now (Concord's views applied).
func (e *episode) prompt() []agent.Message {
	out := make([]agent.Message, len(e.msgs))
	copy(out, e.msgs)
	for i, m := range out {
		if v, ok := e.views[m.ToolCallID]; ok && m.Role == "tool" {
			out[i].Content = v
		}
	}
	return out
}

func (e *episode) note(rs []race.Restore) {
	for _, r := range rs {
		if !r.Seen {
			continue
		}
		switch e.mode {
		case ModeAlert:
			e.alerts = append(e.alerts, r.File)
		case ModeDiff:
			e.undiffed = append(e.undiffed, r)
		}
	}
}

// answer decides whether an answer is accepted now; when not, out is what
// the agent is told instead.
func (e *episode) answer(ans string) (out string, ok bool, err error) {
	rs, err := e.ctl.Before(race.Call{Name: race.ToolAnswer, Answer: ans})
	if err != nil {
		return "", false, err
	}
	e.note(rs)
	switch {
	case e.mode == ModeDiff && len(e.undiffed) > 0:
		return "[blocked] files changed after you saw them; call diff before answering.", false, nil
	case e.mode == ModeAlert && len(e.alerts) > 0:
		return e.flushAlerts("answer not accepted: a file changed after you saw it; call answer again when ready."), false, nil
	}
	return "answer recorded", true, nil
}

func (e *episode) flushAlerts(out string) string {
	if len(e.alerts) == 0 {
		return out
	}
	seen := map[string]bool{}
	var b strings.Builder
	b.WriteString(out)
	for _, p := range e.alerts {
		if !seen[p] {
			seen[p] = true
			fmt.Fprintf(&b, "\n[alert] %s is modified", p)
		}
	}
	e.alerts = nil
	return b.String()
}

// tool runs one tool call through the race and the mode.
func (e *episode) tool(ctx context.Context, step int, tc agent.ToolCall) (CallTrace, string, bool, error) {
	ct := CallTrace{ID: tc.ID, Tool: tc.Name, Args: tc.Arguments}
	call, perr := race.ParseCall(tc.ID, tc.Name, tc.Arguments)
	var out string
	var res race.Result
	accepted, final := false, ""
	switch {
	case perr != nil:
		out = "error: " + perr.Error()
	case call.Name == race.ToolAnswer:
		o, ok, err := e.answer(call.Answer)
		if err != nil {
			return ct, "", false, err
		}
		out, accepted, final = o, ok, call.Answer
	case call.Name == race.ToolDiff && e.mode == ModeDiff:
		rs, err := e.ctl.Before(call)
		if err != nil {
			return ct, "", false, err
		}
		e.note(rs)
		ct.Restores = append(ct.Restores, rs...)
		out = renderDiff(e.undiffed)
		e.undiffed = nil
	case call.Name == race.ToolGlob || call.Name == race.ToolGrep || call.Name == race.ToolRead:
		rs, err := e.ctl.Before(call)
		if err != nil {
			return ct, "", false, err
		}
		e.note(rs)
		ct.Restores = append(ct.Restores, rs...)
		res = e.ws.Exec(call)
		out = res.Output
		if call.Name == race.ToolRead && res.Read != nil {
			e.res.Reads++
		}
	default:
		out = fmt.Sprintf("error: unknown tool %q", tc.Name)
	}
	if e.mode == ModeAlert && !(call.Name == race.ToolAnswer) {
		out = e.flushAlerts(out)
	}
	// A binding observes the result as soon as the tool returns; the race's
	// out-of-band restore comes after, so Concord learns of it as a real
	// change on disk.
	if e.cc != nil {
		if err := e.cc.observe(ctx, step, tc.ID, res); err != nil {
			return ct, "", false, err
		}
	}
	// Restores after the output go to the next output (alert) or diff.
	rs, err := e.ctl.After(res)
	if err != nil {
		return ct, "", false, err
	}
	e.note(rs)
	ct.Restores = append(ct.Restores, rs...)
	ct.Output = out
	e.msgs = append(e.msgs, agent.Message{Role: "tool", ToolCallID: tc.ID, Content: out})
	return ct, final, accepted, nil
}

// renderDiff shows restored patches: - what the agent saw, + what is on disk.
func renderDiff(rs []race.Restore) string {
	if len(rs) == 0 {
		return "no changes since you last saw the files"
	}
	var b strings.Builder
	for i, r := range rs {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "--- %s (as you saw it)\n+++ %s (on disk now)", r.File, r.File)
		for j, l := range r.Lines {
			fmt.Fprintf(&b, "\n@@ line %d @@\n-%s\n+%s", l, r.Mutated[j], r.Original[j])
		}
	}
	return b.String()
}

// Special-token stand-ins: chat templates wrap each message in markers that
// are single tokens; ids outside the vocabulary keep them distinct.
const (
	tokStart = -1
	tokEnd   = -2
)

// promptTokens is the prompt as one token sequence: the tool schemas, then
// each message wrapped in start/end markers, then the assistant primer.
func promptTokens(c *tokens.Counter, tools []agent.ToolSpec, msgs []agent.Message) []int {
	tb, _ := json.Marshal(tools)
	seq := append([]int(nil), c.Encode(string(tb))...)
	for _, m := range msgs {
		seq = append(seq, tokStart)
		seq = append(seq, c.Encode(renderMessage(m))...)
		seq = append(seq, tokEnd)
	}
	seq = append(seq, tokStart)
	return append(seq, c.Encode("assistant\n")...)
}

func renderMessage(m agent.Message) string {
	var b strings.Builder
	b.WriteString(m.Role)
	b.WriteByte('\n')
	b.WriteString(m.Content)
	for _, tc := range m.ToolCalls {
		fmt.Fprintf(&b, "\n%s(%s)", tc.Name, tc.Arguments)
	}
	return b.String()
}

func completionTokens(c *tokens.Counter, m agent.Message) int {
	var b strings.Builder
	b.WriteString(m.Content)
	for _, tc := range m.ToolCalls {
		fmt.Fprintf(&b, "\n%s(%s)", tc.Name, tc.Arguments)
	}
	return c.Count(b.String()) + 1 // + the end-of-message token
}

// uniqueIDs renames tool call ids a provider reused (some local servers
// number calls per response), since views and anchors are keyed by them.
func (e *episode) uniqueIDs(m *agent.Message, step int) {
	if e.ids == nil {
		e.ids = map[string]bool{}
	}
	for i := range m.ToolCalls {
		id := m.ToolCalls[i].ID
		if id == "" || e.ids[id] {
			id = fmt.Sprintf("s%d_%d_%s", step, i, id)
			m.ToolCalls[i].ID = id
		}
		e.ids[id] = true
	}
}
