// Package tokens counts prompt and completion tokens with a real BPE
// (cl100k_base) and measures how much of a prompt's prefix a provider's
// prompt cache could reuse from the previous call.
//
// The vocabulary is embedded (github.com/pkoukk/tiktoken-go-loader): counting
// never touches the network.
package tokens

import (
	"fmt"
	"sync"

	tiktoken "github.com/pkoukk/tiktoken-go"
	loader "github.com/pkoukk/tiktoken-go-loader"
)

// Encoding is the BPE the benchmark counts with.
const Encoding = "cl100k_base"

var (
	loadOnce sync.Once
	loadEnc  *tiktoken.Tiktoken
	loadErr  error
)

func encoding() (*tiktoken.Tiktoken, error) {
	loadOnce.Do(func() {
		// The offline loader reads the embedded vocabulary; set it before the
		// first GetEncoding so the library never tries its download path.
		tiktoken.SetBpeLoader(loader.NewOfflineLoader())
		loadEnc, loadErr = tiktoken.GetEncoding(Encoding)
		if loadErr != nil {
			loadErr = fmt.Errorf("load %s: %w", Encoding, loadErr)
		}
	})
	return loadEnc, loadErr
}

// Counter encodes text and memoises the result per distinct string: a
// benchmark re-sends the same messages on every call, so each message is
// encoded once. Safe for concurrent use.
type Counter struct {
	enc   *tiktoken.Tiktoken
	mu    sync.Mutex
	cache map[string][]int
}

// New loads the embedded cl100k_base vocabulary.
func New() (*Counter, error) {
	enc, err := encoding()
	if err != nil {
		return nil, err
	}
	return &Counter{enc: enc, cache: map[string][]int{}}, nil
}

// Encode returns the token ids of s (special-token text is encoded as plain
// text). The returned slice is shared: do not modify it.
func (c *Counter) Encode(s string) []int {
	c.mu.Lock()
	ids, ok := c.cache[s]
	c.mu.Unlock()
	if ok {
		return ids
	}
	ids = c.enc.EncodeOrdinary(s)
	c.mu.Lock()
	c.cache[s] = ids
	c.mu.Unlock()
	return ids
}

// Count is len(Encode(s)).
func (c *Counter) Count(s string) int { return len(c.Encode(s)) }

// CommonPrefix is the number of leading tokens a and b share: what a prompt
// cache keyed on exact prefixes could serve from the previous call.
func CommonPrefix(a, b []int) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
