//go:build unix

package hook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/concord-ctx/concord/protocol"
)

// maxInput bounds the hook's JSON input.
const maxInput = 64 << 20

// FromEnv lays the environment's settings over cfg: CONCORD_ROOTS (a list of
// directories, ':'-separated), CONCORD_HOOK_IDLE and CONCORD_HOOK_TIMEOUT
// (Go durations, "90s").
func FromEnv(cfg Config) (Config, error) {
	if v := os.Getenv("CONCORD_ROOTS"); v != "" {
		cfg.Roots = strings.Split(v, string(os.PathListSeparator))
	}
	for _, d := range []struct {
		name string
		dst  *time.Duration
	}{{"CONCORD_HOOK_IDLE", &cfg.Idle}, {"CONCORD_HOOK_TIMEOUT", &cfg.Timeout}} {
		if v := os.Getenv(d.name); v != "" {
			t, err := time.ParseDuration(v)
			if err != nil || t <= 0 {
				return cfg, fmt.Errorf("%s=%q: want a positive duration such as 90s", d.name, v)
			}
			*d.dst = t
		}
	}
	return cfg, nil
}

// Run handles one hook event: it reads the event from stdin, does what it
// means with the session's server, and writes the runtime's answer on
// stdout. It never breaks the agent: on any failure it writes nothing on
// stdout, says why in one line on stderr, logs it to the directory's log,
// and returns the error (the caller still exits 0).
func Run(ctx context.Context, rt Runtime, cfg Config, stdin io.Reader, stdout, stderr io.Writer) error {
	h := &hookRun{rt: rt, cfg: cfg}
	if h.cfg.Idle <= 0 {
		h.cfg.Idle = DefaultIdle
	}
	if h.cfg.Timeout <= 0 {
		h.cfg.Timeout = DefaultTimeout
	}
	if len(h.cfg.Roots) == 0 {
		h.cfg.Roots = []string{"/"}
	}
	ctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	out, err := h.run(ctx, stdin)
	defer h.closeLog()
	if err != nil {
		fmt.Fprintf(stderr, "concord hook %s: %v (no context added)\n", rt.Name(), err)
		h.logger().Error("hook failed", "event", h.ev.Name, "error", err)
		return err
	}
	if len(out) > 0 {
		if _, err := stdout.Write(out); err != nil {
			h.logger().Error("hook answer not written", "event", h.ev.Name, "error", err)
			return err
		}
	}
	return nil
}

// hookRun is one event's handling.
type hookRun struct {
	rt  Runtime
	cfg Config
	ev  Event
	dir string

	logOnce sync.Once
	logFile *os.File
	log     *slog.Logger
}

func (h *hookRun) run(ctx context.Context, stdin io.Reader) ([]byte, error) {
	input, err := io.ReadAll(io.LimitReader(stdin, maxInput+1))
	if err != nil {
		return nil, fmt.Errorf("read the event: %w", err)
	}
	if len(input) > maxInput {
		return nil, fmt.Errorf("the event is over %d bytes", maxInput)
	}
	if h.ev, err = h.rt.Parse(input); err != nil {
		return nil, err
	}
	if h.ev.Kind == KindOther {
		return nil, nil
	}
	h.dir = h.cfg.Dir
	if h.dir == "" {
		if h.dir, err = Dir(); err != nil {
			return nil, err
		}
	} else if err := CheckDir(h.dir); err != nil {
		return nil, err
	}
	text, err := h.handle(ctx)
	if err != nil {
		return nil, err
	}
	return h.rt.Answer(h.ev, text), nil
}

// handle does what the event means and returns the text for the model.
func (h *hookRun) handle(ctx context.Context) (string, error) {
	ev := h.ev
	// Events after which nothing of the session is left to track need no
	// server: none is started for them.
	start := ev.Kind == KindToolDone || ev.Kind == KindPrompt || ev.Kind == KindSessionStart
	text, err := h.exchange(ctx, start)
	if errors.Is(err, errGone) && start && ctx.Err() == nil {
		// The server went away as we connected (its idle end, a crash):
		// once more, which starts a new one.
		h.logger().Warn("retrying", "error", err)
		text, err = h.exchange(ctx, start)
	}
	return text, err
}

