package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/concord-ctx/concord/protocol"
	"github.com/concord-ctx/concord/rpc/internal/frame"
)

// TestInitializeOptionsPassedOn: initialize's options reach NewSession as
// the client sent them, in one struct, with only the operator's policy laid
// under initialize's and the watch mode defaulted; bad options are refused
// before any session is built, naming the wire field.
func TestInitializeOptionsPassedOn(t *testing.T) {
	operator := protocol.PolicyConfig{Global: protocol.Policy{Drift: protocol.Annotate}}
	var got []SessionConfig
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err := Serve(context.Background(), inR, outW, Config{
			Policy: operator,
			NewSession: func(ctx context.Context, cfg SessionConfig) (Core, string, error) {
				got = append(got, cfg)
				return faultyCore{}, protocol.WatchHooks, nil
			},
		})
		if err != nil {
			t.Error(err)
		}
		outW.Close()
	}()
	conn := jsonrpc2.NewConn(context.Background(), frame.New(outR, inW, inW, protocol.FramingContentLength, 0), jsonrpc2.HandlerWithError(func(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request) (any, error) { return nil, nil }))
	ctx := context.Background()

	for _, tc := range []struct{ params, field string }{
		{`{"protocolVersion":1,"roots":5}`, "roots"},                                               // a wrong JSON type: the decoder's
		{`{"protocolVersion":1,"roots":[],"placement":"end"}`, "placement"},                        // Validate's
		{`{"protocolVersion":1,"roots":[],"cache":{"ttlSeconds":0}}`, "cache.ttlSeconds"},          // Validate's
		{`{"protocolVersion":1,"roots":[],"locator":{"contextLines":-2}}`, "locator.contextLines"}, // Validate's
	} {
		err := conn.Call(ctx, protocol.MethodInitialize, json.RawMessage(tc.params), nil)
		var we *jsonrpc2.Error
		var data map[string]string
		if !errors.As(err, &we) || we.Code != protocol.CodeInvalidParams || we.Data == nil || json.Unmarshal(*we.Data, &data) != nil || data["field"] != tc.field {
			t.Fatalf("%s: err %v, want invalid params naming %s", tc.params, err, tc.field)
		}
	}
	if len(got) != 0 {
		t.Fatalf("a session was built for refused options: %+v", got)
	}

	sent := `{"protocolVersion":1,"clientInfo":{"name":"t","version":"1"},"roots":["/r"],"placement":"tail",
		"cache":{"ttlSeconds":60,"price":{"write":1.25,"read":0.1}},"policy":{"global":{"local":"refresh"}},
		"locator":{"contextLines":0},"feed":{"name":"w"}}`
	if err := conn.Call(ctx, protocol.MethodInitialize, json.RawMessage(sent), nil); err != nil {
		t.Fatal(err)
	}
	var want protocol.InitializeParams
	if err := json.Unmarshal([]byte(sent), &want); err != nil {
		t.Fatal(err)
	}
	want.Watch = protocol.WatchAuto
	want.Policy = &protocol.PolicyConfig{Global: protocol.Policy{Local: protocol.Refresh, Drift: protocol.Annotate}}
	if len(got) != 1 || !reflect.DeepEqual(got[0].Options, want) {
		t.Fatalf("NewSession got %+v, want options %+v", got, want)
	}
	if got[0].Notify == nil || got[0].Fetch == nil || got[0].Logger == nil {
		t.Errorf("the session's ties to the connection are missing: %+v", got[0])
	}
	inW.Close()
	<-done
}
