//go:build unix

package hook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
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
	if h.ev, err = Peek(h.rt, input); err != nil {
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
	return h.handle(ctx, input)
}

// handle carries the event to the session's server and returns its
// answer, what the hook prints.
func (h *hookRun) handle(ctx context.Context, input []byte) ([]byte, error) {
	ev := h.ev
	// Events after which nothing of the session is left to track need no
	// server: none is started for them.
	start := ev.Kind == KindToolDone || ev.Kind == KindPrompt || ev.Kind == KindSessionStart
	out, err := h.exchange(ctx, start, input)
	if errors.Is(err, errGone) && start && ctx.Err() == nil {
		// The server went away as we connected (its idle end, a crash):
		// once more, which starts a new one.
		h.logger().Warn("retrying", "error", err)
		out, err = h.exchange(ctx, start, input)
	}
	return out, err
}

// exchange sends the event to the session's server, with initialize's
// params (they build the session when the server has none yet): one
// request, one answer.
func (h *hookRun) exchange(ctx context.Context, start bool, input []byte) ([]byte, error) {
	c, err := h.connect(ctx, start)
	if err != nil || c == nil {
		return nil, err
	}
	defer c.Close()
	out, err := c.roundTrip(hookRequest{
		runtime: h.rt.Name(),
		client:  "concord-hook-" + h.rt.Name(),
		version: h.cfg.Version,
		roots:   h.cfg.Roots,
		event:   input,
	})
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return nil, fmt.Errorf("the session's server: %w", err)
	}
	if err != nil {
		return nil, err
	}
	return []byte(out), nil
}

// connect reaches the session's server. Without start, a session with no
// server gives nil, nil.
func (h *hookRun) connect(ctx context.Context, start bool) (*conn, error) {
	sock := SocketPath(h.dir, h.rt.Name(), h.ev.Session)
	var c *conn
	var err error
	if start {
		c, err = dial(sock)
		if err != nil && startable(err) {
			var log *os.File
			if log, err = h.logWriter(); err != nil {
				return nil, err
			}
			args := append([]string{"--framing", protocol.FramingNewline, "--idle", h.cfg.Idle.String()}, h.cfg.ServeArgs...)
			c, err = server{exe: h.cfg.Exe, args: args, log: log}.connectOrStart(ctx, sock)
		}
	} else if c, err = dial(sock); startable(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reach the session's server: %w", err)
	}
	// A connection outliving the hook's time would hang the agent: the
	// deadline bounds every read and write on it.
	if dl, ok := ctx.Deadline(); ok {
		if err := c.setDeadline(dl); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
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
