package race

import (
	"os"
	"strings"
	"testing"

	"github.com/concord-ctx/concord/cmd/concordbench/internal/bench/tasks"
)

func testTask() tasks.Task {
	return tasks.Task{
		ID: "t",
		Paragraphs: []tasks.Paragraph{
			{Title: "A", File: "A.txt", Sentences: []string{"Alpha is a town.", "The Selva River flows through Alpha.", "It has a port."}},
			{Title: "B", File: "B.txt", Sentences: []string{"Beta was founded in 1932.", "Beta is small."}},
			{Title: "C", File: "C.txt", Sentences: []string{"Gamma lies on the Selva River."}},
		},
		Mutations: []tasks.Mutation{
			{File: "A.txt", Line: 2, Original: "The Selva River flows through Alpha.", Mutated: "The Lanna River flows through Alpha."},
			{File: "B.txt", Line: 1, Original: "Beta was founded in 1932.", Mutated: "Beta was founded in 1941."},
		},
	}
}

func setup(t *testing.T) (*Workspace, *Controller) {
	t.Helper()
	x := testTask()
	ws, err := NewWorkspace(t.TempDir(), x)
	if err != nil {
		t.Fatal(err)
	}
	c := NewController(ws)
	if err := c.Arm(x.Mutations); err != nil {
		t.Fatal(err)
	}
	return ws, c
}

func disk(t *testing.T, ws *Workspace, f string) string {
	t.Helper()
	b, err := os.ReadFile(ws.Abs(f))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// step runs one call through the controller and the tools, like an episode.
func step(t *testing.T, ws *Workspace, c *Controller, call Call) (Result, []Restore) {
	t.Helper()
	rs, err := c.Before(call)
	if err != nil {
		t.Fatal(err)
	}
	var res Result
	if call.Name != ToolAnswer {
		res = ws.Exec(call)
	}
	rs2, err := c.After(res)
	if err != nil {
		t.Fatal(err)
	}
	return res, append(rs, rs2...)
}

func TestControllerRace(t *testing.T) {
	type want struct {
		sawMutated bool     // the tool output showed the mutated text
		restored   []string // files restored around this call, with reasons
	}
	cases := []struct {
		name  string
		calls []Call
		wants []want
	}{
		{
			name:  "read of a mutated file restores it right after",
			calls: []Call{{Name: ToolRead, Path: "A.txt"}, {Name: ToolRead, Path: "A.txt"}},
			wants: []want{{true, []string{"A.txt:read"}}, {false, nil}},
		},
		{
			name:  "read of a range without the mutated line restores nothing",
			calls: []Call{{Name: ToolRead, Path: "A.txt", Start: 3, End: 3}},
			wants: []want{{false, nil}},
		},
		{
			name:  "grep hit then moving on restores the hit file before the next call",
			calls: []Call{{Name: ToolGrep, Pattern: "Lanna"}, {Name: ToolRead, Path: "C.txt"}, {Name: ToolRead, Path: "A.txt"}},
			wants: []want{{true, nil}, {false, []string{"A.txt:grep-hit"}}, {false, nil}},
		},
		{
			name:  "grep hit then reading that file keeps it for the read",
			calls: []Call{{Name: ToolGrep, Pattern: "Lanna"}, {Name: ToolRead, Path: "A.txt"}},
			wants: []want{{true, nil}, {true, []string{"A.txt:read"}}},
		},
		{
			name:  "an answer restores everything still planted",
			calls: []Call{{Name: ToolRead, Path: "A.txt"}, {Name: ToolAnswer, Answer: "x"}},
			wants: []want{{true, []string{"A.txt:read"}}, {false, []string{"B.txt:answer"}}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ws, c := setup(t)
			for i, call := range tc.calls {
				res, rs := step(t, ws, c, call)
				w := tc.wants[i]
				saw := strings.Contains(res.Output, "Lanna") || strings.Contains(res.Output, "1941")
				if saw != w.sawMutated {
					t.Errorf("call %d (%s): saw mutated = %v, want %v; output %q", i, call.Name, saw, w.sawMutated, res.Output)
				}
				var got []string
				for _, r := range rs {
					got = append(got, r.File+":"+r.Reason)
					// A restore is a real write: the original is on disk now.
					if content := disk(t, ws, r.File); strings.Contains(content, "Lanna") || strings.Contains(content, "1941") {
						t.Errorf("%s restored but disk still has %q", r.File, content)
					}
					if r.Seen != (r.Reason != "answer") {
						t.Errorf("restore %+v: Seen must be false only for answer restores", r)
					}
				}
				if strings.Join(got, ",") != strings.Join(w.restored, ",") {
					t.Errorf("call %d (%s): restores %v, want %v", i, call.Name, got, w.restored)
				}
			}
		})
	}
}

func TestArmWritesMutations(t *testing.T) {
	ws, c := setup(t)
	if !strings.Contains(disk(t, ws, "A.txt"), "The Lanna River flows through Alpha.") {
		t.Fatal("mutation not planted")
	}
	if !c.Pending() {
		t.Fatal("Pending false after Arm")
	}
	if _, err := c.Before(Call{Name: ToolAnswer}); err != nil {
		t.Fatal(err)
	}
	if c.Pending() || len(c.Log()) != 2 {
		t.Fatalf("after answer: pending %v, log %v", c.Pending(), c.Log())
	}
	x := testTask()
	for f, want := range x.Files() {
		if got := disk(t, ws, f); got != want {
			t.Errorf("%s = %q, want the original %q", f, got, want)
		}
	}
	// Arming a mutation whose original is not there fails clearly.
	bad := NewController(ws)
	err := bad.Arm([]tasks.Mutation{{File: "A.txt", Line: 1, Original: "nope", Mutated: "x"}})
	if err == nil || !strings.Contains(err.Error(), "original text not found") {
		t.Fatalf("err = %v", err)
	}
}

func TestTools(t *testing.T) {
	x := testTask()
	ws, err := NewWorkspace(t.TempDir(), x)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		call Call
		want string
	}{
		{Call{Name: ToolGlob, Pattern: "*"}, "A.txt\nB.txt\nC.txt"},
		{Call{Name: ToolGlob, Pattern: "B*"}, "B.txt"},
		{Call{Name: ToolGlob, Pattern: "Z*"}, "no files match Z*"},
		{Call{Name: ToolGlob, Pattern: "["}, "error: bad glob"},
		{Call{Name: ToolGrep, Pattern: `Selva\s+River`}, "A.txt:2:The Selva River flows through Alpha.\nC.txt:1:Gamma lies on the Selva River."},
		{Call{Name: ToolGrep, Pattern: "(unclosed"}, "no matches for (unclosed"},
		{Call{Name: ToolGrep}, "error: grep needs a pattern"},
		{Call{Name: ToolRead, Path: "A.txt"}, "1: Alpha is a town.\n2: The Selva River flows through Alpha.\n3: It has a port."},
		{Call{Name: ToolRead, Path: "./A.txt", Start: 2, End: 2}, "2: The Selva River flows through Alpha."},
		{Call{Name: ToolRead, Path: ws.Abs("B.txt"), Start: 2}, "2: Beta is small."},
		{Call{Name: ToolRead, Path: "A.txt", Start: 9}, "error: A.txt has 3 lines"},
		{Call{Name: ToolRead, Path: "../etc/passwd"}, "error:"},
		{Call{Name: ToolRead, Path: "/etc/passwd"}, "outside the workspace"},
		{Call{Name: "shell"}, `error: unknown tool "shell"`},
	}
	for _, tc := range cases {
		got := ws.Exec(tc.call).Output
		if !strings.HasPrefix(got, tc.want) && !strings.Contains(got, tc.want) {
			t.Errorf("%s %+v = %q, want %q", tc.call.Name, tc.call, got, tc.want)
		}
	}
	res := ws.Exec(Call{Name: ToolRead, Path: "A.txt", Start: 2, End: 3})
	if res.Read == nil || res.Read.Start != 2 || res.Read.End != 3 || len(res.Read.Lines) != 2 || !strings.HasPrefix(res.Read.Version, "sha256:") {
		t.Fatalf("read info %+v", res.Read)
	}
}

