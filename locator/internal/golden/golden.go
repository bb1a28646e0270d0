// Package golden reads and writes the locator's golden case files: a small
// txtar-like archive (hand-parsed to avoid a dependency). A file is a free
// comment followed by sections, each opened by a marker line
//
//	-- name --
//
// and holding every line up to the next marker. Section content always ends
// with "\n" when formatted; what a name means (flags such as "noeol") is the
// caller's business. Bytes are kept as they are, "\r" included.
package golden

import (
	"bytes"
	"fmt"
	"strings"
)

// Section is one named part of an archive.
type Section struct {
	Name string
	Data []byte
}

// Archive is a parsed case file.
type Archive struct {
	Comment  []byte
	Sections []Section
}

// Get returns the data of the section named name.
func (a *Archive) Get(name string) ([]byte, bool) {
	for _, s := range a.Sections {
		if s.Name == name {
			return s.Data, true
		}
	}
	return nil, false
}

// Set replaces the section named name, or appends it.
func (a *Archive) Set(name string, data []byte) {
	for i := range a.Sections {
		if a.Sections[i].Name == name {
			a.Sections[i].Data = data
			return
		}
	}
	a.Sections = append(a.Sections, Section{Name: name, Data: data})
}

// marker returns the section name if line (without its "\n") is a marker.
func marker(line []byte) (string, bool) {
	line = bytes.TrimSuffix(line, []byte("\r"))
	if !bytes.HasPrefix(line, []byte("-- ")) || !bytes.HasSuffix(line, []byte(" --")) || len(line) < 7 {
		return "", false
	}
	name := strings.TrimSpace(string(line[3 : len(line)-3]))
	return name, name != ""
}

// Parse reads an archive. Two sections with one name are an error, so a
// case cannot silently shadow its own input.
func Parse(data []byte) (*Archive, error) {
	a := &Archive{}
	seen := map[string]int{}
	cur := -1
	lineNo := 0
	for len(data) > 0 {
		lineNo++
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i+1], data[i+1:]
		} else {
			line, data = data, nil
		}
		if name, ok := marker(bytes.TrimSuffix(line, []byte("\n"))); ok {
			if first, dup := seen[name]; dup {
				return nil, fmt.Errorf("line %d: section %q already opened at line %d", lineNo, name, first)
			}
			seen[name] = lineNo
			a.Sections = append(a.Sections, Section{Name: name, Data: []byte{}})
			cur = len(a.Sections) - 1
			continue
		}
		if cur < 0 {
			a.Comment = append(a.Comment, line...)
		} else {
			a.Sections[cur].Data = append(a.Sections[cur].Data, line...)
		}
	}
	return a, nil
}

// Format writes an archive; Parse(Format(a)) gives a back, except that a
// section or comment not ending in "\n" gets one.
func Format(a *Archive) []byte {
	var b bytes.Buffer
	b.Write(fixNL(a.Comment))
	for _, s := range a.Sections {
		fmt.Fprintf(&b, "-- %s --\n", s.Name)
		b.Write(fixNL(s.Data))
	}
	return b.Bytes()
}

func fixNL(d []byte) []byte {
	if len(d) == 0 || d[len(d)-1] == '\n' {
		return d
	}
	return append(append([]byte{}, d...), '\n')
}
