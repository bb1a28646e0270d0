package runtime

import (
	"errors"
	"fmt"
)

// Optional Adapter extensions. The core checks for them with a type
// assertion, so an adapter implements only what applies to its sources.

// Reporter is implemented by adapters whose sources' versions and content the
// client reports (keyed sources). The manager hands it every version and text
// the client states, in observe and sourceChanged, so that Stamp and Read can
// answer from what was reported instead of asking the client again. Observe
// requires a version for the sources of a Reporter.
type Reporter interface {
	Report(id, version string, text *string)
}

// Displayer is implemented by adapters whose sources have a friendlier name
// than their URI for notices (the file adapter: the plain path).
type Displayer interface {
	Display(id string) string
}

// ErrUnknownBlock is returned by Release for a block id the session does not
// know (wire code -32012).
var ErrUnknownBlock = errors.New("unknown block or agent")

// FieldError is an error naming the offending request field, e.g.
// "sources[0].uri". It wraps Err, or ErrInvalidParams when Err is nil.
type FieldError struct {
	Field  string
	Reason string
	Err    error
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }

// Unwrap makes errors.Is(err, ErrInvalidParams) (or Err) true.
func (e *FieldError) Unwrap() error {
	if e.Err != nil {
		return e.Err
	}
	return ErrInvalidParams
}

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Validate checks the actions and age of one policy layer; field prefixes the
// field names in the error ("policy").
func (p Policy) Validate(field string) error {
	for _, f := range []struct {
		name string
		a    Action
	}{{"local", p.Local}, {"drift", p.Drift}} {
		switch f.a {
		case "", Patch, Refresh, Annotate, Suppress:
		default:
			return fieldErr(field+"."+f.name, "unknown action %q (want patch, refresh, annotate or suppress)", f.a)
		}
	}
	if p.MaxAgeTurns != nil && *p.MaxAgeTurns < 0 {
		return fieldErr(field+".maxAgeTurns", "must be >= 0")
	}
	return nil
}

// Validate checks every layer of a policy configuration.
func (c PolicyConfig) Validate() error {
	if err := c.Global.Validate("policy.global"); err != nil {
		return err
	}
	for k, p := range c.ByType {
		if err := p.Validate("policy.byType." + k); err != nil {
			return err
		}
	}
	for k, p := range c.BySource {
		if err := p.Validate("policy.bySource." + k); err != nil {
			return err
		}
	}
	return nil
}
