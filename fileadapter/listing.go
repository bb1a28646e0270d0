package fileadapter

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/concord-ctx/concord/runtime"
)

// A listing source is a directory URI with a query saying which listing was
// shown (docs/protocol.md, "Listing sources"):
//
//	file:///abs/dir?depth=1&hidden=0&ignore=node_modules,.git&glob=**/*.ts
//
// Its content is the canonical listing: one entry per line, the path relative
// to the directory with "/" separators, directories ending in "/", sorted
// bytewise, joined by "\n" without a trailing newline. With a glob only the
// matching files are listed.

// listSpec is a parsed listing query.
type listSpec struct {
	depth  int      // 1 = the directory's own entries; 0 = unlimited
	hidden bool     // include names starting with "."
	ignore []string // base names skipped with their subtrees, sorted
	glob   string   // keep only files whose relative path matches
	re     *regexp.Regexp
}

// maxListDepth bounds depth=N; 0 already means unlimited.
const maxListDepth = 1 << 10

// parseListQuery parses a listing query (without "?"). Unknown or repeated
// parameters are errors, so a typo never names another listing silently.
func parseListQuery(q string) (listSpec, error) {
	sp := listSpec{depth: 1}
	seen := map[string]bool{}
	for _, kv := range strings.Split(q, "&") {
		if kv == "" {
			continue
		}
		k, raw, _ := strings.Cut(kv, "=")
		v, err := url.PathUnescape(raw)
		if err != nil {
			return sp, fmt.Errorf("listing parameter %q: %v", k, err)
		}
		if seen[k] {
			return sp, fmt.Errorf("listing parameter %q repeated", k)
		}
		seen[k] = true
		switch k {
		case "depth":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || n > maxListDepth {
				return sp, fmt.Errorf("listing depth %q: want 1 (the directory's entries), 0 (unlimited) or a depth up to %d", v, maxListDepth)
			}
			sp.depth = n
		case "hidden":
			switch v {
			case "0", "false":
				sp.hidden = false
			case "1", "true":
				sp.hidden = true
			default:
				return sp, fmt.Errorf("listing hidden %q: want 0 or 1", v)
			}
		case "ignore":
			for _, n := range strings.Split(raw, ",") { // split before unescaping: %2C is a comma in a name
				if n, err = url.PathUnescape(n); err != nil || n == "" {
					continue
				}
				if strings.ContainsAny(n, "/\x00") || n == "." || n == ".." {
					return sp, fmt.Errorf("listing ignore %q: want base names", n)
				}
				sp.ignore = append(sp.ignore, n)
			}
			slices.Sort(sp.ignore)
			sp.ignore = slices.Compact(sp.ignore)
		case "glob":
			if v == "" {
				continue
			}
			re, err := globRegexp(v)
			if err != nil {
				return sp, fmt.Errorf("listing glob %q: %v", v, err)
			}
			sp.glob, sp.re = v, re
		default:
			return sp, fmt.Errorf("unknown listing parameter %q (want depth, hidden, ignore, glob)", k)
		}
	}
	return sp, nil
}

// query is the canonical query: depth always (so a listing id never looks
// like a file id), the others when not their default, in the fixed order.
func (sp listSpec) query() string {
	var b strings.Builder
	b.WriteString("depth=")
	b.WriteString(strconv.Itoa(sp.depth))
	if sp.hidden {
		b.WriteString("&hidden=1")
	}
	if len(sp.ignore) > 0 {
		esc := make([]string, len(sp.ignore))
		for i, n := range sp.ignore {
			esc[i] = queryEscape(n)
		}
		b.WriteString("&ignore=")
		b.WriteString(strings.Join(esc, ","))
	}
	if sp.glob != "" {
		b.WriteString("&glob=")
		b.WriteString(queryEscape(sp.glob))
	}
	return b.String()
}

