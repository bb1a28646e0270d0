package runtime

import (
	"errors"
	"fmt"

	"github.com/concord-ctx/concord/protocol"
)

// Errors adapters and the manager return; rpc maps them to wire error codes.
var (
	ErrOutsideRoots  = errors.New("source outside the workspace roots")
	ErrInvalidURI    = errors.New("invalid source uri")
	ErrUnknownScheme = errors.New("no adapter for uri scheme")
	ErrNotFound      = errors.New("source not found")
	ErrBinary        = errors.New("source is binary")
	ErrTooLarge      = errors.New("source exceeds size cap")
	ErrUnreadable    = errors.New("source unreadable")
	ErrInvalidParams = protocol.ErrInvalidParams // what every *protocol.FieldError is
	ErrClosed        = errors.New("manager closed")
)

// ErrUnknownBlock is returned by Release for a block id the session does not
// know (wire code -32012).
var ErrUnknownBlock = errors.New("unknown block or agent")

// fieldErr is invalid params naming a wire field, for the checks only the
// core can make (a keyed source's version); the params' own rules are
// protocol's (their Validate methods).
func fieldErr(field, format string, args ...any) error {
	return protocol.FieldErrorf(field, format, args...)
}

func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

// unavailable reports whether err says the source cannot be read now (as
// opposed to a request the core must refuse).
func unavailable(err error) bool {
	return errors.Is(err, ErrNotFound) || errors.Is(err, ErrBinary) || errors.Is(err, ErrTooLarge) || errors.Is(err, ErrUnreadable)
}

// errReason is the short reason a source could not be read, for notices.
func errReason(err error) string {
	switch {
	case errors.Is(err, ErrNotFound):
		return "not found"
	case errors.Is(err, ErrBinary):
		return "binary"
	case errors.Is(err, ErrTooLarge):
		return "too large"
	}
	return err.Error()
}

// SourceError says which source of a request failed, so the wire layer can
// name it without reading the message. Index is the source's position in an
// observation (0 for sourceChanged's single uri).
type SourceError struct {
	Op    string
	URI   string
	Index int
	Err   error
}

func (e *SourceError) Error() string { return fmt.Sprintf("%s %s: %v", e.Op, e.URI, e.Err) }
func (e *SourceError) Unwrap() error { return e.Err }

func wrapSource(op string, index int, uri string, err error) error {
	return &SourceError{Op: op, URI: uri, Index: index, Err: err}
}
