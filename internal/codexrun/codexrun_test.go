package codexrun

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/concord-ctx/concord/internal/fakemodel/responses"
)

// TestExecAgainstFake: the pinned Codex CLI runs headless against the
// loopback fake, offline, and the fake sees what Codex showed the model.
func TestExecAgainstFake(t *testing.T) {
	bin, err := Bin()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	home, proj := filepath.Join(dir, "home"), filepath.Join(dir, "proj")
	for _, d := range []string{home, proj} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(proj, "a.txt"), []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fake, err := responses.Start([]responses.Step{
		{Items: []responses.Item{responses.Exec("cat a.txt", "")}},
		{Items: []responses.Item{responses.Text("Read it.")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(Config(fake.URL, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, _, err := Run{Bin: bin, Home: home, Dir: proj, Prompt: "show a.txt"}.Exec(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(out) != "Read it." {
		t.Errorf("last message %q", out)
	}
	if err := fake.Err(); err != nil {
		t.Fatal(err)
	}
	reqs := fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model calls, want 2", len(reqs))
	}
	shown, ok := reqs[1].Output("call_1")
	if !ok {
		t.Fatal("the second call carries no output of call_1")
	}
	if !strings.HasSuffix(shown, "Process exited with code 0\nOriginal token count: 2\nOutput:\none\ntwo\n") {
		t.Errorf("exec output as shown:\n%s", shown)
	}
	rollouts, _ := filepath.Glob(filepath.Join(home, "sessions", "*", "*", "*", "rollout-*.jsonl"))
	if len(rollouts) != 1 {
		t.Errorf("rollouts: %v", rollouts)
	}
}
