package intake_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/concord-ctx/concord/fileadapter"
	"github.com/concord-ctx/concord/intake"
	"github.com/concord-ctx/concord/protocol"
	"github.com/concord-ctx/concord/recognize"
	"github.com/concord-ctx/concord/runtime"
)

// newIntake is the intake into a real core over a real root (hooks watch
// mode: changes are seen by stat at sync), as a session wires it.
func newIntake(t *testing.T) (*intake.Intake, *runtime.Manager, string) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	opts := protocol.InitializeParams{Roots: []string{root}, Watch: protocol.WatchHooks, Placement: protocol.PlacementInplace}
	m := runtime.New(runtime.Config{Options: opts})
	fa, err := fileadapter.New(fileadapter.Config{Roots: opts.Roots, Mode: protocol.WatchHooks}, m.Hint)
	if err != nil {
		t.Fatal(err)
	}
	m.AddAdapter(fa)
	t.Cleanup(func() { m.Close() })
	return intake.New(m, recognize.OS{}, nil), m, root
}

func call(tool, cmd, out, cwd string) protocol.ToolCall {
	args, _ := json.Marshal(map[string]string{"command": cmd})
	exit := 0
	return protocol.ToolCall{Runtime: recognize.OpenCode, Tool: tool, Arguments: args, Output: out, Cwd: cwd, ExitCode: &exit,
		Metadata: json.RawMessage(`{"exit":0,"truncated":false}`)}
}

// TestRecognizeRefuses: a malformed call is a field error naming the field.
func TestRecognizeRefuses(t *testing.T) {
	in, _, root := newIntake(t)
	for _, tc := range []struct {
		name  string
		call  protocol.ToolCall
		field string
	}{
		{"unknown runtime", protocol.ToolCall{Runtime: "mystery", Tool: "x"}, "call.runtime"},
		{"no tool", protocol.ToolCall{Runtime: recognize.OpenCode}, "call.tool"},
		{"arguments not an object", protocol.ToolCall{Runtime: recognize.OpenCode, Tool: "bash", Arguments: json.RawMessage(`[1]`), Cwd: root}, "call.arguments"},
	} {
		_, err := in.Recognize(context.Background(), protocol.RecognizeParams{Agent: "main", Anchor: "c1", Call: tc.call})
		var fe *protocol.FieldError
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: %v, want a field error on %s", tc.name, err, tc.field)
		}
	}
}

// TestRecognizeReadThenShow: a read becomes a block whose in-place view,
// after the file changed, is the tool's own rendering of the new lines
// (show); a command's result is an event.
func TestRecognizeReadThenShow(t *testing.T) {
	in, m, root := newIntake(t)
	f := filepath.Join(root, "a.txt")
	if err := os.WriteFile(f, []byte("one\ntwo\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := in.Recognize(ctx, protocol.RecognizeParams{Agent: "main", Turn: 1, Anchor: "c1",
		Call: call("bash", "cat -n a.txt", "     1\tone\n     2\ttwo\n     3\tthree\n", root)})
	if err != nil || res.Kind != "read" || res.Block == "" || len(res.Sources) != 1 {
		t.Fatalf("read: %+v %v", res, err)
	}
	ev, err := in.Recognize(ctx, protocol.RecognizeParams{Agent: "main", Turn: 1, Anchor: "c2", Call: call("bash", "make", "ok\n", root)})
	if err != nil || ev.Kind != "event" || ev.Status != protocol.EventAck {
		t.Fatalf("event: %+v %v", ev, err)
	}
	if err := os.WriteFile(f, []byte("one\nTWO\nthree\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sr, err := m.Sync(ctx, protocol.SyncParams{Agent: "main", Turn: 2})
	if err != nil || len(sr.Blocks) != 1 {
		t.Fatalf("sync: %+v %v", sr, err)
	}
	v := sr.Blocks[0]
	want := "     1\tone\n     2\tTWO\n     3\tthree\n"
	if v.Status != protocol.Patched || v.View != want || v.Show == nil || *v.Show != want {
		t.Errorf("view %+v, want patched with view and show %q", v, want)
	}
}
