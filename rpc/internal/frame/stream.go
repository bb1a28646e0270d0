// Package frame reads and writes the JSON-RPC byte stream of
// docs/protocol.md ("Framing"): Content-Length or newline frames, a size cap,
// and answers for frames that cannot be used, so bad input never ends a
// session. Stream is the jsonrpc2.ObjectStream of both the server and the
// Go client; the id scanner recovers the id of a message too large to keep.
package frame

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/concord-ctx/concord/protocol"

	"github.com/sourcegraph/jsonrpc2"
)

// DefaultMaxMessage is the default cap on one message's size.
const DefaultMaxMessage = 16 << 20

// maxHeaderLine caps one Content-Length header line; real headers are tiny.
const maxHeaderLine = 4 << 10

// Stream is the jsonrpc2.ObjectStream for both ends. jsonrpc2's own codecs
// decode straight from the byte stream and its read loop closes the
// connection on any decode error; this one reads one whole frame (with a
// size cap), decodes it, and on failure answers the error itself (server
// side) and reads the next frame, so bad input never ends a session.
type Stream struct {
	r       *bufio.Reader
	w       *bufio.Writer
	closer  io.Closer
	framing string
	max     int64

	// AnswerBad makes the stream answer undecodable frames with JSON-RPC
	// errors (the server does; the client only reports them).
	AnswerBad bool
	// OnBad is told about every undecodable frame (for logs).
	OnBad func(err *protocol.Error)
	// Trace, when set, sees every frame read ("recv") and written ("send").
	Trace func(dir string, frame []byte)
	// OnRequest, when set, takes each well-formed request (or notification)
	// straight from the frame's one decode, in arrival order, and returns
	// the work to do for it (nil: none); the goroutine that read it runs
	// that work while another reads on (readLoop). ReadObject gives
	// jsonrpc2 only the responses. jsonrpc2's own decoding of a request
	// parses it three more times and rebuilds its params through a generic
	// tree. The server sets it.
	OnRequest func(req *jsonrpc2.Request) (run func())
	// AtEnd, when set, runs when the input ends, before ReadObject reports
	// it (which closes the connection): the server finishes and answers the
	// requests it already read.
	AtEnd func()
	// OnSkip, when set, is told at once when a Content-Length header asks
	// for more than the cap: every byte it counts is read and dropped before
	// the refusal can be answered (with the id found in them), so a bogus
	// length would otherwise swallow the messages after it without a word.
	OnSkip func(length, max int64)

	// endErr is the error that ended the input (nil: a clean end), set
	// before AtEnd runs.
	endErr error

	// strayErr describes bytes found before a Content-Length header (the
	// tail of a short frame); pending is the frame read after them, served
	// after that error is answered.
	strayErr string
	pending  []byte

	// With OnRequest: the reading goroutines pass responses on here
	// (closed at the input's end, readErr set before); closed ends them.
	startRead sync.Once
	responses chan message
	readErr   error
	closed    chan struct{}
	closeOnce sync.Once

	wmu sync.Mutex

	// awaited: responses whose result their caller takes from the stream
	// (Await), by id as JSON.
	awaitMu sync.Mutex
	awaited map[string]*awaitedResult
}

type awaitedResult struct {
	raw json.RawMessage
	set bool
}

// resultBufs holds WriteResult's encoding buffers between results: a
// result is not encoded into a buffer grown by doubling from nothing each
// time. A pool, not one buffer per stream: under load many agents' syncs
// are encoded at once, and each took a new buffer while one stayed kept.
var resultBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

var _ jsonrpc2.ObjectStream = (*Stream)(nil)

func New(r io.Reader, w io.Writer, closer io.Closer, framing string, max int64) *Stream {
	if max <= 0 {
		max = DefaultMaxMessage
	}
	if framing == "" {
		framing = protocol.FramingContentLength
	}
	return &Stream{
		r:         bufio.NewReaderSize(r, 64<<10),
		w:         bufio.NewWriterSize(w, 64<<10),
		closer:    closer,
		framing:   framing,
		max:       max,
		responses: make(chan message),
		closed:    make(chan struct{}),
	}
}

// frameError is a frame that cannot be used but did not break the stream.
// id is the request id to echo in the answer; respID, the id of a refused
// response, whose pending call is failed with err instead of left waiting.
type frameError struct {
	err    *protocol.Error
	id     json.RawMessage
	respID json.RawMessage
}

