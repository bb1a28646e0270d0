package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
)

// msgs builds an OpenAI-format session with OpenCode's tools: each tool
// call is one assistant message (a model call) and its result.
type msgs []map[string]any

func (m *msgs) tool(id, name string, args map[string]any, out string) {
	a, _ := json.Marshal(args)
	*m = append(*m,
		map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": id, "type": "function",
			"function": map[string]any{"name": name, "arguments": string(a)}}}},
		map[string]any{"role": "tool", "tool_call_id": id, "content": out})
}

func (m *msgs) final() { *m = append(*m, map[string]any{"role": "assistant", "content": "done"}) }

// ocRead is OpenCode 1.18's read output for lines start..end of a file of
// the given lines.
func ocRead(path string, lines []string, start, end int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<path>%s</path>\n<type>file</type>\n<content>\n", path)
	for i := start; i <= end; i++ {
		fmt.Fprintf(&b, "%d: %s\n", i, lines[i-1])
	}
	if start == 1 && end == len(lines) {
		fmt.Fprintf(&b, "\n(End of file - total %d lines)\n</content>", len(lines))
	} else {
		fmt.Fprintf(&b, "\n(Showing lines %d-%d of %d. Use offset=%d to continue.)\n</content>", start, end, len(lines), end+1)
	}
	return b.String()
}

func numbered(n int) []string {
	l := make([]string, n)
	for i := range l {
		l[i] = fmt.Sprintf("line %d of the file", i+1)
	}
	return l
}

