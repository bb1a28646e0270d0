package query

import (
	"reflect"
	"testing"
)

// FuzzParse: any string parses or is refused without a panic; a parsed
// spec writes a URI that parses back to the same spec, and Check never
// panics on it.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"query:///w?run=grep&arg=-rl&arg=TODO&arg=src",
		"query:///w%20x?run=find&arg=.&arg=-name&arg=*.py&run=grep&arg=pkg&screen=1",
		"query:///?run=rg&arg=-l&arg=x&sorted=1&screen=1",
		"query:///w?run=ls&arg=-1&arg=a%26b",
		"query:///w?run=grep&arg=-e",
		"query:///w?run=head&arg=-n",
		"query:///w?run=find&arg=.&arg=-exec&arg=grep&arg=-l&arg=x&arg={}&arg=;",
		"query:///w?run=find&arg=src&arg=-exec&arg=grep&arg=-c&arg=x&arg={}&arg=%2B&run=head&arg=-5",
		"query:///w?run=find&arg=src&arg=-print0&run=xargs&arg=-0&arg=grep&arg=-L&arg=x",
		"query:///w?run=grep&arg=-rl&arg=x&run=xargs&arg=-r&arg=grep&arg=-l&arg=y&screen=1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, u string) {
		s, err := Parse(u)
		if err != nil {
			return
		}
		_, _ = s.Check()
		back, err := Parse(s.URI())
		if err != nil {
			t.Fatalf("%q -> %q: %v", u, s.URI(), err)
		}
		if !reflect.DeepEqual(back, s) {
			t.Fatalf("%q -> %q -> %+v, want %+v", u, s.URI(), back, s)
		}
	})
}
