package hook

import (
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// A hook process reads two fields of its input and one of its answer. With
// encoding/json, a fresh process pays about 0.15 ms to build its decoders
// on every tool call, half of what the hook adds to the agent's (Go's
// reflection-based decoder caches per type, per process). These few
// functions read what the hook needs without it; the server, a long-lived
// process, still reads everything with encoding/json. FuzzScan holds them
// to encoding/json's reading.

// errSyntax is input that is not the JSON the scanner expects.
var errSyntax = errors.New("invalid JSON")

// objectMembers calls each for every member of the JSON object at the
// start of data (after white space), in order, with the member's raw value;
// each returning false stops the walk. The values are checked only as far
// as skipping them needs: strings and nesting, not numbers' grammar.
func objectMembers(data []byte, each func(key string, raw []byte) bool) error {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return fmt.Errorf("%w: not an object", errSyntax)
	}
	i = skipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return nil
	}
	for {
		end, err := skipString(data, i)
		if err != nil {
			return err
		}
		key, err := unquote(data[i:end])
		if err != nil {
			return err
		}
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return fmt.Errorf("%w: want ':' after a key", errSyntax)
		}
		i = skipSpace(data, i+1)
		end, err = skipValue(data, i, 0)
		if err != nil {
			return err
		}
		if !each(key, data[i:end]) {
			return nil
		}
		i = skipSpace(data, end)
		if i >= len(data) {
			return fmt.Errorf("%w: unterminated object", errSyntax)
		}
		switch data[i] {
		case ',':
			i = skipSpace(data, i+1)
		case '}':
			return nil
		default:
			return fmt.Errorf("%w: want ',' or '}' in an object", errSyntax)
		}
	}
}

// maxDepth bounds nesting, as encoding/json does (10,000).
const maxDepth = 10000

// skipValue returns the end of the value starting at i.
func skipValue(data []byte, i, depth int) (int, error) {
	if i >= len(data) {
		return 0, fmt.Errorf("%w: want a value", errSyntax)
	}
	if depth > maxDepth {
		return 0, fmt.Errorf("%w: nested too deeply", errSyntax)
	}
	switch c := data[i]; {
	case c == '"':
		return skipString(data, i)
	case c == '{' || c == '[':
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		i = skipSpace(data, i+1)
		if i < len(data) && data[i] == closing {
			return i + 1, nil
		}
		for {
			if c == '{' {
				end, err := skipString(data, i)
				if err != nil {
					return 0, err
				}
				i = skipSpace(data, end)
				if i >= len(data) || data[i] != ':' {
					return 0, fmt.Errorf("%w: want ':' after a key", errSyntax)
				}
				i = skipSpace(data, i+1)
			}
			end, err := skipValue(data, i, depth+1)
			if err != nil {
				return 0, err
			}
			i = skipSpace(data, end)
			if i >= len(data) {
				return 0, fmt.Errorf("%w: unterminated %c", errSyntax, c)
			}
			if data[i] == closing {
				return i + 1, nil
			}
			if data[i] != ',' {
				return 0, fmt.Errorf("%w: want ',' or '%c'", errSyntax, closing)
			}
			i = skipSpace(data, i+1)
		}
	default:
		// A number, true, false or null: up to the next delimiter.
		start := i
		for i < len(data) && !isDelim(data[i]) {
			i++
		}
		if i == start {
			return 0, fmt.Errorf("%w: unexpected %q", errSyntax, data[i])
		}
		return i, nil
	}
}

func isDelim(c byte) bool {
	switch c {
	case ',', '}', ']', ':', ' ', '\t', '\n', '\r', '"', '{', '[':
		return true
	}
	return false
}

// skipString returns the end of the string literal starting at i.
func skipString(data []byte, i int) (int, error) {
	if i >= len(data) || data[i] != '"' {
		return 0, fmt.Errorf("%w: want a string", errSyntax)
	}
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i + 1, nil
		}
	}
	return 0, fmt.Errorf("%w: unterminated string", errSyntax)
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// unquote decodes a JSON string literal (quotes included) as
// encoding/json does: invalid UTF-8 and lone surrogates become U+FFFD.
func unquote(lit []byte) (string, error) {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return "", fmt.Errorf("%w: want a string", errSyntax)
	}
	s := lit[1 : len(lit)-1]
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 >= len(s) {
				return "", fmt.Errorf("%w: bad escape", errSyntax)
			}
			switch e := s[i+1]; e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, n, err := unicodeEscape(s[i:])
				if err != nil {
					return "", err
				}
				out = utf8.AppendRune(out, r)
				i += n
				continue
			default:
				return "", fmt.Errorf("%w: bad escape \\%c", errSyntax, e)
			}
			i += 2
		case c < 0x20 || c == '"':
			return "", fmt.Errorf("%w: control character in a string", errSyntax)
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, n := utf8.DecodeRune(s[i:])
			out = utf8.AppendRune(out, r) // RuneError for invalid UTF-8, as encoding/json
			i += n
		}
	}
	return string(out), nil
}

// unicodeEscape reads \uXXXX (and its low surrogate's \uXXXX after a high
// one) at the start of s: the rune and the bytes read.
func unicodeEscape(s []byte) (rune, int, error) {
	hex4 := func(s []byte) (rune, bool) {
		if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(string(s[2:6]), 16, 32)
		return rune(v), err == nil
	}
	r, ok := hex4(s)
	if !ok {
		return 0, 0, fmt.Errorf("%w: bad \\u escape", errSyntax)
	}
	if utf16.IsSurrogate(r) {
		if r2, ok := hex4(s[6:]); ok {
			if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
				return dec, 12, nil
			}
		}
		return utf8.RuneError, 6, nil
	}
	return r, 6, nil
}

// appendQuoted appends s as a JSON string literal: quotes, backslashes and
// control characters escaped, invalid UTF-8 as U+FFFD (as encoding/json).
func appendQuoted(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
			i++
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			i++
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				b = append(b, `\ufffd`...)
			} else {
				b = append(b, s[i:i+n]...)
			}
			i += n
		}
	}
	return append(b, '"')
}
