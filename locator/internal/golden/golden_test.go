package golden

import (
	"bytes"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		comment string
		secs    []Section
		err     string
	}{
		{name: "empty", in: ""},
		{name: "comment only", in: "status: moved\n", comment: "status: moved\n"},
		{
			name:    "two sections",
			in:      "c\n-- old --\na\r\nb\n-- new noeol --\nx\n",
			comment: "c\n",
			secs:    []Section{{"old", []byte("a\r\nb\n")}, {"new noeol", []byte("x\n")}},
		},
		{name: "empty section", in: "-- old --\n-- new --\n", secs: []Section{{"old", []byte{}}, {"new", []byte{}}}},
		{name: "no final newline", in: "-- old --\nabc", secs: []Section{{"old", []byte("abc")}}},
		{name: "not a marker", in: "-- --\n--old--\n", comment: "-- --\n--old--\n"},
		{name: "duplicate", in: "-- a --\n-- a --\n", err: "already opened"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := Parse([]byte(tt.in))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(a.Comment) != tt.comment {
				t.Errorf("comment = %q, want %q", a.Comment, tt.comment)
			}
			if len(a.Sections) != len(tt.secs) {
				t.Fatalf("sections = %q, want %q", a.Sections, tt.secs)
			}
			for i, s := range a.Sections {
				if s.Name != tt.secs[i].Name || !bytes.Equal(s.Data, tt.secs[i].Data) {
					t.Errorf("section %d = %q %q, want %q %q", i, s.Name, s.Data, tt.secs[i].Name, tt.secs[i].Data)
				}
			}
		})
	}
}

func TestSetGet(t *testing.T) {
	a := &Archive{}
	a.Set("want", []byte("1\n"))
	a.Set("want", []byte("2\n"))
	if d, ok := a.Get("want"); !ok || string(d) != "2\n" || len(a.Sections) != 1 {
		t.Fatalf("Get = %q %v, sections %d", d, ok, len(a.Sections))
	}
	if _, ok := a.Get("nope"); ok {
		t.Fatal("Get of a missing section succeeded")
	}
}

// FuzzParse: Parse never panics, and what it parses survives a Format round trip.
func FuzzParse(f *testing.F) {
	f.Add([]byte("c\n-- old --\na\n-- new --\nb"))
	f.Add([]byte("-- a --\r\n-- b --\n\r\n"))
	f.Add([]byte("-- x --"))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := Parse(data)
		if err != nil {
			return
		}
		b, err := Parse(Format(a))
		if err != nil {
			t.Fatalf("reparse: %v", err)
		}
		if len(a.Sections) != len(b.Sections) || !bytes.Equal(fixNL(a.Comment), b.Comment) {
			t.Fatalf("round trip changed the archive: %q vs %q", Format(a), Format(b))
		}
		for i := range a.Sections {
			if a.Sections[i].Name != b.Sections[i].Name || !bytes.Equal(fixNL(a.Sections[i].Data), b.Sections[i].Data) {
				t.Fatalf("section %d changed: %q vs %q", i, a.Sections[i], b.Sections[i])
			}
		}
	})
}