func (e *frameError) Error() string { return e.err.Message }

// ReadObject implements jsonrpc2.ObjectStream. It returns only errors of the
// underlying reader (io.EOF when the peer closed, io.ErrUnexpectedEOF when
// it closed inside a frame: Err says where); bad frames are skipped.
// With OnRequest set, the stream reads on its own goroutines (readLoop) and
// ReadObject takes the responses they pass on.
func (s *Stream) ReadObject(v any) error {
	if s.OnRequest != nil {
		return s.takeResponse(v)
	}
	for {
		m, err := s.next()
		if err != nil {
			return err
		}
		if s.decodeInto(m, v) {
			return nil
		}
	}
}

// Err is the error that ended the input, once it ended: nil for a clean end
// (io.EOF between frames), a *CutError for input that ended inside a frame.
// Read it after ReadObject reported the end (or in AtEnd).
func (s *Stream) Err() error { return s.endErr }

// CutError is input that ended inside a frame (its header block, or before
// the body's Content-Length bytes came): the peer went away mid-message, or
// is not speaking this framing at all. The stream cannot go on. It is an
// io.ErrUnexpectedEOF (errors.Is).
type CutError struct {
	What string // where it ended, for the log: "12 bytes into a body of 100 (Content-Length: 100)"
	Hint string // what to do about it, when known
}

func (e *CutError) Error() string {
	msg := "input ended " + e.What
	if e.Hint != "" {
		msg += ": " + e.Hint
	}
	return msg
}

func (e *CutError) Unwrap() error { return io.ErrUnexpectedEOF }

