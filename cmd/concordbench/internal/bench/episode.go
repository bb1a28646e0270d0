package bench

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
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
	AnswerFirst      string         `json:"answer_first_copy,omitempty"` // the first-copy reader's answer (scripted agent)
	RecoveredFirst   bool           `json:"recovered_first_copy"`
	Steps            int            `json:"steps"` // model calls
	Reads            int            `json:"reads"` // read_file calls
	PromptTokens     int            `json:"prompt_tokens"`
	CompletionTokens int            `json:"completion_tokens"`
	CountedPrompt    int            `json:"counted_prompt_tokens"`
	ReusedTokens     int            `json:"reused_prefix_tokens"`
	CacheRead        int            `json:"cache_read_tokens"`
	CacheWrite       int            `json:"cache_write_tokens"`
	InputCost        float64        `json:"input_cost"` // in plain input tokens
	RewriteCalls     int            `json:"rewrite_calls"`
	ProviderCached   int            `json:"provider_cached_tokens,omitempty"`
	Restores         []race.Restore `json:"restores"`
	ConcordStats     map[string]any `json:"concord_stats,omitempty"`
	// The compaction workload, concord mode: corrections about the summary
	// delivered, those true but unneeded (no line they correct is one the
	// summary restated), restated lines that changed with no correction in
	// force at some model call, and corrected lines that were not true.
	DerivedCorrections int         `json:"derived_corrections,omitempty"`
	DerivedUnneeded    int         `json:"derived_unneeded,omitempty"`
	DerivedMissed      int         `json:"derived_missed,omitempty"`
	DerivedFalse       int         `json:"derived_false,omitempty"`
	Error              string      `json:"error,omitempty"`
	Trace              []StepTrace `json:"trace"`
}

// StepTrace is one model call and the tools it ran.
type StepTrace struct {
	Step             int         `json:"step"`
	PromptTokens     int         `json:"prompt_tokens"`
	CompletionTokens int         `json:"completion_tokens"`
	ReusedTokens     int         `json:"reused_prefix_tokens"`
	CacheRead        int         `json:"cache_read_tokens"`
	CacheWrite       int         `json:"cache_write_tokens"`
	InputCost        float64     `json:"input_cost"`
	Rewrite          bool        `json:"rewrote_earlier_message,omitempty"`
	Views            []ViewTrace `json:"concord_views,omitempty"`
	InFlight         []string    `json:"in_flight_writes,omitempty"` // files written after this call's sync
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

	alerts   []string       // alert mode: paths restored since the last tool output
	undiffed []race.Restore // diff mode: seen changes no diff has shown yet
	// known is what the agent last saw of each file it read or edited in
	// full (reminder mode compares the disk with it before each call).
	known map[string]string
	chat  []string // resend: files in the chat, in the order added
	// inflight are session events due after the next sync; outside are
	// the session's outside writes so far.
	inflight   []tasks.Event
	outside    []race.Restore
	prevPrompt []int
	prevMsgs   []string
	ids        map[string]bool
	res        TaskResult
	// compaction workload: whether the session was compacted, the lines
	// its summary restated, and those found without a correction.
	compacted bool
	restated  []restated
	missed    map[restated]bool
}

// runEpisode plays task t in mode; dir (created, then removed) is its workspace.
func runEpisode(ctx context.Context, cfg Config, dir, mode string, t tasks.Task) TaskResult {
	e := &episode{cfg: cfg, mode: mode, task: t, views: map[string]string{}, known: map[string]string{}}
	e.res = TaskResult{ID: t.ID, Question: t.Question, Gold: t.Answer}
	if err := e.run(ctx, dir); err != nil {
		e.res.Error = err.Error()
	}
	e.res.Recovered = e.res.Error == "" && tasks.ExactMatch(e.res.Answer, t.Answer)
	e.res.RecoveredFirst = e.res.Error == "" && e.res.AnswerFirst != "" && tasks.ExactMatch(e.res.AnswerFirst, t.Answer)
	if e.ctl != nil {
		e.res.Restores = append(e.ctl.Log(), e.outside...)
	}
	return e.res
}

