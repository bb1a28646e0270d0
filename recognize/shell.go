package recognize

import (
	"path"
	"path/filepath"
	"sort"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// pipeline is a shell command reduced to what the recognizers need: the
// directory its programs ran in and the argv of each pipeline stage.
type pipeline struct {
	cwd    string
	stages [][]string
}

// parseShell parses src with a real shell parser and accepts only
// `[cd DIR (&& | ;)] STAGE [| STAGE]...`, where every word is a literal
// after quote removal (no expansions, globs or substitutions) and the only
// redirection is stderr to /dev/null. reason says why anything else is not.
func (r *recognizer) parseShell(src, cwd string) (pipeline, string) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		return pipeline{}, "shell syntax: " + err.Error()
	}
	var stmts []*syntax.Stmt
	for _, s := range f.Stmts {
		flattenAnd(s, &stmts)
	}
	if len(stmts) == 0 {
		return pipeline{}, "empty command"
	}
	p := pipeline{cwd: cwd}
	for len(stmts) > 1 {
		dir, ok := cdTarget(stmts[0])
		if !ok {
			return pipeline{}, "a sequence other than `cd DIR && ...`"
		}
		next, why := r.resolveCd(p.cwd, dir, len(stmts) == 2)
		if why != "" {
			return pipeline{}, why
		}
		p.cwd = next
		stmts = stmts[1:]
	}
	var why string
	p.stages, why = stages(stmts[0], r.globber(p.cwd))
	if why != "" {
		return pipeline{}, why
	}
	return p, ""
}

// flattenAnd lists `a && b && c` (and `a; b`) as statements in order.
func flattenAnd(s *syntax.Stmt, out *[]*syntax.Stmt) {
	if b, ok := s.Cmd.(*syntax.BinaryCmd); ok && b.Op == syntax.AndStmt && !s.Negated && !s.Background && len(s.Redirs) == 0 {
		flattenAnd(b.X, out)
		flattenAnd(b.Y, out)
		return
	}
	*out = append(*out, s)
}

// cdTarget is DIR of a plain `cd DIR` statement.
func cdTarget(s *syntax.Stmt) (string, bool) {
	if s.Negated || s.Background || len(s.Redirs) > 0 {
		return "", false
	}
	c, ok := s.Cmd.(*syntax.CallExpr)
	if !ok || len(c.Assigns) > 0 || len(c.Args) != 2 {
		return "", false
	}
	argv, ok := words(c.Args)
	if !ok || argv[0] != "cd" || argv[1] == "-" || strings.HasPrefix(argv[1], "-") {
		return "", false
	}
	return argv[1], true
}

// resolveCd is the directory after `cd dir` from cwd. The reported working
// directory may be the one after the command (OpenHands), so a relative dir
// is valid when it names the reported directory itself (last is the final
// cd); an absolute one says where the rest runs.
func (r *recognizer) resolveCd(cwd, dir string, last bool) (string, string) {
	if filepath.IsAbs(dir) {
		return filepath.Clean(dir), ""
	}
	if cwd == "" {
		return "", "relative cd without a working directory"
	}
	clean := filepath.Clean(dir)
	if r.call.Runtime == OpenHands || r.call.Runtime == ClaudeCode {
		// Both report the directory the command left the shell in.
		if last && !strings.Contains(clean, "..") && (clean == "." || strings.HasSuffix(cwd, "/"+clean)) {
			return cwd, "" // the reported directory is where the cd went
		}
		return "", "cd " + dir + " does not lead to the reported working directory"
	}
	return filepath.Join(cwd, clean), ""
}

// stages is the argv of each stage of a plain pipeline.
func stages(s *syntax.Stmt, glob func(string) ([]string, bool)) ([][]string, string) {
	if s.Negated || s.Background || s.Coprocess {
		return nil, "not a plain command"
	}
	if why := okRedirs(s.Redirs); why != "" {
		return nil, why
	}
	switch c := s.Cmd.(type) {
	case *syntax.CallExpr:
		if len(c.Assigns) > 0 {
			return nil, "variable assignment"
		}
		argv, ok := expand(c.Args, glob)
		if !ok {
			return nil, "a word the shell would expand"
		}
		if len(argv) == 0 {
			return nil, "empty command"
		}
		return [][]string{argv}, ""
	case *syntax.BinaryCmd:
		if c.Op != syntax.Pipe {
			return nil, "a list other than a pipeline"
		}
		x, why := stages(c.X, glob)
		if why != "" {
			return nil, why
		}
		y, why := stages(c.Y, glob)
		if why != "" {
			return nil, why
		}
		return append(x, y...), ""
	}
	return nil, "not a simple command"
}

