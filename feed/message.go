package feed

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/concord-ctx/concord/protocol"
)

// Version is the message format's version; a message of another version is
// ignored (and logged), so instances of different releases can share a feed.
const Version = 1

// Limits of one message: anything beyond them is malformed.
const (
	MaxMessage = 16 << 10 // bytes of one encoded message
	maxField   = 1024     // bytes of a name, an agent, a version
	maxKey     = 4096     // bytes of a path or a uri
)

// Message is one change on the feed, as JSON:
//
//	{"v":1,"workspace":"repo","origin":"3f9a…","host":"build-2","agent":"main",
//	 "path":"src/app.py","version":"sha256:…","time":"2026-12-03T21:00:00.123Z"}
//
// A source is a path relative to the shared workspace root (files: every
// host names the file its own way under its own mount) or a uri (keyed
// sources, whose uri is the same everywhere); exactly one is set.
type Message struct {
	V         int    `json:"v"`
	Workspace string `json:"workspace"`         // the feed's name: a message naming another is ignored
	Origin    string `json:"origin"`            // the publishing instance: it ignores its own messages
	Host      string `json:"host"`              // the writer's host, for notices
	Agent     string `json:"agent,omitempty"`   // the writer's agent, when known
	Path      string `json:"path,omitempty"`    // a file, relative to the workspace root, slash-separated
	URI       string `json:"uri,omitempty"`     // a keyed source
	Version   string `json:"version,omitempty"` // the new version ("" = unknown: re-read)
	Time      string `json:"time,omitempty"`    // when the change was published, RFC 3339
}

// Encode returns the JSON of a message, checked as Decode checks it.
func Encode(m Message) ([]byte, error) {
	m.V = Version
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("feed encode: %w", err)
	}
	data, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("feed encode: %w", err)
	}
	if len(data) > MaxMessage {
		return nil, fmt.Errorf("feed encode: %w: %d bytes (limit %d)", ErrMalformed, len(data), MaxMessage)
	}
	return data, nil
}

// ErrMalformed is what Decode returns for anything but a valid message.
var ErrMalformed = errors.New("malformed feed message")

// Decode parses and checks one message. Unknown fields are ignored (a newer
// release may add some); everything else the receiver relies on is checked,
// since anyone with publish rights on the subject can send anything.
func Decode(data []byte) (Message, error) {
	if len(data) > MaxMessage {
		return Message{}, fmt.Errorf("%w: %d bytes (limit %d)", ErrMalformed, len(data), MaxMessage)
	}
	var m Message
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&m); err != nil {
		return Message{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if dec.More() {
		return Message{}, fmt.Errorf("%w: trailing data", ErrMalformed)
	}
	if m.V != Version {
		return Message{}, fmt.Errorf("%w: version %d (this release reads %d)", ErrMalformed, m.V, Version)
	}
	if err := m.validate(); err != nil {
		return Message{}, err
	}
	return m, nil
}

func (m *Message) validate() error {
	for _, f := range []struct {
		name, val string
		required  bool
	}{{"workspace", m.Workspace, true}, {"origin", m.Origin, true}, {"host", m.Host, true},
		{"agent", m.Agent, false}, {"version", m.Version, false}} {
		if f.required && f.val == "" {
			return fmt.Errorf("%w: %s missing", ErrMalformed, f.name)
		}
		if err := plainText(f.val, maxField); err != nil {
			return fmt.Errorf("%w: %s %v", ErrMalformed, f.name, err)
		}
	}
	switch {
	case (m.Path == "") == (m.URI == ""):
		return fmt.Errorf("%w: exactly one of path and uri is required", ErrMalformed)
	case m.Path != "":
		if err := checkPath(m.Path); err != nil {
			return fmt.Errorf("%w: path %q: %v", ErrMalformed, m.Path, err)
		}
	default:
		if err := checkURI(m.URI); err != nil {
			return fmt.Errorf("%w: uri: %v", ErrMalformed, err)
		}
	}
	if m.Time != "" {
		if _, err := time.Parse(time.RFC3339Nano, m.Time); err != nil {
			return fmt.Errorf("%w: time: %v", ErrMalformed, err)
		}
	}
	return nil
}

// plainText refuses what would garble a log line or a notice: invalid
// UTF-8, control characters, overlong values.
func plainText(s string, limit int) error {
	if len(s) > limit {
		return fmt.Errorf("longer than %d bytes", limit)
	}
	if !utf8.ValidString(s) {
		return errors.New("not UTF-8")
	}
	if strings.IndexFunc(s, unicode.IsControl) >= 0 {
		return errors.New("has a control character")
	}
	return nil
}

// checkPath accepts a clean relative slash path that stays inside the root.
func checkPath(p string) error {
	if err := plainText(p, maxKey); err != nil {
		return err
	}
	switch {
	case strings.HasPrefix(p, "/"):
		return errors.New("absolute")
	case strings.ContainsRune(p, '\\'):
		return errors.New("has a backslash")
	case path.Clean(p) != p || p == ".":
		return errors.New("not clean")
	case p == ".." || strings.HasPrefix(p, "../"):
		return errors.New("leaves the root")
	}
	return nil
}

// checkURI accepts a keyed source's uri: a scheme other than file, and more.
func checkURI(u string) error {
	if err := plainText(u, maxKey); err != nil {
		return err
	}
	s := protocol.Scheme(u)
	if s == "" || len(u) == len(s)+1 {
		return errors.New("no scheme")
	}
	if s == "file" {
		return errors.New("a file goes by path, relative to the workspace root")
	}
	return nil
}

// CheckName accepts a feed name: it is a token of a NATS subject and part of
// a stream name, so letters, digits, '-' and '_' only.
func CheckName(name string) error {
	other := func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
	}
	if len(name) < 1 || len(name) > 64 || strings.IndexFunc(name, other) >= 0 {
		return fmt.Errorf("feed name %q: want 1 to 64 letters, digits, '-' or '_'", name)
	}
	return nil
}
