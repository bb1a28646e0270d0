//go:build !unix

package fileadapter

import "io/fs"

func inode(fs.FileInfo) uint64 { return 0 }
