//go:build unix

package hook

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// dial connects to the server listening on sock, after checking that sock
// is this user's socket (a symlink or another user's socket is refused,
// never connected to). A missing socket is fs.ErrNotExist; a socket nobody
// listens on (a server that died), syscall.ECONNREFUSED.
func dial(sock string) (*conn, error) {
	if err := checkSocket(sock); err != nil {
		return nil, err
	}
	return dialUnix(sock)
}

// startable reports whether a dial failed for want of a live server
// (nothing there, or a stale socket), as opposed to a refused path.
func startable(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ECONNREFUSED)
}

// server is how a session's server is started.
type server struct {
	exe  string   // the concord executable
	args []string // serve's flags after --socket PATH
	log  *os.File // the server's stdout and stderr (the directory's log)
}

// connectOrStart connects to the server of sock, starting one when there
// is none. The start happens under an exclusive lock (flock on
// sock+".lock"), so parallel hooks of one session start one server: the
// others wait for the lock, then find it listening. A stale socket (its
// server died) is removed and replaced under the same lock.
func (sv server) connectOrStart(ctx context.Context, sock string) (*conn, error) {
	conn, err := dial(sock)
	if err == nil || !startable(err) {
		return conn, err
	}
	unlock, err := lock(ctx, sock+".lock")
	if err != nil {
		return nil, err
	}
	defer unlock()
	conn, err = dial(sock) // another hook may have started it meanwhile
	if err == nil || !startable(err) {
		return conn, err
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		// Stale: checked to be our socket by dial; nobody listens.
		if err := os.Remove(sock); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("remove stale socket: %w", err)
		}
	}
	return sv.start(ctx, sock)
}

// start runs `concord serve --socket sock …` detached (a session of its
// own, stdin /dev/null, output to the log, working directory /), so it
// outlives this hook and no terminal signal reaches it, and waits until
// it accepts connections.
func (sv server) start(ctx context.Context, sock string) (*conn, error) {
	cmd := exec.Command(sv.exe, append([]string{"serve", "--socket", sock}, sv.args...)...)
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = sv.log, sv.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the session's server: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	tick := time.NewTicker(3 * time.Millisecond)
	defer tick.Stop()
	for {
		conn, err := dial(sock)
		if err == nil {
			return conn, nil
		}
		if !startable(err) {
			return nil, err
		}
		select {
		case err := <-exited:
			return nil, fmt.Errorf("the session's server exited at start (%v); see %s", err, sv.log.Name())
		case <-ctx.Done():
			return nil, fmt.Errorf("the session's server did not listen in time: %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// lock takes an exclusive flock on path (created 0600, never through a
// symlink), polling so that ctx bounds the wait: a hook never hangs on a
// stuck holder.
func lock(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	fi, err := f.Stat()
	if err == nil {
		err = ownedByUs(path, fi)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock: %w", err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing releases the lock
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, ctx.Err())
		case <-time.After(2 * time.Millisecond):
		}
	}
}
