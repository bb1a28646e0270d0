package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/concord-ctx/concord/protocol"
	"github.com/concord-ctx/concord/runtime"
)

// Error is the JSON-RPC error object (protocol.Error).
type Error = protocol.Error

func newError(code int64, msg string, data any) *Error {
	e := &Error{Code: code, Message: msg}
	if data != nil {
		if b, err := json.Marshal(data); err == nil {
			e.Data = b
		}
	}
	return e
}

// ErrorFor is the wire error a method's failure is answered with, as this
// server answers it: its code by the cause (invalid params, outside the
// roots, a closed session, ...), internal error otherwise.
func ErrorFor(method string, err error) *Error { return toError(method, err) }

// wire converts to jsonrpc2's type. jsonrpc2 recognises its *Error by type
// assertion only, so handlers hand it this value unwrapped.
func wire(e *Error) *jsonrpc2.Error {
	w := &jsonrpc2.Error{Code: e.Code, Message: e.Message}
	if len(e.Data) > 0 {
		d := json.RawMessage(e.Data)
		w.Data = &d
	}
	return w
}

// fieldError is invalid params naming the offending wire field: the
// protocol's type, so that the server, the core and the params' Validate
// report fields one way.
type fieldError = protocol.FieldError

func invalidField(field, format string, args ...any) error {
	return protocol.FieldErrorf(field, format, args...)
}

// toError maps any handler error to the wire; this is the one place where
// core errors become codes. uri is the source the request was about, when
// the request names exactly one.
func toError(method string, err error) *Error {
	msg := err.Error()
	if !strings.HasPrefix(msg, method) {
		msg = method + ": " + msg
	}
	var we *Error
	var fe *fieldError
	// The failing source, when the core names one: its uri and wire field.
	uri, field := "", "uri"
	var se *runtime.SourceError
	if errors.As(err, &se) {
		uri = se.URI
		if method == protocol.MethodObserve {
			field = fmt.Sprintf("sources[%d].uri", se.Index)
		}
	}
	switch {
	case errors.As(err, &we):
		return we
	case errors.Is(err, runtime.ErrUnknownBlock):
		field := "agent"
		if errors.As(err, &fe) {
			field = fe.Field // the core names the offending entry: blocks[2]
		}
		return newError(protocol.CodeUnknownBlock, msg, map[string]string{"field": field})
	case errors.As(err, &fe):
		return newError(protocol.CodeInvalidParams, fmt.Sprintf("invalid params: %s: %s", fe.Field, fe.Reason), map[string]string{"field": fe.Field})
	case errors.Is(err, runtime.ErrOutsideRoots):
		return newError(protocol.CodeOutsideRoots, msg, map[string]string{"uri": uri})
	case errors.Is(err, runtime.ErrNotFound):
		return unavailable(msg, uri, "not_found")
	case errors.Is(err, runtime.ErrBinary):
		return unavailable(msg, uri, "binary")
	case errors.Is(err, runtime.ErrTooLarge):
		return unavailable(msg, uri, "too_large")
	case errors.Is(err, runtime.ErrUnreadable):
		return unavailable(msg, uri, "unreadable")
	case errors.Is(err, runtime.ErrUnknownScheme), errors.Is(err, runtime.ErrInvalidURI):
		return newError(protocol.CodeInvalidParams, "invalid params: "+msg, map[string]string{"field": field, "uri": uri})
	case errors.Is(err, runtime.ErrInvalidParams):
		return newError(protocol.CodeInvalidParams, "invalid params: "+msg, nil)
	case errors.Is(err, runtime.ErrClosed):
		return newError(protocol.CodeInvalidRequest, fmt.Sprintf("%s: session is shut down", method), nil)
	case errors.Is(err, context.Canceled):
		return newError(protocol.CodeRequestCancelled, fmt.Sprintf("%s: request cancelled", method), nil)
	}
	return newError(protocol.CodeInternalError, msg, nil)
}

func unavailable(msg, uri, reason string) *Error {
	return newError(protocol.CodeUnavailable, msg, map[string]string{"uri": uri, "reason": reason})
}