// cut is the error of a read that ended at n of want bytes (io.ReadFull,
// io.CopyN): a *CutError for the input's end, else the read error.
func cut(err error, what string) error {
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return &CutError{What: what}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// message is one usable frame: a request already decoded (OnRequest set),
// or a frame for jsonrpc2's own message type with the id to answer if it
// does not decode; result is a success response's result as sent.
type message struct {
	req    *jsonrpc2.Request
	frame  []byte
	id     json.RawMessage
	result json.RawMessage
}

// next reads frames until a usable one, answering and skipping the bad.
func (s *Stream) next() (message, error) {
	for {
		frame, err := s.readFrame()
		if err != nil {
			var fe *frameError
			if errors.As(err, &fe) {
				if len(fe.respID) > 0 {
					return message{frame: s.failFrame(fe.respID, fe.err)}, nil
				}
				s.bad(fe.id, fe.err)
				continue
			}
			if err != io.EOF {
				s.endErr = err
			}
			if s.AtEnd != nil {
				s.AtEnd()
			}
			if errors.Is(err, io.ErrUnexpectedEOF) {
				// The detail is in Err(); jsonrpc2 takes this plain value
				// for an end of input, as it does io.EOF, not a protocol
				// error to log again.
				err = io.ErrUnexpectedEOF
			}
			return message{}, err
		}
		if s.Trace != nil {
			s.Trace("recv", frame)
		}
		m, rerr := s.decodeMessage(frame)
		if rerr != nil {
			if rerr.Code == protocol.CodeParseError {
				// A truncated frame (often a Content-Length that counted
				// characters, not UTF-8 bytes) still names its request:
				// answer it, so the caller's call fails instead of waiting.
				var scan idScanner
				scan.Write(frame)
				m.id = scan.requestID()
				if m.id != nil && s.framing == protocol.FramingContentLength && strings.Contains(rerr.Message, "unexpected end of JSON input") {
					rerr = &protocol.Error{Code: rerr.Code, Message: rerr.Message + " (Content-Length must count the body's bytes in UTF-8, not characters)"}
				}
			}
			s.bad(m.id, rerr)
			continue
		}
		return m, nil
	}
}

// decodeInto decodes m's frame into v (jsonrpc2's message type); a frame
// that does not decode is answered, and false returned. The response to an
// awaited id reaches jsonrpc2 with a placeholder result; its caller takes
// the result from the stream.
func (s *Stream) decodeInto(m message, v any) bool {
	if m.result != nil && s.keepAwaited(m.id, m.result) {
		m.frame = []byte(`{"jsonrpc":"2.0","id":` + string(m.id) + `,"result":0}`)
	}
	if err := json.Unmarshal(m.frame, v); err != nil {
		msg := strings.TrimPrefix(err.Error(), "jsonrpc2: ")
		s.bad(m.id, &protocol.Error{Code: protocol.CodeInvalidRequest, Message: "invalid request: " + msg})
		return false
	}
	return true
}

// readLoop reads the server's input, leader and follower: the goroutine
// that read a request admits it (OnRequest, in arrival order), hands the
// reading to a new goroutine and runs the request itself. The request
// starts on the thread the kernel woke for its bytes; a handler goroutine
// would wait for another thread to be woken (about a quarter of a quiet
// sync's round trip on a 2-core VM). Responses to the server's own calls go
// to ReadObject.
func (s *Stream) readLoop() {
	for {
		m, err := s.next()
		if err != nil {
			s.readErr = err // read by takeResponse after the close
			close(s.responses)
			return
		}
		if m.req == nil {
			select {
			case s.responses <- m:
			case <-s.closed:
				return
			}
			continue
		}
		if run := s.OnRequest(m.req); run != nil {
			go s.readLoop()
			run()
			return
		}
	}
}

// takeResponse is ReadObject with OnRequest set; the first call starts the
// reading.
func (s *Stream) takeResponse(v any) error {
	s.startRead.Do(func() { go s.readLoop() })
	for m := range s.responses {
		if s.decodeInto(m, v) {
			return nil
		}
	}
	return s.readErr
}

// decodeMessage decodes one frame's envelope: a request (with OnRequest
// set) comes back decoded, anything else as the frame for jsonrpc2. On
// failure m.id is the request id when one could be read, for the reply.
func (s *Stream) decodeMessage(frame []byte) (message, *protocol.Error) {
	var probe struct {
		JSONRPC json.RawMessage `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  json.RawMessage `json:"method"`
		Params  json.RawMessage `json:"params"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(frame, &probe); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			if t := bytes.TrimSpace(frame); len(t) > 0 && t[0] == '[' {
				return message{}, &protocol.Error{Code: protocol.CodeInvalidRequest, Message: "invalid request: a message must be one JSON object (batches are not supported)"}
			}
			return message{}, &protocol.Error{Code: protocol.CodeInvalidRequest, Message: "invalid request: a message must be one JSON object, not " + te.Value}
		}
		return message{}, &protocol.Error{Code: protocol.CodeParseError, Message: "parse error: " + strings.TrimPrefix(err.Error(), "json: ")}
	}
	id := probe.ID
	if len(id) > 0 && string(id) != "null" && !validID(id) {
		return message{}, &protocol.Error{Code: protocol.CodeInvalidRequest, Message: "invalid request: id must be a string or an integer from 0 to 9223372036854775807"}
	}
	if string(probe.JSONRPC) != `"2.0"` {
		return message{id: id}, &protocol.Error{Code: protocol.CodeInvalidRequest, Message: `invalid request: "jsonrpc" must be "2.0"`}
	}
	if len(probe.Method) > 0 && probe.Method[0] != '"' {
		return message{id: id}, &protocol.Error{Code: protocol.CodeInvalidRequest, Message: `invalid request: "method" must be a string`}
	}
	if s.OnRequest != nil && len(probe.Method) > 0 && len(probe.Result) == 0 && len(probe.Error) == 0 {
		// What jsonrpc2 would have made of it: the params as sent (nil when
		// absent), a null or absent id a notification.
		req := &jsonrpc2.Request{}
		if len(probe.Params) > 0 {
			req.Params = &probe.Params // "null" stays "null", as jsonrpc2 has it
		}
		if json.Unmarshal(probe.Method, &req.Method) != nil {
			return message{id: id}, &protocol.Error{Code: protocol.CodeInvalidRequest, Message: `invalid request: "method" must be a string`}
		}
		switch {
		case len(id) == 0 || string(id) == "null":
			req.Notif = true
		case id[0] == '"':
			req.ID.IsString = true
			json.Unmarshal(id, &req.ID.Str) // validID decoded it
		default:
			n, _ := strconv.ParseInt(string(id), 10, 64) // validID parsed it
			req.ID.Num = uint64(n)
		}
		return message{req: req}, nil
	}
	m := message{frame: frame, id: id}
	if len(probe.Result) > 0 && len(probe.Method) == 0 && len(probe.Error) == 0 {
		m.result = probe.Result
	}
	return m, nil
}

