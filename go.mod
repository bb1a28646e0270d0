module github.com/concord-ctx/concord

go 1.26.0

require (
	github.com/fsnotify/fsnotify v1.10.1
	github.com/pkoukk/tiktoken-go v0.1.8
	github.com/pkoukk/tiktoken-go-loader v0.0.2
	github.com/sergi/go-diff v1.4.5
	github.com/sourcegraph/jsonrpc2 v0.2.3
	github.com/spf13/pflag v1.1.0
)

require (
	github.com/dlclark/regexp2 v1.10.0 // indirect
	github.com/google/uuid v1.3.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
	mvdan.cc/sh/v3 v3.14.1 // indirect
)