// okRedirs accepts only 2>/dev/null, which changes nothing shown.
func okRedirs(rs []*syntax.Redirect) string {
	for _, rd := range rs {
		if rd.Op != syntax.RdrOut || rd.N == nil || rd.N.Value != "2" || rd.Word == nil {
			return "a redirection"
		}
		w, ok := word(rd.Word)
		if !ok || w != "/dev/null" {
			return "a redirection"
		}
	}
	return ""
}

// expand is the argv of ws: literal words as they are, and a word that is
// one unquoted glob in its last path segment (src/*.py) expanded against
// the files now, as bash would (sorted, dot files only for a pattern that
// starts with a dot; no match: refused). The files may have changed since
// the command ran: every recognized read must still print back as the
// output, which a different expansion would not.
func expand(ws []*syntax.Word, glob func(string) ([]string, bool)) ([]string, bool) {
	var out []string
	for i, w := range ws {
		if s, ok := word(w); ok {
			out = append(out, s)
			continue
		}
		pat, ok := globWord(w)
		if !ok || i == 0 || glob == nil {
			return nil, false
		}
		names, ok := glob(pat)
		if !ok {
			return nil, false
		}
		out = append(out, names...)
	}
	return out, true
}

// globWord is a word that is a plain unquoted literal holding *, ? or [.
func globWord(w *syntax.Word) (string, bool) {
	if len(w.Parts) != 1 {
		return "", false
	}
	lit, ok := w.Parts[0].(*syntax.Lit)
	if !ok || strings.ContainsAny(lit.Value, "\\{~") || !strings.ContainsAny(lit.Value, "*?[") {
		return "", false
	}
	if strings.ContainsAny(path.Dir(lit.Value), "*?[") {
		return "", false // a glob in a directory segment
	}
	return lit.Value, true
}

// globber expands a pattern relative to cwd through the recognizer's files.
func (r *recognizer) globber(cwd string) func(string) ([]string, bool) {
	if r.files == nil {
		return nil
	}
	return func(pat string) ([]string, bool) {
		dir, base := path.Split(pat)
		at := cwd
		if dir != "" {
			at = resolve(cwd, dir)
		}
		des, err := r.files.ReadDir(at)
		if err != nil {
			return nil, false
		}
		var out []string
		for _, de := range des {
			name := de.Name()
			if strings.HasPrefix(name, ".") && !strings.HasPrefix(base, ".") {
				continue
			}
			if ok, err := path.Match(base, name); err == nil && ok {
				out = append(out, dir+name)
			}
		}
		sort.Strings(out)
		return out, len(out) > 0
	}
}

func words(ws []*syntax.Word) ([]string, bool) {
	out := make([]string, 0, len(ws))
	for _, w := range ws {
		s, ok := word(w)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// word is a word's value after quote removal, when it has no expansion:
// literals, '...' and "..." without $ or `.
func word(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for i, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			if !unquoted(&b, p.Value, i == 0) {
				return "", false
			}
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return "", false
			}
			for _, dp := range p.Parts {
				lit, ok := dp.(*syntax.Lit)
				if !ok {
					return "", false
				}
				b.WriteString(doubleQuoted(lit.Value))
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

// unquoted writes an unquoted literal after quote removal; false when the
// shell would expand it (globs, braces, a leading ~).
func unquoted(b *strings.Builder, v string, first bool) bool {
	if first && strings.HasPrefix(v, "~") {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch c {
		case '\\':
			if i+1 < len(v) {
				i++
				if v[i] != '\n' {
					b.WriteByte(v[i])
				}
			}
			continue
		case '*', '?', '[', '{':
			return false
		}
		b.WriteByte(c)
	}
	return true
}

// doubleQuoted removes the backslashes that escape inside "...": before $,
// `, ", \ and newline only (so "a\|b" stays a\|b, grep's alternation).
func doubleQuoted(v string) string {
	if !strings.Contains(v, `\`) {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) && strings.IndexByte("$`\"\\\n", v[i+1]) >= 0 {
			i++
			if v[i] != '\n' {
				b.WriteByte(v[i])
			}
			continue
		}
		b.WriteByte(v[i])
	}
	return b.String()
}