// Await has the result of the response to id kept for its caller, who
// takes it (Awaited.Take) once jsonrpc2's Call returned, instead of jsonrpc2
// decoding it: jsonrpc2 (v0.2.3) decodes every message it reads whole,
// several times, once into interface{} values, and for syncs of hundreds
// of kilobytes that was most of a client's CPU under load
// (docs/reliability.md). jsonrpc2 gets the response with a placeholder
// result (0). Done forgets id.
func (s *Stream) Await(id jsonrpc2.ID) Awaited {
	key, err := id.MarshalJSON()
	if err != nil {
		return Awaited{}
	}
	a := Awaited{s: s, key: string(key), slot: &awaitedResult{}}
	s.awaitMu.Lock()
	if s.awaited == nil {
		s.awaited = map[string]*awaitedResult{}
	}
	s.awaited[a.key] = a.slot
	s.awaitMu.Unlock()
	return a
}

// Awaited is one caller's claim on a response's result (Stream.Await).
type Awaited struct {
	s    *Stream
	key  string
	slot *awaitedResult
}

// Take is the kept result; false when the response came otherwise (an
// error, or none yet).
func (a Awaited) Take() (json.RawMessage, bool) {
	if a.slot == nil {
		return nil, false
	}
	a.s.awaitMu.Lock()
	defer a.s.awaitMu.Unlock()
	return a.slot.raw, a.slot.set
}

// Done forgets the id: a response that comes later passes to jsonrpc2 whole.
func (a Awaited) Done() {
	if a.slot == nil {
		return
	}
	a.s.awaitMu.Lock()
	if a.s.awaited[a.key] == a.slot {
		delete(a.s.awaited, a.key)
	}
	a.s.awaitMu.Unlock()
}

// keepAwaited keeps result for the caller awaiting id, if one does.
func (s *Stream) keepAwaited(id, result json.RawMessage) bool {
	s.awaitMu.Lock()
	defer s.awaitMu.Unlock()
	slot := s.awaited[string(id)]
	if slot == nil || slot.set {
		return false
	}
	slot.raw, slot.set = result, true
	return true
}

// validID reports whether raw is an id this server can echo: a string or a
// non-negative integer (what jsonrpc2 accepts).
func validID(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return false
	}
	if raw[0] == '"' {
		var s string
		return json.Unmarshal(raw, &s) == nil
	}
	// jsonrpc2 keeps numeric ids in an int64 (hence not above MaxInt64).
	n, err := strconv.ParseInt(string(raw), 10, 64)
	return err == nil && n >= 0
}

// echoID is the id as an answer carries it: null when unknown, and a string
// id decoded and encoded again, as the normal path (jsonrpc2's ID) does, so
// invalid UTF-8 becomes U+FFFD in both (issue 10, bug 6) and escapes are
// written one way.
func echoID(id json.RawMessage) json.RawMessage {
	if len(id) == 0 {
		return json.RawMessage("null")
	}
	var str string
	if id[0] != '"' || json.Unmarshal(id, &str) != nil {
		return id
	}
	out, err := json.Marshal(str)
	if err != nil {
		return id
	}
	return out
}

// failFrame is an error response with id, put in place of a response
// that was refused (too large), so the call waiting for it fails now.
func (s *Stream) failFrame(id json.RawMessage, e *protocol.Error) []byte {
	if s.OnBad != nil {
		s.OnBad(e)
	}
	frame, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *protocol.Error `json:"error"`
	}{"2.0", id, e}) // cannot fail: raw id from the scanner, plain strings
	return frame
}

// bad reports an undecodable frame and, on the server, answers it.
func (s *Stream) bad(id json.RawMessage, e *protocol.Error) {
	if s.OnBad != nil {
		s.OnBad(e)
	}
	if !s.AnswerBad {
		return
	}
	msg := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *protocol.Error `json:"error"`
	}{"2.0", echoID(id), e}
	data, err := json.Marshal(msg)
	if err != nil {
		return
	}
	_ = s.writeFrame(data) // a write error ends the session via the read side soon enough
}

// readFrame returns the next frame's bytes, a *frameError for a frame that
// was skipped, or the reader's error.
func (s *Stream) readFrame() ([]byte, error) {
	if s.pending != nil {
		frame := s.pending
		s.pending = nil
		return frame, nil
	}
	if s.framing == protocol.FramingNewline {
		return s.readLineFrame()
	}
	return s.readContentLengthFrame()
}

