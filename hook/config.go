package hook

import "time"

// Config configures Run. The zero value of every field but Exe has a
// default.
type Config struct {
	// Exe is the concord executable a missing server is started from
	// (`Exe serve --socket …`).
	Exe string
	// Dir is the socket directory (default Dir()); it is checked either way.
	Dir string
	// Roots are initialize's roots (default "/": every file the agent
	// reads is tracked, in the project or outside it).
	Roots []string
	// Idle ends a server after this long without a request (default
	// DefaultIdle); the session's end (KindSessionEnd) ends it at once.
	Idle time.Duration
	// Timeout bounds the whole hook, start of a server included (default
	// DefaultTimeout): a hung server costs the agent this much, never more.
	Timeout time.Duration
	// ServeArgs are more `serve` flags for a server this hook starts.
	ServeArgs []string
	// Version names this client in initialize.
	Version string
}

// Defaults of Config.
const (
	DefaultIdle    = time.Hour
	DefaultTimeout = 5 * time.Second
)
