package frame

import (
	"bytes"
	"encoding/json"
)

// maxScannedID caps the bytes kept of an "id" value; longer ids are not
// echoed (real ids are short numbers or strings).
const maxScannedID = 256

// idScanner reads a message that is too large to keep, byte by byte in
// constant memory, and remembers what an answer needs: the top-level "id"
// and whether the message is a request (a "method") or a response
// ("result"/"error"). Without it a refused message could only be answered
// with "id": null, which leaves the sender's pending call waiting forever.
// It assumes nothing about the bytes: on malformed JSON it just learns less.
type idScanner struct {
	depth   int  // nesting depth outside strings; 1 = inside the top-level object
	inStr   bool // inside a string
	esc     bool // the previous byte was a backslash inside a string
	keyNext bool // at depth 1, the next string is a key
	inKey   bool // the current string is a top-level key
	key     []byte
	keyOver bool

	field string // the top-level key whose value is being read
	inVal bool   // reading a top-level value (after ':')
	val   []byte // the value of "id", while being read
	over  bool   // the "id" value exceeded maxScannedID

	id                         json.RawMessage
	hasMethod, hasResult, done bool
	bad                        bool // the top level is not an object
}

// Write feeds p; it never fails (an io.Writer for io.Copy).
func (s *idScanner) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		// Inside a long string nothing matters until a quote or backslash:
		// skip there at memchr speed (the bulk of a huge message is text).
		if s.inStr && !s.esc && !s.inKey && !(s.inVal && s.field == "id") {
			i := bytes.IndexAny(p, "\"\\")
			if i < 0 {
				break
			}
			p = p[i:]
		}
		s.feed(p[0])
		p = p[1:]
	}
	return n, nil
}

func (s *idScanner) feed(c byte) {
	if s.bad || s.done {
		return
	}
	if s.inVal && s.field == "id" && !(s.depth == 1 && !s.inStr && (c == ',' || c == '}')) {
		s.keepID(c)
	}
	if s.inStr {
		s.feedString(c)
		return
	}
	switch c {
	case ' ', '\t', '\r', '\n':
	case '"':
		s.inStr = true
		if s.depth == 1 && s.keyNext {
			s.keyNext, s.inKey, s.key, s.keyOver = false, true, s.key[:0], false
		}
	case '{', '[':
		s.open(c)
	case '}', ']':
		if s.depth == 1 {
			s.endValue()
			s.done = true
		}
		s.depth--
	case ',':
		if s.depth == 1 {
			s.endValue()
			s.keyNext = true
		}
	case ':':
		if s.depth == 1 && !s.inVal {
			s.startValue()
		}
	default:
		if s.depth == 0 {
			s.bad = true
		}
	}
}

// keepID keeps a byte of the "id" value, up to maxScannedID.
func (s *idScanner) keepID(c byte) {
	if len(s.val) < maxScannedID {
		s.val = append(s.val, c)
	} else {
		s.over = true
	}
}

// feedString takes a byte inside a string: a top-level key is kept (up to
// 16 bytes, enough for the keys that matter), escapes are skipped.
func (s *idScanner) feedString(c byte) {
	if s.inKey && c != '"' || s.inKey && s.esc {
		if len(s.key) < 16 {
			s.key = append(s.key, c)
		} else {
			s.keyOver = true
		}
	}
	switch {
	case s.esc:
		s.esc = false
	case c == '\\':
		s.esc = true
	case c == '"':
		s.inStr = false
		if s.inKey {
			s.endKey()
		}
	}
}

// endKey names the top-level field whose value comes next.
func (s *idScanner) endKey() {
	s.inKey, s.field = false, ""
	if s.keyOver {
		return
	}
	s.field = string(s.key)
	if bytes.IndexByte(s.key, '\\') >= 0 { // "\u0069d" is "id" too
		var k string
		if json.Unmarshal(append(append([]byte{'"'}, s.key...), '"'), &k) == nil {
			s.field = k
		}
	}
}

func (s *idScanner) open(c byte) {
	if s.depth == 0 && c != '{' {
		s.bad = true
		return
	}
	s.depth++
	if s.depth == 1 {
		s.keyNext = true
	}
}

// startValue begins a top-level value (after ':') and notes what kind of
// message its key makes this.
func (s *idScanner) startValue() {
	s.inVal = true
	s.val, s.over = s.val[:0], false
	switch s.field {
	case "method":
		s.hasMethod = true
	case "result", "error":
		s.hasResult = true
	}
}

func (s *idScanner) endValue() {
	if s.inVal && s.field == "id" && !s.over {
		s.id = json.RawMessage(bytes.TrimSpace(append([]byte(nil), s.val...)))
	}
	s.inVal, s.field = false, ""
}

// requestID is the id to echo in an error answer: the message was a request
// (a "method", no "result"/"error") with an id this server can echo.
func (s *idScanner) requestID() json.RawMessage {
	if s.bad || !s.hasMethod || s.hasResult || !validID(s.id) {
		return nil
	}
	return s.id
}

// responseID is the id of a response (a "result" or "error", no "method"):
// the pending call it answers must fail rather than wait forever.
func (s *idScanner) responseID() json.RawMessage {
	if s.bad || s.hasMethod || !s.hasResult || !validID(s.id) {
		return nil
	}
	return s.id
}
