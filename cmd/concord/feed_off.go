//go:build !feed

package main

import "github.com/concord-ctx/concord/feed"

// openFeed is nil without -tags feed: the NATS client would add about 5.5 MB
// to every plugin binary, and most sessions run on one host.
var openFeed feed.OpenFunc
