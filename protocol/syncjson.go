package protocol

import (
	"bytes"
	"encoding/json"
	"io"
)

// WriteJSON writes r exactly as json.Marshal encodes it, one block view at
// a time: a full sync of 10,000 blocks is megabytes of JSON, and
// json.Marshal builds all of it in one buffer grown by doubling (and kept
// in its pool) before a byte is written. A server that streams it holds no
// more than one view's encoding.
func (r SyncResult) WriteJSON(w io.Writer) error {
	if len(r.Blocks) == 0 {
		return json.NewEncoder(trimNewline{w}).Encode(r)
	}
	// Everything but the views, encoded with an empty list where they go.
	frame := r
	frame.Blocks = []BlockView{}
	b, err := json.Marshal(frame)
	if err != nil {
		return err
	}
	const list = `"blocks":[`
	at := bytes.Index(b, []byte(list+"]")) + len(list) // the first: no string holds an unescaped quote
	if _, err := w.Write(b[:at]); err != nil {
		return err
	}
	enc := json.NewEncoder(trimNewline{w})
	for i := range r.Blocks {
		if i > 0 {
			if _, err := io.WriteString(w, ","); err != nil {
				return err
			}
		}
		if err := enc.Encode(&r.Blocks[i]); err != nil {
			return err
		}
	}
	_, err = w.Write(b[at:])
	return err
}

// trimNewline drops the newline json.Encoder writes after each value (in
// the same Write as the value).
type trimNewline struct{ w io.Writer }

func (t trimNewline) Write(p []byte) (int, error) {
	if n := len(p); n > 0 && p[n-1] == '\n' {
		if _, err := t.w.Write(p[:n-1]); err != nil {
			return 0, err
		}
		return n, nil
	}
	return t.w.Write(p)
}
