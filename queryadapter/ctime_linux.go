package queryadapter

import (
	"io/fs"
	"syscall"
	"time"
)

// ctime is the inode change time: a rewrite that restored its mtime
// still moves it.
func ctime(fi fs.FileInfo) time.Time {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return time.Unix(int64(st.Ctim.Sec), int64(st.Ctim.Nsec))
	}
	return fi.ModTime()
}