func (e *episode) run(ctx context.Context, dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return fmt.Errorf("episode %s: %w", e.task.ID, err)
	}
	defer os.RemoveAll(dir)
	if err := e.prepare(dir); err != nil {
		return err
	}
	if e.mode == ModeConcord {
		var err error
		e.cc, err = startConcord(ctx, e.cfg, e.ws)
		if err != nil {
			return err
		}
		defer e.closeConcord(ctx)
	}
	coding := len(e.task.Plan) > 0
	e.tools = agent.Tools(coding, e.mode == ModeDiff)
	e.msgs = []agent.Message{
		{Role: "system", Content: agent.SystemPrompt(coding, e.mode == ModeDiff)},
		{Role: "user", Content: agent.UserPrompt(e.task)},
	}
	_, scripted := e.cfg.Agent.(agent.Scripted)
	sess := e.cfg.Agent.Session(e.task)
	for step := 1; step <= e.cfg.MaxSteps; step++ {
		if answered, err := e.step(ctx, sess, step, scripted); err != nil || answered {
			return err
		}
	}
	// Out of steps: leave the workspace as the race would before an answer.
	if _, err := e.ctl.Before(race.Call{Name: race.ToolAnswer}); err != nil {
		return err
	}
	return nil
}

// prepare lays out the workspace in dir and arms the race; the oracle
// starts from the final files instead.
func (e *episode) prepare(dir string) error {
	var err error
	e.ws, err = race.NewWorkspace(dir, e.task)
	if err != nil {
		return err
	}
	e.ctl = race.NewController(e.ws)
	e.ctl.ScheduleTask(e.task, int(seedOf(e.task.ID)))
	if e.mode != ModeOracle {
		return e.ctl.Arm(e.task.Mutations)
	}
	// No race: the files are in their final state from the start.
	if err := e.ctl.Final(e.task.Mutations); err != nil {
		return err
	}
	// No race: the outside writes of a session are on disk before it starts.
	for _, ev := range e.task.Events {
		if _, err := e.apply(ev); err != nil {
			return err
		}
	}
	return nil
}

// closeConcord keeps the server's stats and stops it; a close error is
// the episode's error unless it already has one.
func (e *episode) closeConcord(ctx context.Context) {
	e.res.ConcordStats = e.cc.stats(ctx)
	if err := e.cc.close(); err != nil && e.res.Error == "" {
		e.res.Error = err.Error()
	}
}

// step is one model call and its tool calls; true when an answer was
// accepted (the episode is over).
func (e *episode) step(ctx context.Context, sess agent.Session, step int, scripted bool) (bool, error) {
	tr := StepTrace{Step: step}
	prompt, err := e.promptFor(ctx, step, &tr)
	if err != nil {
		return false, err
	}
	seq, reused := e.price(&tr, prompt)
	reply, err := sess.Next(ctx, prompt, e.tools)
	if err != nil {
		return false, fmt.Errorf("step %d: %w", step, err)
	}
	msg := reply.Message
	msg.Role = "assistant"
	e.uniqueIDs(&msg, step)
	e.msgs = append(e.msgs, msg)
	e.tally(&tr, msg, len(seq), reused, reply.Usage)
	final, answered, err := e.act(ctx, step, msg, &tr)
	if err != nil {
		return false, err
	}
	e.res.Trace = append(e.res.Trace, tr)
	if !answered {
		return false, e.compactIfDue(ctx, step)
	}
	e.res.Answer = final
	if scripted {
		// The second reader makes the same calls and reads the same
		// context differently.
		e.res.AnswerFirst = agent.ExtractFirst(e.task.Probe, prompt)
	}
	return true, nil
}

// promptFor is the prompt of this step's call, after the mode's reminder
// and Concord's sync; the writes in flight land after it is taken.
func (e *episode) promptFor(ctx context.Context, step int, tr *StepTrace) ([]agent.Message, error) {
	if e.mode == ModeReminder {
		e.remind()
	}
	if e.cc != nil {
		vs, err := e.cc.sync(ctx, step, e.views, len(e.msgs)-1, promptChars(e.prompt()))
		if err != nil {
			return nil, err
		}
		tr.Views = vs
		e.countCorrections(vs)
	}
	prompt := e.prompt()
	if e.compacted && e.cc != nil {
		e.checkCorrections(prompt)
	}
	// Writes in flight: after the sync, before the reply.
	if err := e.landInFlight(tr); err != nil {
		return nil, err
	}
	return prompt, nil
}