func (s *Stream) readContentLengthFrame() ([]byte, error) {
	length, headerErr, err := s.readHeaders()
	if err != nil {
		return nil, err
	}
	if length < 0 {
		if headerErr == "" {
			headerErr = "missing Content-Length header"
		}
		return nil, &frameError{err: &protocol.Error{Code: protocol.CodeParseError, Message: "parse error: " + headerErr}}
	}
	if length > s.max {
		if s.OnSkip != nil {
			s.OnSkip(length, s.max)
		}
		var scan idScanner // for the id to answer, in constant memory
		if n, err := io.CopyN(&scan, s.r, length); err != nil {
			return nil, cut(err, fmt.Sprintf("%d bytes into the body of an oversized message (Content-Length: %d, over the limit of %d bytes), which was being skipped", n, length, s.max))
		}
		return nil, &frameError{err: tooLarge(length, s.max), id: scan.requestID(), respID: scan.responseID()}
	}
	body := make([]byte, length)
	if n, err := io.ReadFull(s.r, body); err != nil {
		return nil, cut(err, fmt.Sprintf("%d bytes into a message body of %d (Content-Length: %d)", n, length, length))
	}
	if headerErr != "" {
		return nil, &frameError{err: &protocol.Error{Code: protocol.CodeParseError, Message: "parse error: " + headerErr}}
	}
	if s.strayErr != "" {
		// Report the stray bytes first, then serve this frame.
		msg := "parse error: " + s.strayErr
		s.pending, s.strayErr = body, ""
		return nil, &frameError{err: &protocol.Error{Code: protocol.CodeParseError, Message: msg}}
	}
	return body, nil
}

// newlineHint answers a JSON line sent where a Content-Length header was expected.
const newlineHint = "expected a Content-Length header, got a JSON message: this server reads LSP-style frames (Content-Length: N, a blank line, then N bytes of JSON); for one JSON message per line, start it with --framing=newline"

// readHeaders reads one header block. It returns the Content-Length (-1
// when missing) and the first header problem, or the reader's error.
func (s *Stream) readHeaders() (length int64, headerErr string, err error) {
	length = -1
	started := false
	for {
		line, tooLong, rerr := readLine(s.r, maxHeaderLine)
		if rerr == io.ErrUnexpectedEOF && !started && strings.TrimSpace(line) == "" {
			rerr = io.EOF // trailing blanks after the last frame: a clean end
		}
		if rerr == io.EOF && started || rerr == io.ErrUnexpectedEOF {
			return length, headerErr, headersCut(line, rerr, length, headerErr)
		}
		if rerr != nil {
			return length, headerErr, rerr
		}
		if !started && strings.TrimSpace(line) == "" && !tooLong {
			continue // tolerate blank lines between frames
		}
		if !started && !tooLong && strings.HasPrefix(strings.TrimSpace(line), "{") {
			// A JSON message where a header belongs: someone typed or piped
			// newline-delimited JSON into the default framing. Answer at once
			// with the fix instead of waiting for a header that never comes.
			return -1, newlineHint, nil
		}
		started = true
		if line == "" && !tooLong {
			return length, headerErr, nil
		}
		if tooLong {
			headerErr = "header line too long"
			continue
		}
		if i := strings.Index(strings.ToLower(line), "content-length:"); i > 0 && !headerNameByte(line[i-1]) {
			// The rest of a body whose Content-Length was too short runs
			// into the next header: report the stray bytes, keep the frame.
			s.strayErr = fmt.Sprintf("%d stray bytes before a header (%q): was the previous Content-Length too short?", i, Clip(line[:i], 20))
			line = line[i:]
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			if headerErr == "" {
				headerErr = fmt.Sprintf("malformed header %q", Clip(line, 40))
			}
			continue
		}
		if strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			n, perr := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
			if perr != nil || n < 0 {
				headerErr = fmt.Sprintf("invalid Content-Length %q", Clip(strings.TrimSpace(value), 40))
				continue
			}
			length = n
		}
	}
}

