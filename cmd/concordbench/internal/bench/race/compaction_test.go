package race

import (
	"testing"

	"github.com/concord-ctx/concord/cmd/concordbench/internal/bench/tasks"
)

// TestNoiseOf: the noise edit lands on a line with no evidence and no
// mutation of the first evidence file, of the kind the seed picks, or an
// addition when no line suits it.
func TestNoiseOf(t *testing.T) {
	x := testTask()
	x.Evidence = []tasks.Evidence{{File: "B.txt", Line: 1}, {File: "A.txt", Line: 2}}
	x.Paragraphs[1].Sentences = []string{"Beta was founded in 1932.", "Beta is small.", "Beta had 4500 people in 1990."}
	tests := []struct {
		seed int
		want Noise
	}{
		{0, Noise{File: "B.txt", Line: 2, Old: "Beta is small.", New: "Beta is small, according to later sources.", Kind: "addition"}},
		{1, Noise{File: "B.txt", Line: 3, Old: "Beta had 4500 people in 1990.", New: "Beta had 4501 people in 1990.", Kind: "number"}},
		{2, Noise{File: "B.txt", Line: 2, Old: "Beta is small.", New: "It is small.", Kind: "name"}},
	}
	x.Paragraphs[1].Title = "Beta"
	for _, tc := range tests {
		got, ok := NoiseOf(x, tc.seed)
		if !ok || got != tc.want {
			t.Errorf("seed %d: %+v, want %+v", tc.seed, got, tc.want)
		}
	}
	if _, ok := NoiseOf(tasks.Task{}, 0); ok {
		t.Error("a task without evidence got noise")
	}
}

// TestCompactSchedule: under the compaction schedule a read restores
// nothing; Compact restores every mutation (seen) and makes the noise edit
// once; the oracle's Final makes only the noise.
func TestCompactSchedule(t *testing.T) {
	x := testTask()
	x.Race = Compaction
	x.Evidence = []tasks.Evidence{{File: "A.txt", Line: 2}, {File: "B.txt", Line: 1}}
	ws, c := setup(t)
	c.ScheduleTask(x, 0)
	if _, rs := step(t, ws, c, Call{Name: ToolRead, Path: "A.txt"}); len(rs) != 0 {
		t.Fatalf("a read restored under compaction: %+v", rs)
	}
	rs, err := c.Compact()
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 || !rs[0].Seen || rs[0].Reason != "compaction" || rs[2].Reason != "noise-addition" {
		t.Fatalf("restores %+v", rs)
	}
	if got := disk(t, ws, "A.txt"); got != "Alpha is a town, according to later sources.\nThe Selva River flows through Alpha.\nIt has a port.\n" {
		t.Errorf("A.txt after compaction: %q", got)
	}
	if rs, _ := c.Compact(); len(rs) != 0 {
		t.Errorf("a second compaction changed %+v", rs)
	}
	ows, err := NewWorkspace(t.TempDir(), x)
	if err != nil {
		t.Fatal(err)
	}
	oc := NewController(ows)
	oc.ScheduleTask(x, 0)
	if err := oc.Final(x.Mutations); err != nil {
		t.Fatal(err)
	}
	if disk(t, ows, "A.txt") != disk(t, ws, "A.txt") || disk(t, ows, "B.txt") != disk(t, ws, "B.txt") {
		t.Error("the oracle's final files differ from the race's")
	}
}