// queryEscape percent-encodes what would change a query's meaning ('%',
// '&', '=', '#', ',', '+', spaces, controls, non-ASCII) and keeps glob
// syntax readable.
func queryEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("%&=#,+", c) >= 0 {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// globRegexp compiles a glob over slash paths: '*' and '?' stay within a
// path element, '**' spans elements ("**/" also matches no element),
// {a,b} is an alternation (nestable), [...] a character class.
func globRegexp(g string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString("^")
	depth := 0
	for i := 0; i < len(g); i++ {
		c := g[i]
		switch {
		case c == '*' && i+1 < len(g) && g[i+1] == '*':
			i++
			if i+1 < len(g) && g[i+1] == '/' {
				i++
				b.WriteString("(?:.*/)?")
			} else {
				b.WriteString(".*")
			}
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		case c == '{':
			depth++
			b.WriteString("(?:")
		case c == '}' && depth > 0:
			depth--
			b.WriteString(")")
		case c == ',' && depth > 0:
			b.WriteString("|")
		case c == '[':
			j := strings.IndexByte(g[i+1:], ']')
			if j < 0 {
				return nil, errors.New("unclosed [")
			}
			class := g[i+1 : i+1+j]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			if class == "" || class == "^" {
				return nil, errors.New("empty []")
			}
			b.WriteString("[" + strings.ReplaceAll(strings.ReplaceAll(class, `\`, `\\`), "[", `\[`) + "]")
			i += j + 1
		case c == '\\' && i+1 < len(g):
			i++
			b.WriteString(regexp.QuoteMeta(g[i : i+1]))
		default:
			b.WriteString(regexp.QuoteMeta(g[i : i+1]))
		}
	}
	if depth > 0 {
		return nil, errors.New("unclosed {")
	}
	b.WriteString("$")
	return regexp.Compile(b.String())
}

// listID splits a canonical id into its directory path and listing spec;
// ok is false for a plain file id.
func listID(id string) (dir string, sp listSpec, ok bool, err error) {
	i := strings.IndexByte(id, '?')
	if i < 0 {
		return "", sp, false, nil
	}
	dir, err = Path(id[:i])
	if err != nil {
		return "", sp, false, err
	}
	sp, err = parseListQuery(id[i+1:])
	if err != nil {
		return "", sp, false, fmt.Errorf("%w: %q: %v", runtime.ErrInvalidURI, id, err)
	}
	return dir, sp, true, nil
}

// IsListing reports whether id names a directory listing, not a file.
func (a *Adapter) IsListing(id string) bool {
	_, _, ok, err := listID(id)
	return ok && err == nil
}

// normalizeListing canonicalises a listing URI: the directory resolved and
// inside the roots, the query in canonical form.
func (a *Adapter) normalizeListing(uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return "", fmt.Errorf("%w: %v (%s)", runtime.ErrInvalidURI, err, encodeHint)
	}
	if u.Host != "" && u.Host != "localhost" {
		return "", fmt.Errorf("%w: %q: remote host %q", runtime.ErrInvalidURI, uri, u.Host)
	}
	if u.Fragment != "" || strings.Contains(uri, "#") {
		return "", fmt.Errorf("%w: %q has a fragment: a '#' in a path must be percent-encoded (%s)", runtime.ErrInvalidURI, uri, encodeHint)
	}
	sp, err := parseListQuery(u.RawQuery)
	if err != nil {
		return "", fmt.Errorf("%w: %q: %v", runtime.ErrInvalidURI, uri, err)
	}
	p := u.Path
	if p == "" || !filepath.IsAbs(p) || strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("%w: %q is not a file:/// URI of an absolute directory", runtime.ErrInvalidURI, uri)
	}
	p = filepath.Clean(p)
	rp, err := resolve(p)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", runtime.ErrInvalidURI, uri, err)
	}
	if !a.inside(rp) {
		return "", fmt.Errorf("%s: %w", p, runtime.ErrOutsideRoots)
	}
	return pathURI(rp) + "?" + sp.query(), nil
}

// list walks dir under sp. It reads no file, follows no symlink (a symlink
// is listed as an entry, never entered) and skips unreadable subdirectories
// as find does. dirs receives every directory read (for stamps and watches).
func (a *Adapter) list(dir string, sp listSpec, maxBytes int64) (text string, dirs []string, err error) {
	if _, err := a.confine(dir); err != nil {
		return "", nil, err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return "", nil, classify(dir, err)
	}
	if !fi.IsDir() {
		return "", nil, fmt.Errorf("list %s: not a directory (%s): %w", dir, fi.Mode().Type(), runtime.ErrUnreadable)
	}
	var out []string
	size := int64(0)
	var walk func(d, rel string, level int) error
	walk = func(d, rel string, level int) error {
		ents, err := os.ReadDir(d)
		if err != nil {
			if rel == "" {
				return classify(dir, err)
			}
			return nil // an unreadable subdirectory: listed, not entered
		}
		dirs = append(dirs, d)
		for _, e := range ents {
			name := e.Name()
			if !sp.hidden && strings.HasPrefix(name, ".") {
				continue
			}
			if _, skip := slices.BinarySearch(sp.ignore, name); skip {
				continue
			}
			r := path.Join(rel, name)
			isDir := e.IsDir() // Type from the directory entry: a symlink is not a dir
			if sp.re == nil || (!isDir && sp.re.MatchString(r)) {
				entry := r
				if isDir {
					entry += "/"
				}
				out = append(out, entry)
				size += int64(len(entry)) + 1
				if size > maxBytes {
					return fmt.Errorf("list %s: more than %d bytes of entries: %w", dir, maxBytes, runtime.ErrTooLarge)
				}
			}
			if isDir && (sp.depth == 0 || level+1 < sp.depth) {
				if err := walk(filepath.Join(d, name), r, level+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(dir, "", 0); err != nil {
		return "", nil, err
	}
	slices.Sort(out)
	return strings.Join(out, "\n"), dirs, nil
}

// readListing is Read for a listing id.
func (a *Adapter) readListing(id, dir string, sp listSpec) (runtime.Content, error) {
	text, dirs, err := a.list(dir, sp, a.maxBytes)
	if err != nil {
		return runtime.Content{}, err
	}
	a.mu.Lock()
	if a.listDirs == nil {
		a.listDirs = map[string][]string{}
	}
	a.listDirs[id] = dirs
	a.mu.Unlock()
	sum := sha256.Sum256([]byte(text))
	return runtime.Content{Text: text, Version: "sha256:" + hex.EncodeToString(sum[:])}, nil
}

// listStamp fingerprints a listing without reading a directory: the stamps
// of every directory its last read visited (an entry added, removed or
// renamed moves its directory's mtime and ctime; a new subdirectory moves
// its parent's). Before the first read it is the directory's own stamp.
func (a *Adapter) listStamp(id, dir string) (string, error) {
	if _, err := a.confine(dir); err != nil {
		return "", err
	}
	a.mu.Lock()
	dirs := a.listDirs[id]
	a.mu.Unlock()
	if dirs == nil {
		st, err := stampNow(dir)
		if err != nil {
			return "", err
		}
		return "unread:" + st, nil
	}
	now := time.Now()
	h := sha256.New()
	racy := false
	var buf bytes.Buffer
	for _, d := range dirs {
		st, r, err := statStamp(d, now)
		if err != nil {
			if d == dir {
				return "", err
			}
			st = "gone"
		}
		racy = racy || r
		buf.Reset()
		buf.WriteString(d)
		buf.WriteByte(0)
		buf.WriteString(st)
		buf.WriteByte(0)
		h.Write(buf.Bytes())
	}
	st := "list:" + hex.EncodeToString(h.Sum(nil)[:16])
	if racy {
		st += racySuffix + strconv.FormatInt(now.UnixNano(), 10)
	}
	return st, nil
}