func replayMsgs(t testing.TB, m msgs) *SessionReport {
	t.Helper()
	data, err := json.Marshal(map[string]any{"id": "t", "messages": m})
	if err != nil {
		t.Fatal(err)
	}
	s, err := parseOpenAI("t.json", data)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Replay(context.Background(), s, Options{Timeline: true})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestReplay(t *testing.T) {
	const f = "/w/a.txt"
	ten := numbered(10)
	edited := append([]string{"inserted at the top"}, ten...)
	tests := []struct {
		name  string
		build func(m *msgs)
		// want: stale views, calls that carried one, their kinds.
		views, calls int
		kinds        map[string]int
	}{
		{"read only", func(m *msgs) {
			m.tool("c1", "read", map[string]any{"filePath": f}, ocRead(f, ten, 1, 10))
			m.tool("c2", "read", map[string]any{"filePath": f, "offset": 2, "limit": 3}, ocRead(f, ten, 2, 4))
			m.final()
		}, 0, 0, map[string]int{}},
		{"own edit in the view", func(m *msgs) {
			m.tool("c1", "read", map[string]any{"filePath": f}, ocRead(f, ten, 1, 10))
			m.tool("c2", "edit", map[string]any{"filePath": f, "oldString": "line 3 of", "newString": "line three of"}, "Edit applied successfully.")
			m.tool("c3", "read", map[string]any{"filePath": "/w/other.txt"}, ocRead("/w/other.txt", ten, 1, 10))
			m.final()
		}, 1, 2, map[string]int{StaleChanged: 1}},
		{"edit above a window moves it", func(m *msgs) {
			m.tool("c1", "read", map[string]any{"filePath": f}, ocRead(f, ten, 1, 10))
			m.tool("c2", "read", map[string]any{"filePath": f, "offset": 6, "limit": 2}, ocRead(f, ten, 6, 7))
			m.tool("c3", "edit", map[string]any{"filePath": f, "oldString": "line 1 of the file", "newString": "inserted at the top\nline 1 of the file"}, "Edit applied successfully.")
			m.final()
		}, 2, 1, map[string]int{StaleChanged: 1, StaleMoved: 1}},
		{"changed behind the agent's back", func(m *msgs) {
			changed := append([]string(nil), ten...)
			changed[4] = "line five, rewritten"
			m.tool("c1", "read", map[string]any{"filePath": f, "offset": 4, "limit": 3}, ocRead(f, ten, 4, 6))
			m.tool("c2", "read", map[string]any{"filePath": f}, ocRead(f, changed, 1, 10))
			m.final()
		}, 1, 1, map[string]int{StaleChanged: 1}},
		{"rewritten whole", func(m *msgs) {
			m.tool("c1", "read", map[string]any{"filePath": f, "offset": 1, "limit": 2}, ocRead(f, ten, 1, 2))
			m.tool("c2", "write", map[string]any{"filePath": f, "content": "something else entirely\n"}, "Wrote file successfully.")
			m.tool("c3", "read", map[string]any{"filePath": f}, ocRead(f, []string{"something else entirely"}, 1, 1))
			m.final()
		}, 1, 2, nil},
		{"written by a command, seen by a later read", func(m *msgs) {
			// serve learns of a command's write from the file watcher; the
			// replay when a later read shows the file otherwise.
			upper := append([]string(nil), ten...)
			upper[1] = "LINE 2 of the file"
			m.tool("c1", "read", map[string]any{"filePath": f, "offset": 1, "limit": 3}, ocRead(f, ten, 1, 3))
			m.tool("c2", "bash", map[string]any{"command": "sed -i 2s/line/LINE/ " + f, "description": "x"}, "")
			m.tool("c3", "read", map[string]any{"filePath": f, "offset": 2, "limit": 1}, ocRead(f, upper, 2, 2))
			m.final()
		}, 1, 1, map[string]int{StaleChanged: 1}},
		{"an edit of lines never shown", func(m *msgs) {
			m.tool("c1", "read", map[string]any{"filePath": f, "offset": 1, "limit": 3}, ocRead(f, ten, 1, 3))
			m.tool("c2", "edit", map[string]any{"filePath": f, "oldString": "line 9 of", "newString": "line nine of"}, "Edit applied successfully.")
			m.final()
		}, 1, 1, map[string]int{StaleGone: 1}},
		{"re-read after the edit is fresh", func(m *msgs) {
			m.tool("c1", "read", map[string]any{"filePath": f}, ocRead(f, ten, 1, 10))
			m.tool("c2", "edit", map[string]any{"filePath": f, "oldString": "line 1 of the file", "newString": "inserted at the top\nline 1 of the file"}, "Edit applied successfully.")
			m.tool("c3", "read", map[string]any{"filePath": f}, ocRead(f, edited, 1, 11))
			m.tool("c4", "read", map[string]any{"filePath": "/w/b.txt"}, ocRead("/w/b.txt", ten, 1, 10))
			m.final()
		}, 1, 3, map[string]int{StaleChanged: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m msgs
			m = append(m, map[string]any{"role": "user", "content": "go"})
			tt.build(&m)
			rep := replayMsgs(t, m)
			if rep.StaleViews != tt.views || rep.StaleCalls != tt.calls {
				t.Errorf("stale views %d, calls with one %d; want %d, %d (%+v)", rep.StaleViews, rep.StaleCalls, tt.views, tt.calls, rep)
			}
			if tt.kinds != nil {
				for k, n := range tt.kinds {
					if rep.ByKind[k] != n {
						t.Errorf("kind %s: %d, want %d (%v)", k, rep.ByKind[k], n, rep.ByKind)
					}
				}
			}
			if tt.views > 0 && rep.Concord.Errata+rep.Concord.InPlace == 0 {
				t.Errorf("Concord repaired nothing: %+v", rep.Concord)
			}
			if len(rep.Timeline) != rep.Calls {
				t.Errorf("timeline of %d points for %d calls", len(rep.Timeline), rep.Calls)
			}
			sum := 0
			for _, p := range rep.Timeline {
				sum += p.StaleTokens
			}
			if sum != rep.StaleTokens {
				t.Errorf("timeline stale tokens %d, total %d", sum, rep.StaleTokens)
			}
		})
	}
}

// writeSessions writes n synthetic OpenAI-format sessions of a coding
// agent (reads, edits of what it read, re-reads) into dir.
func writeSessions(t testing.TB, dir string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		var m msgs
		m = append(m, map[string]any{"role": "user", "content": "fix the bug"})
		for k := 0; k < 4; k++ {
			f := fmt.Sprintf("/w/s%d/f%d.go", i, k)
			lines := numbered(60)
			m.tool(fmt.Sprintf("r%d", k), "read", map[string]any{"filePath": f}, ocRead(f, lines, 1, 60))
			m.tool(fmt.Sprintf("w%d", k), "read", map[string]any{"filePath": f, "offset": 20, "limit": 10}, ocRead(f, lines, 20, 29))
			m.tool(fmt.Sprintf("e%d", k), "edit", map[string]any{"filePath": f, "oldString": "line 5 of the file",
				"newString": "line 5 of the file\nan added line"}, "Edit applied successfully.")
			lines = append(lines[:5], append([]string{"an added line"}, lines[5:]...)...)
			m.tool(fmt.Sprintf("x%d", k), "read", map[string]any{"filePath": f, "offset": 1, "limit": 12}, ocRead(f, lines, 1, 12))
		}
		m.final()
		data, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("session-%04d.json", i)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAuditMemoryFlat: the heap after 500 sessions is within a generous
// bound of the heap after 100 (sessions are read, replayed and dropped one
// at a time).
func TestAuditMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and replays 500 sessions")
	}
	dir := t.TempDir()
	writeSessions(t, dir, 500)
	ins, errs := Find([]string{dir})
	if len(errs) > 0 || len(ins) != 500 {
		t.Fatalf("%d inputs, errors %v", len(ins), errs)
	}
	heap := map[int]uint64{}
	rep, err := Run(context.Background(), ins, Options{}, false, func(done, total int) {
		if done == 100 || done == 500 {
			goruntime.GC()
			var ms goruntime.MemStats
			goruntime.ReadMemStats(&ms)
			heap[done] = ms.HeapAlloc
		}
	})
	if err != nil || len(rep.Errors) > 0 {
		t.Fatal(err, rep.Errors)
	}
	if rep.Totals.Sessions != 500 || rep.Totals.StaleViews != 500*8 {
		t.Errorf("%d sessions, %d stale views; want 500, %d", rep.Totals.Sessions, rep.Totals.StaleViews, 500*8)
	}
	t.Logf("heap after 100 sessions %d KB, after 500 %d KB", heap[100]>>10, heap[500]>>10)
	if heap[500] > heap[100]+4<<20 {
		t.Errorf("heap grew from %d KB after 100 sessions to %d KB after 500", heap[100]>>10, heap[500]>>10)
	}
}

func BenchmarkAudit(b *testing.B) {
	for _, n := range []int{100, 500} {
		b.Run(fmt.Sprintf("sessions=%d", n), func(b *testing.B) {
			dir := b.TempDir()
			writeSessions(b, dir, n)
			ins, _ := Find([]string{dir})
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				rep, err := Run(context.Background(), ins, Options{}, false, nil)
				if err != nil || rep.Totals.Sessions != n {
					b.Fatal(err, rep.Errors)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "sessions/s")
			b.ReportMetric(0, "ns/op")
		})
	}
}
