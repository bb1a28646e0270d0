//go:build !unix

package hook

import (
	"context"
	"errors"
	"io"
	"time"
)

var errUnix = errors.New("hooks need unix sockets (Linux, macOS)")

// Config configures Run (unix only).
type Config struct {
	Exe       string
	Dir       string
	Roots     []string
	Idle      time.Duration
	Timeout   time.Duration
	ServeArgs []string
	Version   string
}

const (
	DefaultIdle    = time.Hour
	DefaultTimeout = 5 * time.Second
)

func FromEnv(cfg Config) (Config, error) { return cfg, nil }

func CheckDir(string) error { return errUnix }

func Run(_ context.Context, _ Runtime, _ Config, _ io.Reader, _, stderr io.Writer) error {
	_, _ = io.WriteString(stderr, "concord hook: "+errUnix.Error()+"\n")
	return errUnix
}