// exchange does the event's calls on one connection: initialize (the first
// of a server builds its session, later ones attach to it) and what the
// event means, sent together.
func (h *hookRun) exchange(ctx context.Context, start bool) (string, error) {
	ev := h.ev
	conn, err := h.connect(ctx, start)
	if err != nil || conn == nil {
		return "", err
	}
	defer conn.Close()
	w := newWire(conn)
	init := &call{method: protocol.MethodInitialize, params: protocol.InitializeParams{
		ProtocolVersion: protocol.Version,
		ClientInfo:      &protocol.Info{Name: "concord-hook-" + h.rt.Name(), Version: h.cfg.Version},
		Roots:           h.cfg.Roots,
		Placement:       protocol.PlacementTail,
	}}
	// send sends init and calls; init's refusal is the error.
	send := func(calls ...*call) error {
		if err := w.send(append([]*call{init}, calls...)...); err != nil {
			return err
		}
		if init.err != nil {
			return fmt.Errorf("initialize: %w", init.err)
		}
		return nil
	}
	switch ev.Kind {
	case KindToolDone:
		rec := &call{method: protocol.MethodRecognize, params: protocol.RecognizeParams{Agent: ev.Agent, Anchor: ev.Anchor, Call: ev.Call}}
		var res protocol.SyncResult
		sync := &call{method: protocol.MethodSync, params: protocol.SyncParams{Agent: ev.Agent}, result: &res}
		if err := send(rec, sync); err != nil {
			return "", err
		}
		if rec.err != nil {
			// The server refused this call (a file outside the roots, a
			// tool it cannot read): nothing tracked, the sync still ran.
			h.logger().Warn("recognize refused", "tool", ev.Call.Tool, "anchor", ev.Anchor, "error", rec.err)
		}
		if sync.err != nil {
			return "", fmt.Errorf("sync: %w", sync.err)
		}
		return h.errata(res), nil
	case KindPrompt:
		var res protocol.SyncResult
		sync := &call{method: protocol.MethodSync, params: protocol.SyncParams{Agent: ev.Agent}, result: &res}
		if err := send(sync); err != nil {
			return "", err
		}
		if sync.err != nil {
			return "", fmt.Errorf("sync: %w", sync.err)
		}
		return h.errata(res), nil
	case KindSessionStart:
		if ev.Source == SourceCompact || ev.Source == SourceClear {
			return "", h.releaseAll(w, send, ev.Agent)
		}
		return "", send()
	case KindPreCompact, KindSubagentStop:
		return "", h.releaseAll(w, send, ev.Agent)
	case KindSessionEnd:
		shutdown := &call{method: protocol.MethodShutdown}
		if err := send(shutdown, &call{method: protocol.MethodExit, notify: true}); err != nil {
			return "", err
		}
		if shutdown.err != nil {
			return "", fmt.Errorf("shutdown: %w", shutdown.err)
		}
	}
	return "", nil
}

// connect reaches the session's server. Without start, a session with no
// server gives nil, nil.
func (h *hookRun) connect(ctx context.Context, start bool) (net.Conn, error) {
	sock := SocketPath(h.dir, h.rt.Name(), h.ev.Session)
	var conn net.Conn
	var err error
	if start {
		conn, err = dial(ctx, sock)
		if err != nil && startable(err) {
			var log *os.File
			if log, err = h.logWriter(); err != nil {
				return nil, err
			}
			args := append([]string{"--framing", protocol.FramingNewline, "--idle", h.cfg.Idle.String()}, h.cfg.ServeArgs...)
			conn, err = server{exe: h.cfg.Exe, args: args, log: log}.connectOrStart(ctx, sock)
		}
	} else if conn, err = dial(ctx, sock); startable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reach the session's server: %w", err)
	}
	// A connection outliving the hook's time would hang the agent: the
	// deadline bounds every read and write on it.
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	return conn, nil
}

// errata joins the errata of a sync's tail views: the note the runtime
// appends after the newest tool result. Under tail placement each is
// delivered once; the runtime keeps it in the transcript.
func (h *hookRun) errata(res protocol.SyncResult) string {
	var lines []string
	for _, v := range res.Blocks {
		switch {
		case v.Placement == protocol.PlacementTail && v.Erratum != "":
			lines = append(lines, v.Erratum)
		case v.Placement == "" && (v.View != "" || len(v.Sources) > 0 || v.Notice != ""):
			// An in-place view: a hook can only append, never rewrite.
			h.logger().Debug("in-place view not applied", "anchor", v.Anchor, "status", v.Status)
		}
	}
	return strings.Join(lines, "\n")
}

// releaseAll releases every block agent still has: its earlier tool
// results left its prompt (a compaction, a cleared context, a subagent
// that ended). The server lists them (sync full), so nothing is kept here.
func (h *hookRun) releaseAll(w *wire, send func(...*call) error, agent string) error {
	var res protocol.SyncResult
	sync := &call{method: protocol.MethodSync, params: protocol.SyncParams{Agent: agent, Full: true, PrefixRebuilt: true}, result: &res}
	if err := send(sync); err != nil {
		return err
	}
	if sync.err != nil {
		return fmt.Errorf("sync: %w", sync.err)
	}
	seen := map[string]bool{}
	var anchors []string
	for _, v := range res.Blocks {
		if v.Anchor != "" && !seen[v.Anchor] {
			seen[v.Anchor] = true
			anchors = append(anchors, v.Anchor)
		}
	}
	if len(anchors) == 0 {
		return nil
	}
	var rel protocol.ReleaseResult
	release := &call{method: protocol.MethodRelease, params: protocol.ReleaseParams{Agent: agent, Anchors: anchors}, result: &rel}
	if err := w.send(release); err != nil {
		return err
	}
	if release.err != nil {
		return fmt.Errorf("release: %w", release.err)
	}
	h.logger().Info("released", "event", h.ev.Name, "agent", agent, "blocks", len(rel.Released))
	return nil
}

// logWriter opens the directory's log (once).
func (h *hookRun) logWriter() (*os.File, error) {
	h.logOnce.Do(func() {
		if h.dir == "" {
			return
		}
		f, err := OpenLog(h.dir)
		if err != nil {
			return
		}
		h.logFile = f
	})
	if h.logFile == nil {
		return nil, errors.New("no log file")
	}
	return h.logFile, nil
}

// logger logs to the directory's log, or nowhere when it cannot be opened
// (stderr already says why the hook failed).
func (h *hookRun) logger() *slog.Logger {
	if h.log != nil {
		return h.log
	}
	if f, err := h.logWriter(); err == nil {
		h.log = slog.New(slog.NewTextHandler(f, nil)).With("hook", h.rt.Name(), "pid", strconv.Itoa(os.Getpid()))
		if h.ev.Session != "" {
			h.log = h.log.With("session", Name(h.rt.Name(), h.ev.Session))
		}
	} else {
		h.log = slog.New(slog.DiscardHandler)
	}
	return h.log
}

func (h *hookRun) closeLog() {
	if h.logFile != nil {
		h.logFile.Close()
	}
}