// promptChars is the size of a prompt's messages in characters, as a
// binding reports it in sync.
func promptChars(msgs []agent.Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Content)
		for _, c := range m.ToolCalls {
			n += len(c.Name) + len(c.Arguments)
		}
	}
	return n
}

// price counts the prompt's tokens, the prefix it shares with the
// previous call's and whether a message it sent was rewritten, and prices
// the call with the prompt cache.
func (e *episode) price(tr *StepTrace, prompt []agent.Message) (seq []int, reused int) {
	seq = promptTokens(e.cfg.Counter, e.tools, prompt)
	reused = tokens.CommonPrefix(e.prevPrompt, seq)
	rendered := renderAll(prompt)
	tr.Rewrite = rewrote(e.prevMsgs, rendered)
	e.prevPrompt, e.prevMsgs = seq, rendered
	tr.CacheRead, tr.CacheWrite, tr.InputCost = e.cfg.Price.CallCost(len(seq), reused)
	return seq, reused
}

// tally adds a call's tokens and cost to the step and the task; a
// provider's usage, when given, replaces the counted tokens.
func (e *episode) tally(tr *StepTrace, msg agent.Message, prompt, reused int, u *agent.Usage) {
	e.res.Steps++
	tr.PromptTokens, tr.CompletionTokens, tr.ReusedTokens = prompt, completionTokens(e.cfg.Counter, msg), reused
	e.res.CountedPrompt += prompt
	e.res.ReusedTokens += reused
	e.res.CacheRead += tr.CacheRead
	e.res.CacheWrite += tr.CacheWrite
	e.res.InputCost += tr.InputCost
	if tr.Rewrite {
		e.res.RewriteCalls++
	}
	if u != nil {
		tr.PromptTokens, tr.CompletionTokens = u.PromptTokens, u.CompletionTokens
		e.res.ProviderCached += u.CachedTokens
	}
	e.res.PromptTokens += tr.PromptTokens
	e.res.CompletionTokens += tr.CompletionTokens
	tr.Content = msg.Content
}

// act runs the reply: its tool calls, or, without any, the reply as the
// final answer. final is the first accepted answer.
func (e *episode) act(ctx context.Context, step int, msg agent.Message, tr *StepTrace) (final string, answered bool, err error) {
	if len(msg.ToolCalls) == 0 {
		// A reply without tool calls is the model's final answer.
		out, ok, err := e.answer(msg.Content)
		if err != nil {
			return "", false, err
		}
		if ok {
			return msg.Content, true, nil
		}
		e.msgs = append(e.msgs, agent.Message{Role: "user", Content: out})
		return "", false, nil
	}
	for _, tc := range msg.ToolCalls {
		ct, ans, ok, err := e.tool(ctx, step, tc)
		if err != nil {
			return "", false, err
		}
		tr.Calls = append(tr.Calls, ct)
		if ok && !answered {
			final, answered = ans, true
		}
	}
	return final, answered, nil
}

// seedOf is a stable small number per task (the edits schedule's choice).
func seedOf(id string) uint32 {
	h := sha256.Sum256([]byte(id))
	return binary.BigEndian.Uint32(h[:4]) >> 1
}

// landInFlight applies the writes due between this call's sync and its
// reply: the race's deferred restores and a session's in-flight events.
func (e *episode) landInFlight(tr *StepTrace) error {
	rs, err := e.ctl.InFlight()
	if err != nil {
		return err
	}
	for _, ev := range e.inflight {
		r, err := e.apply(ev)
		if err != nil {
			return err
		}
		rs = append(rs, r)
	}
	e.inflight = nil
	for _, r := range rs {
		tr.InFlight = append(tr.InFlight, r.File)
	}
	e.note(rs)
	return e.reportWrites(context.Background(), rs)
}

