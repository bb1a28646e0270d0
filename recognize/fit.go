package recognize

import (
	"path"
	"path/filepath"
	"strings"
)

// fitListing is the listing source whose canonical listing of dir equals
// the entries the tool showed: it starts from base and adds to ignore the
// names of whatever the tool left out (a .gitignore'd dist/, say), as long
// as no shown entry has that name. An event when no such query exists.
func (r *recognizer) fitListing(format, dir string, shown []string, base listQuery) Result {
	if r.files == nil || !r.isDir(dir) {
		return event(format, "not a directory now")
	}
	want := canonical(shown)
	names := map[string]bool{}
	for _, e := range shown {
		for _, seg := range strings.Split(strings.TrimSuffix(e, "/"), "/") {
			names[seg] = true
		}
	}
	q := base
	for range 3 {
		have, ok := r.walk(dir, q, 20000)
		if !ok {
			return event(format, "a directory too large to compare")
		}
		if canonical(have) == want {
			return listingResult(format, dir, q, shown)
		}
		shownSet := map[string]bool{}
		for _, e := range shown {
			shownSet[e] = true
		}
		added := false
		for _, e := range have {
			if shownSet[e] {
				continue
			}
			var skip string
			for _, seg := range strings.Split(strings.TrimSuffix(e, "/"), "/") {
				if !names[seg] {
					skip = seg
					break
				}
			}
			if skip == "" {
				return event(format, "the listing cannot be expressed as a listing source")
			}
			if !contains(q.ignore, skip) {
				q.ignore = append(append([]string(nil), q.ignore...), skip)
				added = true
			}
		}
		if !added {
			return event(format, "the tool showed entries the directory does not hold")
		}
	}
	return event(format, "the listing cannot be expressed as a listing source")
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// walk lists dir as the server would for q; false past limit entries.
func (r *recognizer) walk(dir string, q listQuery, limit int) ([]string, bool) {
	var out []string
	seen := 0
	var visit func(rel string, level int) bool
	visit = func(rel string, level int) bool {
		des, err := r.files.ReadDir(filepath.Join(dir, rel))
		if err != nil {
			return true
		}
		for _, d := range des {
			if seen++; seen > limit {
				return false
			}
			name := d.Name()
			if !q.hidden && strings.HasPrefix(name, ".") || contains(q.ignore, name) {
				continue
			}
			p := name
			if rel != "" {
				p = rel + "/" + name
			}
			if d.IsDir() {
				if q.glob == "" {
					out = append(out, p+"/")
				}
				if (q.depth == 0 || level+1 < q.depth) && !visit(p, level+1) {
					return false
				}
				continue
			}
			if q.glob == "" || globMatch(q.glob, p) {
				out = append(out, p)
			}
		}
		return true
	}
	return out, visit("", 0)
}

// globMatch matches a slash path against a glob with *, ?, [...], ** (any
// number of directories) and {a,b}.
func globMatch(glob, p string) bool {
	if i := strings.IndexByte(glob, '{'); i >= 0 {
		if j := strings.IndexByte(glob[i:], '}'); j > 0 {
			for _, alt := range strings.Split(glob[i+1:i+j], ",") {
				if globMatch(glob[:i]+alt+glob[i+j+1:], p) {
					return true
				}
			}
			return false
		}
	}
	return segMatch(strings.Split(glob, "/"), strings.Split(p, "/"))
}

func segMatch(g, p []string) bool {
	for len(g) > 0 {
		if g[0] == "**" {
			for k := 0; k <= len(p); k++ {
				if segMatch(g[1:], p[k:]) {
					return true
				}
			}
			return false
		}
		if len(p) == 0 {
			return false
		}
		if ok, err := path.Match(g[0], p[0]); err != nil || !ok {
			return false
		}
		g, p = g[1:], p[1:]
	}
	return len(p) == 0
}
