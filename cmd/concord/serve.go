package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/concord-ctx/concord/feed"
	"github.com/concord-ctx/concord/protocol"
	"github.com/concord-ctx/concord/session"

	"github.com/spf13/pflag"

	"github.com/concord-ctx/concord/rpc"
)

type serveOptions struct {
	framing      string
	logFile      string
	logLevel     string
	rpcTrace     bool
	maxMessage   byteSize
	pollInterval time.Duration
	debounce     time.Duration
	maxSource    byteSize
	policyFile   string
	feed         session.FeedOptions
	socket       socketOptions // serve --socket: see socket.go
}

func serveFlags() (*pflag.FlagSet, *serveOptions) {
	o := &serveOptions{maxMessage: rpc.DefaultMaxMessage}
	flags := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	flags.StringVar(&o.framing, "framing", protocol.FramingContentLength, "message framing: content-length (LSP style) or newline (one JSON message per line)")
	flags.StringVar(&o.logFile, "log-file", "", "append logs to this file instead of stderr")
	flags.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	flags.BoolVar(&o.rpcTrace, "rpc-trace", false, "log every message read and written (at info level)")
	flags.Var(&o.maxMessage, "max-message", "largest message accepted (bytes; KiB, MiB suffixes allowed); larger ones are refused with -32600")
	flags.DurationVar(&o.pollInterval, "poll-interval", 2*time.Second, "how often the poll watch mode (and auto's fallback when fsnotify watches run out) stats the watched files")
	flags.DurationVar(&o.debounce, "debounce", 50*time.Millisecond, "quiet time after a file event before the file is re-hashed")
	flags.Var(&o.maxSource, "max-source", "largest file read as a source (bytes; 0 = the adapter's default); larger files are refused with -32011")
	flags.StringVar(&o.policyFile, "policy", "", "policy file (JSON, as initialize's \"policy\"); initialize's policy overrides it field by field")
	flags.StringVar(&o.feed.URL, "feed", "", "share changes with the Concord instances of this workspace on other hosts through NATS JetStream (nats://host:4222[,nats://...]; a build with -tags feed)")
	flags.StringVar(&o.feed.Name, "feed-name", "", "the workspace's feed name, the same on every host (letters, digits, '-', '_'); initialize's feed.name overrides it")
	flags.StringVar(&o.feed.Host, "feed-host", "", "this host's name in other hosts' notices (default: the hostname)")
	flags.StringVar(&o.feed.Root, "feed-root", "", "the shared workspace root that feed source paths are relative to (default: the first root)")
	flags.StringVar(&o.feed.CredsFile, "feed-creds", "", "NATS credentials file (JWT and NKey seed) for the feed")
	flags.StringVar(&o.feed.NKeyFile, "feed-nkey", "", "NATS NKey seed file for the feed")
	flags.IntVar(&o.feed.Replicas, "feed-replicas", 1, "replicas of the feed's JetStream stream when this instance creates it (3 on a 3-node cluster)")
	socketFlags(flags, &o.socket)
	return flags, o
}

func runServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	flags, o := serveFlags()
	if err := parseCommand(flags, "serve", args, stderr); err != nil {
		return err
	}
	if flags.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", flags.Arg(0))}
	}
	if o.framing != protocol.FramingContentLength && o.framing != protocol.FramingNewline {
		return usageError{fmt.Errorf("--framing must be %s or %s, not %q", protocol.FramingContentLength, protocol.FramingNewline, o.framing)}
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return usageError{fmt.Errorf("--log-level must be debug, info, warn or error, not %q", o.logLevel)}
	}
	if o.pollInterval <= 0 {
		return usageError{fmt.Errorf("--poll-interval must be positive")}
	}
	if f, ok := stdin.(*os.File); ok && isTerminal(f) {
		if o.framing != protocol.FramingNewline {
			// A person ran it by hand: waiting silently for Content-Length
			// frames nobody can type helps nobody.
			fmt.Fprint(stderr, "concord serve speaks JSON-RPC on stdin/stdout: agent runtimes launch it as a subprocess.\n"+
				"To type messages by hand, one JSON message per line: concord serve --framing=newline\n\n")
			printCommand(stderr, "serve")
			return exitStatus(2)
		}
		// Typing newline-framed JSON is a fine way to explore: say we listen.
		fmt.Fprint(stderr, "concord serve: reading one JSON-RPC message per line from the terminal; start with initialize, end with Ctrl-D.\n")
	}
	if o.feed.URL != "" && openFeed == nil {
		return fmt.Errorf("--feed: %w", feed.ErrNotBuilt)
	}
	var policy protocol.PolicyConfig
	if o.policyFile != "" {
		data, err := os.ReadFile(o.policyFile)
		if err != nil {
			return fmt.Errorf("--policy: %w", err)
		}
		if policy, err = rpc.ParsePolicy(data); err != nil {
			return fmt.Errorf("--policy %s: %w", o.policyFile, err)
		}
	}

	logw := stderr
	if o.logFile != "" {
		f, err := os.OpenFile(o.logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return fmt.Errorf("--log-file: %w", err)
		}
		defer f.Close()
		logw = f
	}
	log := slog.New(slog.NewTextHandler(logw, &slog.HandlerOptions{Level: level}))

	// A reader that went away must end us with an error on write, not kill
	// us with SIGPIPE.
	signal.Ignore(syscall.SIGPIPE)

	cfg := rpc.Config{
		NewSession: sessions(session.Options{PollInterval: o.pollInterval, Debounce: o.debounce, MaxSource: int64(o.maxSource),
			Feed: o.feed, OpenFeed: openFeed}),
		Name:       "concord",
		Version:    version,
		Framing:    o.framing,
		MaxMessage: int64(o.maxMessage),
		Policy:     policy,
		Logger:     log,
		Trace:      o.rpcTrace,
	}
	if o.socket.path != "" {
		return serveSocket(ctx, o.socket, cfg, logw, level)
	}
	status, err := rpc.Serve(ctx, stdin, stdout, cfg)
	if err != nil {
		return err
	}
	if status != 0 {
		return exitStatus(status)
	}
	return nil
}

// isTerminal reports whether f looks like a terminal: a character device
// other than /dev/null (which a supervisor may well give us as stdin).
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(fi, null)
}

// byteSize is a flag value in bytes that accepts KiB/MiB/GiB (and K/M/G)
// suffixes.
type byteSize int64

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }
func (b *byteSize) Type() string   { return "bytes" }

func (b *byteSize) Set(s string) error {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		n      int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.n
			break
		}
	}
	n, err := strconv.ParseInt(t, 10, 64)
	if err != nil || n < 0 {
		return fmt.Errorf("invalid size %q (want bytes, e.g. 1048576 or 16MiB)", s)
	}
	*b = byteSize(n * mult)
	return nil
}

// sessions hands the transport the sessions package session builds: the
// wiring knows no transport, so the two meet here.
func sessions(o session.Options) rpc.NewSessionFunc {
	build := session.New(o)
	return func(ctx context.Context, c rpc.SessionConfig) (rpc.Core, string, error) {
		core, watch, err := build(ctx, session.Config(c))
		if err != nil {
			return nil, "", err // not a typed nil in the interface
		}
		return core, watch, nil
	}
}
