package agent

import (
	"slices"
	"testing"
)

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
