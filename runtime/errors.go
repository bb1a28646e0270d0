package runtime

import (
	"errors"
	"fmt"
)

func isNotFound(err error) bool { return errors.Is(err, ErrNotFound) }

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
