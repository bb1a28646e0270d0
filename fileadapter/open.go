package fileadapter

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/concord-ctx/concord/runtime"
)

// testHookBeforeOpen runs between the path checks and the open, so a test
// can swap the file for a FIFO or a symlink in that window.
var testHookBeforeOpen func(path string)

// testHookReader wraps the reader of a file's content, so a test can fail a
// read midway (a disk error, ENOSPC on a network file system).
var testHookReader func(io.Reader) io.Reader

// confine resolves p's symlinks now and refuses a path that leads outside
// the roots. A source id was inside the roots when it was normalised, but a
// file or one of its parent directories can be replaced by a symlink later:
// the roots hold on every read and stamp, not only at observe.
func (a *Adapter) confine(p string) (string, error) {
	rp, err := filepath.EvalSymlinks(p)
	if err != nil {
		return "", classify(p, err)
	}
	if !a.inside(rp) {
		return "", fmt.Errorf("%s now resolves to %s: %w", p, rp, runtime.ErrOutsideRoots)
	}
	return rp, nil
}

// belowRoot is p relative to root r ("" for r itself, no leading
// separator), and whether p is r or below it. A root that ends in a
// separator (the file system's root, "/") holds every path that starts
// with it.
func belowRoot(p, r string) (string, bool) {
	rel, ok := strings.CutPrefix(p, r)
	switch {
	case !ok:
		return "", false
	case rel == "" || strings.HasSuffix(r, string(filepath.Separator)):
		return rel, true
	case rel[0] != filepath.Separator:
		return "", false // "/a/bc" is not below "/a/b"
	}
	return rel[1:], true
}

// lstatConfined is the file info of p, checked against the roots at the
// cost of one lstat per path element below its root: a canonical id has no
// symlink in it, so while none has appeared the path is where it was. A
// symlink that appeared (the root's own ancestors aside) is resolved and
// judged (confine).
func (a *Adapter) lstatConfined(p string) (fs.FileInfo, error) {
	for _, r := range a.roots {
		rel, ok := belowRoot(p, r)
		if !ok {
			continue
		}
		cur := r
		fi, err := os.Lstat(r) // the root itself swapped for a symlink
		if err != nil || fi.Mode()&fs.ModeSymlink != 0 {
			break
		}
		fi = nil
		for _, part := range strings.Split(rel, string(filepath.Separator)) {
			if part == "" {
				continue
			}
			cur = filepath.Join(cur, part)
			var err error
			if fi, err = os.Lstat(cur); err != nil {
				return nil, classify(p, err)
			}
			if fi.Mode()&fs.ModeSymlink != 0 {
				if _, err := a.confine(p); err != nil {
					return nil, err
				}
				if fi, err = os.Stat(p); err != nil {
					return nil, classify(p, err)
				}
				return fi, nil
			}
		}
		if fi == nil { // p is the root itself
			return os.Stat(p)
		}
		return fi, nil
	}
	if _, err := a.confine(p); err != nil {
		return nil, err
	}
	fi, err := os.Stat(p)
	if err != nil {
		return nil, classify(p, err)
	}
	return fi, nil
}

// openConfined opens the regular file at p for reading without following a
// symlink swapped in after the check and without blocking on a FIFO or a
// device: the mode is checked before the open (Lstat of the resolved path)
// and after it (Fstat of what was opened), and the open is non-blocking.
func (a *Adapter) openConfined(p string) (*os.File, fs.FileInfo, error) {
	rp, err := a.confine(p)
	if err != nil {
		return nil, nil, err
	}
	fi, err := os.Lstat(rp)
	if err != nil {
		return nil, nil, classify(p, err)
	}
	if err := regular(p, fi); err != nil {
		return nil, nil, err
	}
	if testHookBeforeOpen != nil {
		testHookBeforeOpen(rp)
	}
	f, err := openNoFollow(rp)
	if err != nil {
		return nil, nil, classify(p, err)
	}
	fi, err = f.Stat()
	if err == nil {
		err = regular(p, fi)
	}
	if err == nil {
		err = a.confineOpen(p, f)
	}
	if err != nil {
		f.Close()
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = classify(p, err)
		}
		return nil, nil, err
	}
	return f, fi, nil
}

// regular refuses anything but a regular file: a directory, FIFO, socket or
// device is unreadable as a source.
func regular(p string, fi fs.FileInfo) error {
	switch {
	case fi.IsDir():
		return fmt.Errorf("read %s: is a directory: %w", p, runtime.ErrUnreadable)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("read %s: not a regular file (%s): %w", p, fi.Mode().Type(), runtime.ErrUnreadable)
	}
	return nil
}