// apply makes a session's outside write: Old becomes New in File.
func (e *episode) apply(ev tasks.Event) (race.Restore, error) {
	p := e.ws.Abs(ev.File)
	b, err := os.ReadFile(p)
	if err != nil {
		return race.Restore{}, fmt.Errorf("outside write %s: %w", ev.File, err)
	}
	before := string(b)
	if strings.Count(before, ev.Old) != 1 {
		return race.Restore{}, fmt.Errorf("outside write %s: %q is not on disk exactly once", ev.File, ev.Old)
	}
	after := strings.Replace(before, ev.Old, ev.New, 1)
	if err := os.WriteFile(p, []byte(after), 0o644); err != nil {
		return race.Restore{}, fmt.Errorf("outside write %s: %w", ev.File, err)
	}
	_, seen := e.known[ev.File]
	r := race.Restore{File: ev.File, Seen: seen, Reason: "outside-" + ev.Kind, Before: before, After: after}
	e.outside = append(e.outside, r)
	return r, nil
}

// planDone runs a session's events due after plan step id ("p<i>").
func (e *episode) planDone(id string) ([]race.Restore, error) {
	i, err := strconv.Atoi(strings.TrimPrefix(id, "p"))
	if err != nil || !strings.HasPrefix(id, "p") || e.mode == ModeOracle {
		return nil, nil
	}
	var rs []race.Restore
	for _, ev := range e.task.Events {
		if ev.After != i {
			continue
		}
		if ev.InFlight {
			e.inflight = append(e.inflight, ev)
			continue
		}
		r, err := e.apply(ev)
		if err != nil {
			return rs, err
		}
		rs = append(rs, r)
	}
	return rs, nil
}

// reportWrites tells Concord of writes another agent made with its own
// tool (concurrent), as that agent's binding does.
func (e *episode) reportWrites(ctx context.Context, rs []race.Restore) error {
	if e.cc == nil {
		return nil
	}
	for _, r := range rs {
		if r.By != "" {
			if err := e.cc.changed(ctx, r.By, r.File, ""); err != nil {
				return err
			}
		}
	}
	return nil
}

// remind appends Claude Code's reminder for every file the agent read
// whose content changed since it last saw it: the changed lines, with
// their numbers. The old tool output stays as it was.
func (e *episode) remind() {
	var b strings.Builder
	for _, f := range slices.Sorted(maps.Keys(e.known)) {
		cur, err := os.ReadFile(e.ws.Abs(f))
		now := string(cur)
		if err == nil && now == e.known[f] {
			continue
		}
		path := e.ws.DisplayPath(f)
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		if err != nil {
			if e.known[f] != deleted {
				fmt.Fprintf(&b, "<system-reminder>\nNote: %s was deleted, either by the user or by a linter.\n</system-reminder>", path)
				e.known[f] = deleted
			}
			continue
		}
		start, _, nw := hunk(e.known[f], now)
		fmt.Fprintf(&b, "<system-reminder>\nNote: %s was modified, either by the user or by a linter. This change was intentional, so make sure to take it into account as you proceed. Here are the relevant changes (shown with line numbers):\n%s\n</system-reminder>",
			path, race.RenderRead(start, nw))
		e.known[f] = now
	}
	if b.Len() > 0 {
		e.msgs = append(e.msgs, agent.Message{Role: "user", Content: b.String()})
	}
}

// deleted marks a known file that is gone (a recreate is then a change).
const deleted = "\x00deleted"

// hunk is the changed region of two texts as lines: the first changed
// line (1-based), the old lines and the new lines between the common
// prefix and suffix.
func hunk(before, after string) (int, []string, []string) {
	a, b := race.Lines(before), race.Lines(after)
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	return p + 1, a[p : len(a)-s], b[p : len(b)-s]
}

// prompt is the history as the model sees it now: Concord's views, masked
// observations, resent files.
func (e *episode) prompt() []agent.Message {
	out := make([]agent.Message, len(e.msgs))
	copy(out, e.msgs)
	for i, m := range out {
		if v, ok := e.views[m.ID()]; ok && (m.Role == "tool" || m.Anchor != "") {
			out[i].Content = v
		}
	}
	if e.cc != nil {
		e.cc.attach(out) // after the in-place views, as a binding does
	}
	switch e.mode {
	case ModeMask:
		// OpenHands' ObservationMaskingCondenser: observations outside the
		// last MaskWindow events are replaced by a placeholder. Events are
		// the messages after the system prompt, one per tool call.
		var events []int // message index of each event (-1: an action)
		for i, m := range out[1:] {
			if m.Role == "assistant" {
				for range max(len(m.ToolCalls), 1) {
					events = append(events, -1)
				}
				continue
			}
			if m.Role == "tool" {
				events = append(events, i+1)
			} else {
				events = append(events, -1)
			}
		}
		for k, mi := range events {
			if mi >= 0 && k < len(events)-MaskWindow {
				out[mi].Content = agent.Masked
			}
		}
	case ModeResend:
		// Aider's order (aider/coders/chat_chunks.py): system, the files in
		// the chat, then the history; the files as a user message and the
		// assistant's acknowledgement (aider/coders/base_prompts.py).
		if block := e.chatFiles(); block != "" {
			files := []agent.Message{{Role: "user", Content: block}, {Role: "assistant", Content: agent.ResendAck}}
			out = append(out[:1], append(files, out[1:]...)...)
		}
	}
	return out
}

