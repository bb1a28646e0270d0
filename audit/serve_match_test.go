package audit

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/concord-ctx/concord/protocol"
	"github.com/concord-ctx/concord/session"
)

// recordedRoot is where the testdata sessions were recorded (testdata/audit/README.md).
const recordedRoot = "/tmp/concord-audit"

// TestReplayMatchesServe (issue 32): a session replayed by the audit over
// its virtual files, and the same session taken in by a server's session
// (session.New: the file adapter over real files, the intake reading them
// from disk) give the same blocks and the same sync answers. After each
// step of the replay the test writes the virtual workspace to a real
// directory, then makes the server's session the same request the replay
// made of its core. Versions differ by design (the virtual adapter's
// generations, SHA-256 on disk) and are left out; paths are the recorded
// ones on both sides.
func TestReplayMatchesServe(t *testing.T) {
	ins, errs := Find([]string{filepath.Join("..", "testdata", "audit", "sessions")})
	if len(errs) > 0 || len(ins) == 0 {
		t.Fatalf("find: %v (%d inputs)", errs, len(ins))
	}
	for _, in := range ins {
		t.Run(filepath.Base(filepath.Dir(in.Path))+"/"+filepath.Base(in.Path), func(t *testing.T) {
			s, err := Load(in)
			if err != nil {
				t.Fatal(err)
			}
			compared := replayBesideServe(t, s)
			if compared == 0 {
				t.Fatal("no request compared")
			}
		})
	}
}

// replayBesideServe replays s and a server's session side by side and
// returns the number of requests whose answers it compared.
func replayBesideServe(t *testing.T, s *Session) int {
	ctx := context.Background()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	build := session.New(session.Options{})
	core, _, err := build(ctx, session.Config{Options: protocol.InitializeParams{Roots: []string{root}, Watch: protocol.WatchHooks,
		Placement: protocol.PlacementAuto, Policy: &protocol.PolicyConfig{}}})
	if err != nil {
		t.Fatal(err)
	}
	defer core.Close()
	toReal := strings.NewReplacer(recordedRoot, root)
	fromReal := strings.NewReplacer(root, recordedRoot)

	r := newReplayer(ctx, s, Options{})
	defer r.m.Close()
	type exchange struct {
		method         string
		params, result any
		err            error
	}
	var virt []exchange
	r.record = func(method string, params, result any, err error) {
		virt = append(virt, exchange{method, params, result, err})
	}
	written := map[string]int{}
	compared := 0
	for i := range s.Steps {
		n := len(virt)
		if err := r.take(&s.Steps[i]); err != nil {
			t.Fatalf("step %d: replay: %v", i+1, err)
		}
		materialize(t, r.v, toReal, written)
		for _, ex := range virt[n:] {
			var got any
			var err error
			switch p := ex.params.(type) {
			case protocol.RecognizeParams:
				var c protocol.ToolCall
				mustRoundTrip(t, p.Call, &c, toReal)
				p.Call = c
				got, err = core.Recognize(ctx, p)
			case protocol.SyncParams:
				got, err = core.Sync(ctx, p)
			case protocol.ReleaseParams:
				got, err = core.Release(ctx, p)
			case protocol.CompactedParams:
				got, err = core.Compacted(ctx, p)
			default:
				t.Fatalf("step %d: unknown request %T", i+1, p)
			}
			if (err == nil) != (ex.err == nil) {
				t.Fatalf("step %d %s: replay error %v, server error %v", i+1, ex.method, ex.err, err)
			}
			if err != nil {
				continue
			}
			want, have := normalized(t, ex.result, nil), normalized(t, got, fromReal)
			if want != have {
				t.Errorf("step %d %s %s:\n  audit:  %s\n  server: %s", i+1, ex.method, jsonOf(t, ex.params), want, have)
			}
			compared++
		}
	}
	return compared
}

// materialize writes the virtual files whose generation moved to the real
// root, lines never shown as printable placeholders. A bumped mtime makes
// every write a new stamp, whatever the clock's resolution.
func materialize(t *testing.T, v *vfs, toReal *strings.Replacer, written map[string]int) {
	t.Helper()
	for p, f := range v.files {
		if written[p] == f.gen {
			continue
		}
		written[p] = f.gen
		real := toReal.Replace(p)
		if f.unknown {
			t.Fatalf("%s: changed by a command in the replay (content unknown): no real file can match it", p)
		}
		text, _ := v.content(p)
		text = strings.ReplaceAll(text, holeMark, "concord-audit-unseen-")
		if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(real, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		at := time.Unix(1_700_000_000+int64(f.gen), 0)
		if err := os.Chtimes(real, at, at); err != nil {
			t.Fatal(err)
		}
	}
}

var versionField = regexp.MustCompile(`"version":"[^"]*",?`)

// normalized is an answer as JSON with versions left out, placeholders
// for unseen lines spelled as on disk and, for the server's, its root
// mapped back to the recorded one.
func normalized(t *testing.T, v any, fromReal *strings.Replacer) string {
	s := jsonOf(t, v)
	if fromReal != nil {
		s = fromReal.Replace(s)
	}
	s = strings.ReplaceAll(s, `\u0000concord-audit-unseen-`, "concord-audit-unseen-")
	return versionField.ReplaceAllString(s, "")
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// mustRoundTrip copies v into out through JSON, with the recorded root
// replaced (arguments, output, working directory and metadata alike).
func mustRoundTrip(t *testing.T, v, out any, r *strings.Replacer) {
	t.Helper()
	if err := json.Unmarshal([]byte(r.Replace(jsonOf(t, v))), out); err != nil {
		t.Fatal(err)
	}
}
