package rpc

import (
	"testing"

	"github.com/concord-ctx/concord/protocol"
)

// TestMethodSpecsMatchDispatch: protocol.Methods (what the bindings' types are
// generated from) lists exactly the client-to-server methods this server
// dispatches, plus $/cancelRequest, which the server handles before dispatch.
func TestMethodSpecsMatchDispatch(t *testing.T) {
	specs := map[string]bool{}
	for _, m := range protocol.Methods {
		if m.ToClient {
			continue
		}
		specs[m.Name] = true
		if _, ok := methods[m.Name]; !ok && m.Name != protocol.MethodCancelRequest {
			t.Errorf("protocol.Methods lists %s, which the server does not dispatch", m.Name)
		}
	}
	for name := range methods {
		if !specs[name] {
			t.Errorf("the server dispatches %s, missing from protocol.Methods (the generated bindings would lack its types)", name)
		}
	}
}