// chatFiles is Aider's files block: the current content of every file in
// the chat, re-read from disk for each call.
func (e *episode) chatFiles() string {
	var b strings.Builder
	for _, f := range e.chat {
		c, err := os.ReadFile(e.ws.Abs(f))
		if err != nil {
			continue // deleted: Aider drops it from the chat
		}
		if b.Len() == 0 {
			b.WriteString(agent.ResendPrefix)
		}
		fmt.Fprintf(&b, "\n%s\n```\n%s```\n", e.ws.DisplayPath(f), c)
	}
	return b.String()
}

func (e *episode) addChat(f string) {
	for _, x := range e.chat {
		if x == f {
			return
		}
	}
	e.chat = append(e.chat, f)
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
	if err := e.reportWrites(context.Background(), rs); err != nil {
		return "", false, err
	}
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
	o, err := e.dispatch(ctx, tc, call, perr, &ct)
	if err != nil {
		return ct, "", false, err
	}
	if e.mode == ModeAlert && call.Name != race.ToolAnswer {
		o.out = e.flushAlerts(o.out)
	}
	// A binding observes the result as soon as the tool returns (and
	// reports its own write first); the race's out-of-band restore comes
	// after, so Concord learns of it as a real change on disk.
	if err := e.observeResult(ctx, step, tc.ID, o.res); err != nil {
		return ct, "", false, err
	}
	rs, err := e.afterTool(ctx, tc.ID, o.res)
	if err != nil {
		return ct, "", false, err
	}
	ct.Restores = append(ct.Restores, rs...)
	ct.Output = o.out
	e.msgs = append(e.msgs, agent.Message{Role: "tool", ToolCallID: tc.ID, Content: o.out})
	return ct, o.final, o.accepted, nil
}

// toolOutcome is what a tool call gave, before the mode's alerts: the
// output shown, the workspace result, and for answer the answer given
// and whether it was accepted.
type toolOutcome struct {
	out      string
	res      race.Result
	final    string
	accepted bool
}

// dispatch runs the call by its tool; restores the race makes before it
// go to ct.
func (e *episode) dispatch(ctx context.Context, tc agent.ToolCall, call race.Call, perr error, ct *CallTrace) (toolOutcome, error) {
	switch {
	case perr != nil:
		return toolOutcome{out: "error: " + perr.Error()}, nil
	case call.Name == race.ToolAnswer:
		out, ok, err := e.answer(call.Answer)
		return toolOutcome{out: out, final: call.Answer, accepted: ok}, err
	case call.Name == race.ToolDiff && e.mode == ModeDiff:
		out, err := e.diffTool(call, ct)
		return toolOutcome{out: out}, err
	case e.workspaceTool(call.Name):
		return e.workspaceCall(ctx, call, ct)
	}
	return toolOutcome{out: fmt.Sprintf("error: unknown tool %q", tc.Name)}, nil
}

// workspaceTool: the tool reads or (in a coding session) changes the
// workspace.
func (e *episode) workspaceTool(name string) bool {
	switch name {
	case race.ToolGlob, race.ToolGrep, race.ToolRead:
		return true
	case race.ToolEdit, race.ToolRun:
		return len(e.task.Plan) > 0
	}
	return false
}

