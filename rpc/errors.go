package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/concord-ctx/concord/runtime"
)

// Error codes of docs/protocol.md.
const (
	CodeParseError       = -32700
	CodeInvalidRequest   = -32600
	CodeMethodNotFound   = -32601
	CodeInvalidParams    = -32602
	CodeInternalError    = -32603
	CodeNotInitialized   = -32002
	CodeUnsupportedProto = -32003
	CodeOutsideRoots     = -32010
	CodeUnavailable      = -32011
	CodeUnknownBlock     = -32012
	CodeRequestCancelled = -32800
)

// Error is a JSON-RPC error object, as the server sends it and as Client
// calls return it (use errors.As to read the code).
type Error struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string {
	if len(e.Data) > 0 {
		return fmt.Sprintf("concord error %d: %s (data %s)", e.Code, e.Message, e.Data)
	}
	return fmt.Sprintf("concord error %d: %s", e.Code, e.Message)
}

func newError(code int64, msg string, data any) *Error {
	e := &Error{Code: code, Message: msg}
	if data != nil {
		if b, err := json.Marshal(data); err == nil {
			e.Data = b
		}
	}
	return e
}

// wire converts to jsonrpc2's type. jsonrpc2 recognises its *Error by type
// assertion only, so handlers hand it this value unwrapped.
func (e *Error) wire() *jsonrpc2.Error {
	w := &jsonrpc2.Error{Code: e.Code, Message: e.Message}
	if len(e.Data) > 0 {
		d := json.RawMessage(e.Data)
		w.Data = &d
	}
	return w
}

func fromWire(e *jsonrpc2.Error) *Error {
	out := &Error{Code: e.Code, Message: e.Message}
	if e.Data != nil {
		out.Data = append(json.RawMessage(nil), *e.Data...)
	}
	return out
}

// fieldError is invalid params naming the offending field.
type fieldError struct {
	Field  string
	Reason string
}

func (e *fieldError) Error() string { return e.Field + ": " + e.Reason }

func invalidField(field, format string, args ...any) error {
	return &fieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
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
	var rfe *runtime.FieldError
	// The failing source, when the core names one: its uri and wire field.
	uri, field := "", "uri"
	var se *runtime.SourceError
	if errors.As(err, &se) {
		uri = se.URI
		if method == MethodObserve {
			field = fmt.Sprintf("sources[%d].uri", se.Index)
		}
	}
	switch {
	case errors.As(err, &we):
		return we
	case errors.As(err, &fe):
		return newError(CodeInvalidParams, fmt.Sprintf("invalid params: %s: %s", fe.Field, fe.Reason), map[string]string{"field": fe.Field})
	case errors.Is(err, runtime.ErrUnknownBlock):
		field := "agent"
		if errors.As(err, &rfe) {
			field = rfe.Field // the core names the offending entry: blocks[2]
		}
		return newError(CodeUnknownBlock, msg, map[string]string{"field": field})
	case errors.As(err, &rfe):
		return newError(CodeInvalidParams, fmt.Sprintf("invalid params: %s: %s", rfe.Field, rfe.Reason), map[string]string{"field": rfe.Field})
	case errors.Is(err, runtime.ErrOutsideRoots):
		return newError(CodeOutsideRoots, msg, map[string]string{"uri": uri})
	case errors.Is(err, runtime.ErrNotFound):
		return unavailable(msg, uri, "not_found")
	case errors.Is(err, runtime.ErrBinary):
		return unavailable(msg, uri, "binary")
	case errors.Is(err, runtime.ErrTooLarge):
		return unavailable(msg, uri, "too_large")
	case errors.Is(err, runtime.ErrUnreadable):
		return unavailable(msg, uri, "unreadable")
	case errors.Is(err, runtime.ErrUnknownScheme), errors.Is(err, runtime.ErrInvalidURI):
		return newError(CodeInvalidParams, "invalid params: "+msg, map[string]string{"field": field, "uri": uri})
	case errors.Is(err, runtime.ErrInvalidParams):
		return newError(CodeInvalidParams, "invalid params: "+msg, nil)
	case errors.Is(err, runtime.ErrClosed):
		return newError(CodeInvalidRequest, fmt.Sprintf("%s: session is shut down", method), nil)
	case errors.Is(err, context.Canceled):
		return newError(CodeRequestCancelled, fmt.Sprintf("%s: request cancelled", method), nil)
	}
	return newError(CodeInternalError, msg, nil)
}

func unavailable(msg, uri, reason string) *Error {
	return newError(CodeUnavailable, msg, map[string]string{"uri": uri, "reason": reason})
}
