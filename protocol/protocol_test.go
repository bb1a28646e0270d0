package protocol

import (
	"encoding/json"
	"testing"
)

// TestErrorMessage: the Go error of a JSON-RPC error names the code, and
// the data when there is some.
func TestErrorMessage(t *testing.T) {
	for _, tc := range []struct {
		e    Error
		want string
	}{
		{Error{Code: CodeUnknownBlock, Message: "release: unknown block"}, "concord error -32012: release: unknown block"},
		{Error{Code: CodeInvalidParams, Message: "invalid params: agent: required", Data: json.RawMessage(`{"field":"agent"}`)},
			`concord error -32602: invalid params: agent: required (data {"field":"agent"})`},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}
