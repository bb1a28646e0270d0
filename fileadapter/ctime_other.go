//go:build !linux

package fileadapter

import (
	"io/fs"
	"time"
)

// ctime falls back to the mtime where Stat_t's layout differs; the racy-clean
// rule still re-hashes recent writes.
func ctime(fi fs.FileInfo) time.Time { return fi.ModTime() }