// headersCut is the error of input that ended inside a header block: after
// the last header line (rerr io.EOF), or inside line. Without a
// Content-Length header it is likely not this framing at all: say so.
func headersCut(line string, rerr error, length int64, headerErr string) error {
	e := &CutError{What: "inside a message's headers, before the blank line that ends them"}
	if rerr == io.ErrUnexpectedEOF {
		e.What = fmt.Sprintf("inside a header line (%q)", Clip(line, 40))
		if strings.HasPrefix(strings.TrimSpace(line), "{") {
			e.Hint = newlineHint
			return e
		}
	}
	if headerErr != "" {
		e.What += " (" + headerErr + ")"
	}
	if length < 0 {
		e.Hint = "this server reads LSP-style frames (Content-Length: N, a blank line, then N bytes of JSON); for one JSON message per line, start it with --framing=newline"
	}
	return e
}

func (s *Stream) readLineFrame() ([]byte, error) {
	for {
		var buf []byte
		var size int64
		over := false
		var scan idScanner // for the id of an oversized line, in constant memory
		for {
			chunk, err := s.r.ReadSlice('\n')
			size += int64(len(chunk))
			switch {
			case over:
				scan.Write(chunk)
			case size > s.max+2: // +2: the line terminator is not part of the message
				over = true
				scan.Write(buf)
				scan.Write(chunk)
				buf = nil
			default:
				buf = append(buf, chunk...)
			}
			if err == bufio.ErrBufferFull {
				continue
			}
			if err == io.EOF && size > 0 {
				break // a last line without a newline is still a message
			}
			if err != nil {
				return nil, err
			}
			break
		}
		if over {
			return nil, &frameError{err: tooLarge(size, s.max), id: scan.requestID(), respID: scan.responseID()}
		}
		line := bytes.TrimSpace(buf)
		if len(line) == 0 {
			continue
		}
		if int64(len(line)) > s.max {
			scan.Write(line)
			return nil, &frameError{err: tooLarge(int64(len(line)), s.max), id: scan.requestID(), respID: scan.responseID()}
		}
		return line, nil
	}
}

// headerNameByte: a byte that may precede "Content-Length" inside another
// header's name (X-Original-Content-Length), where it is no stray tail.
func headerNameByte(c byte) bool {
	return c == '-' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func tooLarge(n, max int64) *protocol.Error {
	return &protocol.Error{Code: protocol.CodeInvalidRequest,
		Message: fmt.Sprintf("invalid request: message of %d bytes exceeds the limit of %d bytes (--max-message)", n, max),
		Data:    json.RawMessage(fmt.Sprintf(`{"limit":%d}`, max))}
}

// readLine reads one line without its terminator (LF or CRLF). A line longer
// than limit is consumed whole and reported as tooLong.
func readLine(r *bufio.Reader, limit int) (line string, tooLong bool, err error) {
	var buf []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			buf = append(buf, chunk...)
			if len(buf) > limit+2 {
				tooLong, buf = true, nil
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if err == io.EOF && len(buf) > 0 {
				return strings.TrimRight(string(buf), "\r\n"), tooLong, io.ErrUnexpectedEOF
			}
			return "", tooLong, err
		}
		return strings.TrimRight(string(buf), "\r\n"), tooLong, nil
	}
}

// Clip shortens s to n bytes for a log line or an error message, never
// cutting a character in two.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n-- // never cut a character in two
	}
	return s[:n] + "…"
}

// WriteObject implements jsonrpc2.ObjectStream.
func (s *Stream) WriteObject(obj any) error {
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	return s.writeFrame(data)
}

// WriteResult writes a success response to request id with result encoded
// once, byte for byte what jsonrpc2's Reply writes ({"id":…,"result":…,
// "jsonrpc":"2.0"}). Reply encodes a result three times over (the result,
// the response, the message): for a full sync of 10,000 blocks that was
// most of the server's time, and a heap peak of several copies that the
// process kept as RSS. The encoding buffer of small results is reused; a
// result that writes its own JSON (a sync's, jsonWriter) is streamed once
// it outgrows inlineResult. n is the message's length in bytes, without
// its framing.
func (s *Stream) WriteResult(id jsonrpc2.ID, result any) (n int, err error) {
	idb, err := id.MarshalJSON()
	if err != nil {
		return 0, err
	}
	jw, isWriter := result.(jsonWriter)
	isWriter = isWriter && s.Trace == nil
	buf := resultBufs.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxKeptResult {
			buf.Reset()
			resultBufs.Put(buf) // from here another result may be using it
		}
	}()
	buf.WriteString(`{"id":`)
	buf.Write(idb)
	buf.WriteString(`,"result":`)
	if isWriter {
		// Most syncs are small: encoded once into the buffer. One that
		// outgrows it is only counted from there on, then streamed.
		cw := cappedWriter{buf: buf, left: inlineResult}
		if err := jw.WriteJSON(&cw); err != nil {
			return 0, err
		}
		if cw.over {
			return s.streamResult(idb, jw, inlineResult-cw.left+cw.more)
		}
	} else {
		enc := json.NewEncoder(buf)
		if err := enc.Encode(result); err != nil {
			return 0, err
		}
		buf.Truncate(buf.Len() - 1) // Encode's newline
	}
	buf.WriteString(`,"jsonrpc":"2.0"}`)
	return buf.Len(), s.writeFrame(buf.Bytes())
}