// diffTool is the diff mode's diff: every change the agent has not seen,
// which it then knows.
func (e *episode) diffTool(call race.Call, ct *CallTrace) (string, error) {
	rs, err := e.ctl.Before(call)
	if err != nil {
		return "", err
	}
	e.note(rs)
	ct.Restores = append(ct.Restores, rs...)
	out := e.renderDiff(e.undiffed)
	for _, r := range e.undiffed {
		e.seeFile(r.File)
	}
	e.undiffed = nil
	return out, nil
}

// workspaceCall runs a workspace tool after the race's writes due before
// it.
func (e *episode) workspaceCall(ctx context.Context, call race.Call, ct *CallTrace) (toolOutcome, error) {
	rs, err := e.ctl.Before(call)
	if err != nil {
		return toolOutcome{}, err
	}
	e.note(rs)
	if err := e.reportWrites(ctx, rs); err != nil {
		return toolOutcome{}, err
	}
	ct.Restores = append(ct.Restores, rs...)
	res := e.ws.Exec(call)
	return toolOutcome{out: e.seeResult(res), res: res}, nil
}

// seeResult records the file a read or an edit showed the agent and
// returns the output it is shown (in resend, the file joins the chat and
// the output says so).
func (e *episode) seeResult(res race.Result) string {
	switch {
	case res.Read != nil:
		e.res.Reads++
		e.seeFile(res.Read.File)
		if e.mode == ModeResend {
			e.addChat(res.Read.File)
			return fmt.Sprintf("Added %s to the chat.", e.ws.DisplayPath(res.Read.File))
		}
	case res.Edit != nil:
		e.seeFile(res.Edit.File)
		if e.mode == ModeResend {
			e.addChat(res.Edit.File)
			return fmt.Sprintf("Applied edit to %s", e.ws.DisplayPath(res.Edit.File))
		}
	}
	return res.Output
}

// observeResult tells Concord of the agent's own edit, then observes the
// result under the call's id.
func (e *episode) observeResult(ctx context.Context, step int, id string, res race.Result) error {
	if e.cc == nil {
		return nil
	}
	if res.Edit != nil {
		if err := e.cc.changed(ctx, benchAgent, res.Edit.File, id); err != nil {
			return err
		}
	}
	return e.cc.observe(ctx, step, id, res)
}

// afterTool makes the writes due after the call's output (the race's
// restores, a session's events); they go to the next output (alert) or
// diff.
func (e *episode) afterTool(ctx context.Context, id string, res race.Result) ([]race.Restore, error) {
	rs, err := e.ctl.After(res)
	if err != nil {
		return nil, err
	}
	more, err := e.planDone(id)
	if err != nil {
		return nil, err
	}
	rs = append(rs, more...)
	e.note(rs)
	if err := e.reportWrites(ctx, rs); err != nil {
		return nil, err
	}
	return rs, nil
}

// seeFile records that the agent now knows f as it is on disk.
func (e *episode) seeFile(f string) {
	if b, err := os.ReadFile(e.ws.Abs(f)); err == nil {
		e.known[f] = string(b)
	}
}

// renderDiff shows changes: - what the agent saw, + what is on disk.
func (e *episode) renderDiff(rs []race.Restore) string {
	if len(rs) == 0 {
		return "no changes since you last saw the files"
	}
	var b strings.Builder
	for i, r := range rs {
		if i > 0 {
			b.WriteByte('\n')
		}
		if r.After == "" {
			fmt.Fprintf(&b, "--- %s (as you saw it)\n+++ %s (deleted)", r.File, r.File)
			continue
		}
		fmt.Fprintf(&b, "--- %s (as you saw it)\n+++ %s (on disk now)", r.File, r.File)
		start, old, nw := hunk(r.Before, r.After)
		fmt.Fprintf(&b, "\n@@ line %d @@", start)
		for _, l := range old {
			fmt.Fprintf(&b, "\n-%s", l)
		}
		for _, l := range nw {
			fmt.Fprintf(&b, "\n+%s", l)
		}
	}
	return b.String()
}

// renderAll renders each message as the token count sees it.
func renderAll(msgs []agent.Message) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = renderMessage(m)
	}
	return out
}

// rewrote: some message the previous call sent is different now (or gone).
func rewrote(prev, cur []string) bool {
	if len(prev) > len(cur) {
		return true
	}
	for i := range prev {
		if prev[i] != cur[i] {
			return true
		}
	}
	return false
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
