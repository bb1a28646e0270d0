package agent

import (
	"slices"
	"testing"

	"github.com/concord-ctx/concord/cmd/concordbench/internal/bench/tasks"
)

type cloze = tasks.Cloze

func tasksCloze(file string, line int, prefix, suffix string) cloze {
	return cloze{File: file, Line: line, Prefix: prefix, Suffix: suffix}
}

// TestErrataReading: an erratum's "+N: text" lines are evidence, its "-"
// lines are not; an erratum appended to a message does not mark that
// message, and one that names a call marks that call's copy.
func TestErrataReading(t *testing.T) {
	note := "[concord] Outdated in /w/a.txt: call_4 (line 3) changed, now line 4:\n-3: Old text.\n+4: New text."
	if got := visibleLines(note); !slices.Equal(got, []string{"[concord] Outdated in /w/a.txt: call_4 (line 3) changed, now line 4:", "New text."}) {
		t.Errorf("visibleLines = %q", got)
	}
	host := "1: Some line.\n2: Other line."
	tests := []struct {
		content, own string
	}{
		{host, host},
		{host + "\n\n" + note, host},
		{host + "\n\n[concord] About the output of call_2: /w/a.txt was deleted after that read.", host},
		{host + "\n\n[concord] The output of call_2 is current again.", host},
		{"[concord] /w/a.txt changed since this read.", "[concord] /w/a.txt changed since this read."},
	}
	for _, tc := range tests {
		if got := own(tc.content); got != tc.own {
			t.Errorf("own(%q) = %q, want %q", tc.content, got, tc.own)
		}
	}
	msgs := []Message{
		{Role: "tool", ToolCallID: "call_4", Content: host},
		{Role: "tool", ToolCallID: "call_5", Content: host + "\n\n" + note},
	}
	if !corrected(msgs, 0) || corrected(msgs, 1) {
		t.Errorf("corrected: call_4 %v (want true), call_5 %v (want false)", corrected(msgs, 0), corrected(msgs, 1))
	}
}

// TestSummaryCorrectionReading: a correction about a compaction summary
// (in place after it, or at the tail) marks only the lines it gives the old
// text of; the summary's other lines stay evidence; "current again" takes
// the mark back; a correction naming no lines puts the whole summary in doubt.
func TestSummaryCorrectionReading(t *testing.T) {
	summary := CompactionPrefix + "\n/workspace/a.txt:\n2: Alma was born in 1950.\n/workspace/b.txt:\n3: Bruno lives in Varden."
	fix := "[concord] The summary in compact_1 is outdated: /workspace/a.txt lines 1-4, which it was built from, changed (now lines 1-4):\n-2: Alma was born in 1950.\n+2: Alma was born in 1951."
	q := Message{Role: "user", Content: "Question: x"}
	born := tasksCloze("a.txt", 2, "Alma was born in ", ".")
	lives := tasksCloze("b.txt", 3, "Bruno lives in ", ".")
	tests := []struct {
		name        string
		msgs        []Message
		born, lives string // what both readers answer ("" none)
	}{
		{"uncorrected", []Message{q, q, {Role: "user", Anchor: "compact_1", Content: summary}}, "1950", "Varden"},
		{"in place", []Message{q, q, {Role: "user", Anchor: "compact_1", Content: summary + "\n\n" + fix}}, "1951", "Varden"},
		{"at the tail", []Message{q, q, {Role: "user", Anchor: "compact_1", Content: summary}, {Role: "user", Content: "Now answer.\n\n" + fix}}, "1951", "Varden"},
		{"current again", []Message{q, q, {Role: "user", Anchor: "compact_1", Content: summary}, {Role: "user", Content: "x\n\n" + fix + "\n[concord] The summary in compact_1 is current again."}}, "1950", "Varden"},
		{"no lines named", []Message{q, q, {Role: "user", Anchor: "compact_1", Content: summary + "\n\n[concord] The summary in compact_1 is outdated: /workspace/a.txt, which it was built from (lines 1-4), was deleted."}}, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for name, pick := range map[string]func(c cloze, m []Message) (string, bool){"latest": latest, "first": first} {
				for _, c := range []struct {
					cl   cloze
					want string
				}{{born, tc.born}, {lives, tc.lives}} {
					got, ok := pick(c.cl, tc.msgs)
					if !ok {
						got = ""
					}
					if got != c.want {
						t.Errorf("%s reader, %s: %q, want %q", name, c.cl.Prefix, got, c.want)
					}
				}
			}
		})
	}
	if !Compacted([]Message{q, q, {Role: "user", Content: summary}}) || Compacted([]Message{q, {Role: "user", Content: summary}}) {
		t.Error("Compacted: a summary after the question is a compaction; the question itself is not")
	}
}