func TestParseCall(t *testing.T) {
	cases := []struct {
		args string
		want Call
		err  bool
	}{
		{`{"path":"a.txt","start_line":2,"end_line":"5"}`, Call{Name: "read_file", Path: "a.txt", Start: 2, End: 5}, false},
		{``, Call{Name: "read_file"}, false},
		{`{"path":`, Call{}, true},
	}
	for _, tc := range cases {
		got, err := ParseCall("", "read_file", tc.args)
		if (err != nil) != tc.err {
			t.Fatalf("ParseCall(%q) err = %v", tc.args, err)
		}
		if !tc.err && got != tc.want {
			t.Errorf("ParseCall(%q) = %+v, want %+v", tc.args, got, tc.want)
		}
	}
}

// repeated: a read of a file whose series is still running shows its end
// (the original), never the second wrong value.
func TestRepeatedReadSeesTheEnd(t *testing.T) {
	ws, c := setup(t)
	c.Schedule(Repeated, 0)
	if _, rs := step(t, ws, c, Call{Name: ToolRead, Path: "B.txt"}); len(rs) != 1 || rs[0].Reason != "read" {
		t.Fatalf("restores %+v", rs)
	}
	// The next call is a grep: the second wrong value lands.
	if _, rs := step(t, ws, c, Call{Name: ToolGrep, Pattern: "Selva"}); len(rs) != 1 || rs[0].Reason != "repeat" || !strings.Contains(disk(t, ws, "B.txt"), "(revised)") {
		t.Fatalf("restores %+v, disk %q", rs, disk(t, ws, "B.txt"))
	}
	// A read of B now: the series ends first, the read shows the original.
	res, rs := step(t, ws, c, Call{Name: ToolRead, Path: "B.txt"})
	if len(rs) != 1 || !strings.Contains(res.Output, "Beta was founded in 1932.") {
		t.Fatalf("restores %+v, output %q", rs, res.Output)
	}
}
