//go:build !linux

package fileadapter

import "time"

// dirWalker has no fast path here: every file takes the slow one.
type dirWalker struct{}

func (a *Adapter) newDirWalker() *dirWalker { return &dirWalker{} }

func (w *dirWalker) close() {}

// rootCache has nothing to keep here.
type rootCache struct{}

func (a *Adapter) closeRoots() {}

// plainPath has no fast path here: Normalize resolves every path.
func (a *Adapter) plainPath(string) bool { return false }

func (w *dirWalker) stampFiles(string, []string, time.Time, []string, []bool, bool) (dev, ino uint64) {
	return 0, 0
}
