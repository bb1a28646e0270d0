package audit

import (
	"strings"
	"testing"
)

// TestTimelineWords: the chart's tooltips count views in proper English
// (issue 37: "1 stale views") and both axes say what they measure.
func TestTimelineWords(t *testing.T) {
	s := &SessionReport{Session: "s1", Timeline: []CallPoint{
		{Call: 1},
		{Call: 2, StaleViews: 1, StaleTokens: 40},
		{Call: 3, StaleViews: 2, StaleTokens: 80, ErrataTokens: 30},
	}}
	var b strings.Builder
	timeline(&b, s)
	svg := b.String()
	for _, want := range []string{
		"<title>call 2: 1 stale view, ~40 stale tokens</title>",
		"<title>call 3: 2 stale views, ~80 stale tokens</title>",
		">tokens</text>", ">model call</text>",
	} {
		if !strings.Contains(svg, want) {
			t.Errorf("timeline lacks %q:\n%s", want, svg)
		}
	}
	if strings.Contains(svg, "1 stale views") {
		t.Errorf("timeline says 1 stale views:\n%s", svg)
	}
}

func TestPlural(t *testing.T) {
	for n, want := range map[int]string{0: "0 stale views", 1: "1 stale view", 2: "2 stale views"} {
		if got := plural(n, "stale view", "stale views"); got != want {
			t.Errorf("plural(%d) = %q, want %q", n, got, want)
		}
	}
}
