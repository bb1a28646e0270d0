//go:build unix

package fileadapter

import (
	"fmt"
	"os"
	"strconv"
	"syscall"

	"github.com/concord-ctx/concord/runtime"
)

// openNoFollow opens p read-only, refusing a symlink as the last component
// (O_NOFOLLOW) and never blocking on a FIFO or device (O_NONBLOCK; it has no
// effect on a regular file's reads).
func openNoFollow(p string) (*os.File, error) {
	fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: p, Err: err}
	}
	return os.NewFile(uintptr(fd), p), nil
}

// confineOpen checks where the open file really is, where the system can
// tell (/proc/self/fd on Linux): a parent directory swapped for a symlink
// between the check and the open is caught here.
func (a *Adapter) confineOpen(p string, f *os.File) error {
	real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
	if err != nil || len(real) == 0 || real[0] != '/' {
		return nil // no /proc: the checks before the open stand
	}
	if !a.inside(real) {
		return fmt.Errorf("%s now resolves to %s: %w", p, real, runtime.ErrOutsideRoots)
	}
	return nil
}
