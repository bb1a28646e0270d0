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
	"github.com/concord-ctx/concord/rpc/client"
)

// Config configures Run. The zero value of every field but Exe has a
// default.
type Config struct {
	// Exe is the concord executable a missing server is started from
	// (`Exe serve --socket …`).
	Exe string
	// Dir is the socket directory (default Dir()); it is checked either way.
	Dir string
	// Roots are initialize's roots (default "/": every file the agent
	// reads is tracked, in the project or outside it).
	Roots []string
	// Idle ends a server after this long without a request (default
	// DefaultIdle); the session's end (KindSessionEnd) ends it at once.
	Idle time.Duration
	// Timeout bounds the whole hook, start of a server included (default
	// DefaultTimeout): a hung server costs the agent this much, never more.
	Timeout time.Duration
	// ServeArgs are more `serve` flags for a server this hook starts.
	ServeArgs []string
	// Version names this client in initialize.
	Version string
}

// Defaults of Config.
const (
	DefaultIdle    = time.Hour
	DefaultTimeout = 5 * time.Second
	maxInput       = 64 << 20
)

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
	c, err := h.connect(ctx, start)
	if errors.Is(err, errGone) && start && ctx.Err() == nil {
		// The server went away as we connected (its idle end, a crash):
		// once more, which starts a new one.
		h.logger().Warn("retrying", "error", err)
		c, err = h.connect(ctx, start)
	}
	if err != nil || c == nil {
		return "", err
	}
	defer c.Close()
	switch ev.Kind {
	case KindToolDone:
		var res protocol.RecognizeResult
		err := c.Call(ctx, protocol.MethodRecognize, protocol.RecognizeParams{Agent: ev.Agent, Anchor: ev.Anchor, Call: ev.Call}, &res)
		var pe *protocol.Error
		switch {
		case errors.As(err, &pe):
			// The server refused this call (a file outside the roots, a
			// runtime it does not know): nothing tracked, the sync still runs.
			h.logger().Warn("recognize refused", "tool", ev.Call.Tool, "anchor", ev.Anchor, "error", pe.Message)
		case err != nil:
			return "", fmt.Errorf("recognize: %w", err)
		}
		return h.errata(ctx, c, ev.Agent)
	case KindPrompt:
		return h.errata(ctx, c, ev.Agent)
	case KindSessionStart:
		if ev.Source == SourceCompact || ev.Source == SourceClear {
			return "", h.releaseAll(ctx, c, ev.Agent)
		}
		return "", nil
	case KindPreCompact, KindSubagentStop:
		return "", h.releaseAll(ctx, c, ev.Agent)
	case KindSessionEnd:
		if err := c.Call(ctx, protocol.MethodShutdown, nil, nil); err != nil {
			return "", fmt.Errorf("shutdown: %w", err)
		}
		return "", c.Notify(ctx, protocol.MethodExit, nil)
	}
	return "", nil
}

// connect reaches the session's server and initializes the connection
// (the first initialize of a server builds its session; later ones attach
// to it). Without start, a session with no server gives nil, nil.
func (h *hookRun) connect(ctx context.Context, start bool) (*client.Client, error) {
	sock := SocketPath(h.dir, h.rt.Name(), h.ev.Session)
	var conn net.Conn
	var err error
	if start {
		var log *os.File
		if log, err = h.logWriter(); err != nil {
			return nil, err
		}
		args := append([]string{"--framing", protocol.FramingNewline, "--idle", h.cfg.Idle.String()}, h.cfg.ServeArgs...)
		conn, err = server{exe: h.cfg.Exe, args: args, log: log}.connectOrStart(ctx, sock)
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
	c := client.Options{Framing: protocol.FramingNewline}.Connect(conn)
	err = c.Call(ctx, protocol.MethodInitialize, protocol.InitializeParams{
		ProtocolVersion: protocol.Version,
		ClientInfo:      &protocol.Info{Name: "concord-hook-" + h.rt.Name(), Version: h.cfg.Version},
		Roots:           h.cfg.Roots,
		Placement:       protocol.PlacementTail,
	}, nil)
	if err != nil {
		c.Close()
		var pe *protocol.Error
		if !errors.As(err, &pe) {
			err = fmt.Errorf("%w: %w", errGone, err)
		}
		return nil, fmt.Errorf("initialize: %w", err)
	}
	return c, nil
}

// errGone is a server that took the connection but did not answer it.
var errGone = errors.New("the server closed the connection")

// errata syncs agent and joins the errata of its tail views: the note the
// runtime appends after the newest tool result. Under tail placement each
// is delivered once; the runtime keeps it in the transcript.
func (h *hookRun) errata(ctx context.Context, c *client.Client, agent string) (string, error) {
	var res protocol.SyncResult
	if err := c.Call(ctx, protocol.MethodSync, protocol.SyncParams{Agent: agent}, &res); err != nil {
		return "", fmt.Errorf("sync: %w", err)
	}
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
	return strings.Join(lines, "\n"), nil
}

// releaseAll releases every block agent still has: its earlier tool
// results left its prompt (a compaction, a cleared context, a subagent
// that ended). The server lists them (sync full), so nothing is kept here.
func (h *hookRun) releaseAll(ctx context.Context, c *client.Client, agent string) error {
	var res protocol.SyncResult
	if err := c.Call(ctx, protocol.MethodSync, protocol.SyncParams{Agent: agent, Full: true, PrefixRebuilt: true}, &res); err != nil {
		return fmt.Errorf("sync: %w", err)
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
	if err := c.Call(ctx, protocol.MethodRelease, protocol.ReleaseParams{Agent: agent, Anchors: anchors}, &rel); err != nil {
		return fmt.Errorf("release: %w", err)
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
