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

func wrapSource(op, uri string, err error) error {
	return fmt.Errorf("%s %s: %w", op, uri, err)
}
