package fileadapter

import "testing"

func TestBelowRoot(t *testing.T) {
	for _, tc := range []struct {
		p, r, rel string
		ok        bool
	}{
		{"/a/b/c.txt", "/a/b", "c.txt", true},
		{"/a/b", "/a/b", "", true},
		{"/a/bc/d", "/a/b", "", false},
		{"/x/y", "/a", "", false},
		{"/tmp/gem/f.txt", "/", "tmp/gem/f.txt", true},
		{"/", "/", "", true},
		{"/a/b/c/d", "/a", "b/c/d", true},
	} {
		rel, ok := belowRoot(tc.p, tc.r)
		if rel != tc.rel || ok != tc.ok {
			t.Errorf("belowRoot(%q, %q) = %q, %v; want %q, %v", tc.p, tc.r, rel, ok, tc.rel, tc.ok)
		}
	}
}
