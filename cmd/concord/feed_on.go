//go:build feed

package main

import "github.com/concord-ctx/concord/feed/natsfeed"

// openFeed is the NATS JetStream transport (built with -tags feed).
var openFeed = natsfeed.Open
