//go:build unix

package hook

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// Dir is the directory of this user's hook sockets: $XDG_RUNTIME_DIR/concord
// when XDG_RUNTIME_DIR names an absolute directory, else
// <temp>/concord-<uid>. It is created 0700 when missing and checked (see
// CheckDir) either way.
func Dir() (string, error) {
	base, name := os.Getenv("XDG_RUNTIME_DIR"), "concord"
	if fi, err := os.Stat(base); base == "" || !filepath.IsAbs(base) || err != nil || !fi.IsDir() {
		base, name = os.TempDir(), "concord-"+strconv.Itoa(os.Getuid())
	}
	dir := filepath.Join(base, name)
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("socket directory: %w", err)
	}
	return dir, CheckDir(dir)
}

// CheckDir refuses a socket directory another user could reach into: it
// must be a directory itself (not a symlink to one), owned by this user,
// with no access for group or others. A directory someone else made at
// the expected path before us is refused, never used.
func CheckDir(dir string) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("socket directory %s is a symlink: refused", dir)
	case !fi.IsDir():
		return fmt.Errorf("socket directory %s is not a directory: refused", dir)
	case fi.Mode().Perm()&0o077 != 0:
		return fmt.Errorf("socket directory %s has mode %v, not 0700: refused", dir, fi.Mode().Perm())
	}
	if err := ownedByUs(dir, fi); err != nil {
		return fmt.Errorf("socket directory: %w", err)
	}
	return nil
}

// checkSocket refuses a socket path that holds anything but a socket of
// this user: a symlink (which could lead a connect elsewhere), a file, a
// socket of another user (which could impersonate the server). A missing
// path is fs.ErrNotExist.
func checkSocket(path string) error {
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return fmt.Errorf("%s is a symlink, not a socket: refused", path)
	case fi.Mode()&fs.ModeSocket == 0:
		return fmt.Errorf("%s is not a socket (%v): refused", path, fi.Mode().Type())
	}
	return ownedByUs(path, fi)
}

// ownedByUs refuses a file of another user.
func ownedByUs(path string, fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fmt.Errorf("%s: no owner information", path)
	}
	if uid := os.Getuid(); int(st.Uid) != uid {
		return fmt.Errorf("%s belongs to uid %d, not to this user (uid %d): refused", path, st.Uid, uid)
	}
	return nil
}

// Name is the file name stem of a session's socket, lock and log: a hash
// of the runtime and the session id, so that a session id (any string the
// runtime sends) never reaches a path, and two runtimes' sessions with the
// same id never meet. 32 hex digits keep the socket path under the 108
// bytes a unix socket address allows.
func Name(runtime, session string) string {
	h := sha256.Sum256([]byte(runtime + "\x00" + session))
	return hex.EncodeToString(h[:16])
}

// SocketPath is the socket of a session in dir.
func SocketPath(dir, runtime, session string) string {
	return filepath.Join(dir, Name(runtime, session)+".sock")
}

// LogPath is the log file every hook and server of dir appends to.
func LogPath(dir string) string { return filepath.Join(dir, "concord.log") }

// OpenLog opens the log file of dir for appending, 0600, refusing a
// symlink in its place or another user's file. One log per directory
// keeps nothing behind per session; a log past maxLog is moved to
// concord.log.1 first.
func OpenLog(dir string) (*os.File, error) {
	path := LogPath(dir)
	if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() && fi.Size() > maxLog {
		_ = os.Rename(path, path+".1")
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	fi, err := f.Stat()
	if err == nil {
		err = ownedByUs(path, fi)
	}
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file: refused", path)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("log file: %w", err)
	}
	return f, nil
}

const maxLog = 8 << 20
