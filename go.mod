module github.com/concord-ctx/concord

go 1.26

require (
	github.com/fsnotify/fsnotify v1.10.1 // indirect
	github.com/sergi/go-diff v1.4.5 // indirect
	github.com/sourcegraph/jsonrpc2 v0.2.3 // indirect
	github.com/spf13/pflag v1.1.0 // indirect
	golang.org/x/sys v0.13.0 // indirect
)
