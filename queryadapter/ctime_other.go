//go:build !linux

package queryadapter

import (
	"io/fs"
	"time"
)

func ctime(fi fs.FileInfo) time.Time { return fi.ModTime() }