// inlineResult is the most of a self-writing result (a sync's) encoded into
// a buffer before it is streamed instead. A buffered result is encoded
// outside the output's lock; a streamed one is encoded while holding it,
// and every other reply waits. Under load (50 agents, a sync every 10
// observes) syncs of 100-300 kB were streamed, and their encoding under the
// lock was a third of the server's lock waiting; a full sync of 10,000
// blocks (megabytes) is still streamed, so its bytes never stay in the heap.
const inlineResult = maxKeptResult

// cappedWriter writes into buf while left bytes remain; from the first
// write that does not fit it only counts (more).
type cappedWriter struct {
	buf  *bytes.Buffer
	left int
	over bool
	more int
}

func (c *cappedWriter) Write(p []byte) (int, error) {
	if c.over || len(p) > c.left {
		c.over = true
		c.more += len(p)
		return len(p), nil
	}
	c.left -= len(p)
	return c.buf.Write(p)
}

// maxKeptResult bounds an encoding buffer kept for later results
// (resultBufs); a larger one is left to the collector. Syncs,
// the results that reach megabytes, are streamed (jsonWriter).
const maxKeptResult = 1 << 20

// jsonWriter is a result that writes its own JSON, the bytes json.Marshal
// would make, piece by piece (protocol.SyncResult).
type jsonWriter interface{ WriteJSON(w io.Writer) error }

// streamResult writes a response whose result (n bytes of JSON) writes
// itself straight into the connection's buffered writer: a full sync's
// megabytes of JSON are never one buffer, and nothing of them stays in the
// heap after it (before, the encoder's buffer and a kept copy grew the
// server's RSS with every full sync). WriteResult's first pass, which
// counted it, came before: a Content-Length frame needs the length first,
// and an error must come before the frame is begun. That costs less than
// the buffer did.
func (s *Stream) streamResult(idb []byte, jw jsonWriter, n int) (int, error) {
	head := `{"id":` + string(idb) + `,"result":`
	const tail = `,"jsonrpc":"2.0"}`
	size := len(head) + n + len(tail)
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.framing != protocol.FramingNewline {
		if _, err := fmt.Fprintf(s.w, "Content-Length: %d\r\n\r\n", size); err != nil {
			return 0, err
		}
	}
	if _, err := s.w.WriteString(head); err != nil {
		return 0, err
	}
	if err := jw.WriteJSON(s.w); err != nil {
		return 0, err
	}
	if _, err := s.w.WriteString(tail); err != nil {
		return 0, err
	}
	if s.framing == protocol.FramingNewline {
		if err := s.w.WriteByte('\n'); err != nil {
			return 0, err
		}
	}
	return size, s.w.Flush()
}

func (s *Stream) writeFrame(data []byte) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.Trace != nil {
		s.Trace("send", data)
	}
	if s.framing == protocol.FramingNewline {
		if _, err := s.w.Write(data); err != nil {
			return err
		}
		if err := s.w.WriteByte('\n'); err != nil {
			return err
		}
	} else {
		if _, err := fmt.Fprintf(s.w, "Content-Length: %d\r\n\r\n", len(data)); err != nil {
			return err
		}
		if _, err := s.w.Write(data); err != nil {
			return err
		}
	}
	return s.w.Flush()
}

// Close implements jsonrpc2.ObjectStream.
func (s *Stream) Close() error {
	s.closeOnce.Do(func() { close(s.closed) })
	if s.closer == nil {
		return nil
	}
	return s.closer.Close()
}
