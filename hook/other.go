//go:build !unix

package hook

import (
	"context"
	"errors"
	"io"
)

var errUnix = errors.New("hooks need unix sockets (Linux, macOS)")

func FromEnv(cfg Config) (Config, error) { return cfg, nil }

func CheckDir(string) error { return errUnix }

func Run(_ context.Context, _ Runtime, _ Config, _ io.Reader, _, stderr io.Writer) error {
	_, _ = io.WriteString(stderr, "concord hook: "+errUnix.Error()+"\n")
	return errUnix
}
