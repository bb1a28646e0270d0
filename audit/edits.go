package audit

import (
	"encoding/json"
	"strings"

	"github.com/concord-ctx/concord/recognize"
)

// applyWrite brings the virtual file p to what the tool left, from the
// call's arguments (and what its result showed); false when that cannot be
// told (a command that wrote, an edit of lines never shown).
func (r *replayer) applyWrite(st *Step, res recognize.Result, p string) bool {
	call := st.Tool
	if st.After != nil && len(res.Writes) == 1 {
		r.v.setWhole(p, *st.After)
		return true
	}
	var args map[string]any
	_ = json.Unmarshal(call.Args, &args)
	str := func(k string) (string, bool) { s, ok := args[k].(string); return s, ok }
	switch call.Runtime + "/" + call.Tool {
	case "openhands/file_editor", "openhands/str_replace_editor", "openhands/planning_file_editor":
		cmd, _ := str("command")
		switch cmd {
		case "create":
			text, ok := str("file_text")
			if ok {
				r.v.setWhole(p, text)
			}
			return ok
		case "str_replace":
			old, _ := str("old_str")
			nw, _ := str("new_str")
			if r.v.replace(p, old, nw, false) {
				return true
			}
			return r.spliceSnippet(p, old, nw, res)
		case "insert":
			nw, _ := str("new_str")
			at, ok := args["insert_line"].(float64)
			return ok && r.v.insert(p, int(at), nw)
		case "undo_edit":
			for _, part := range res.Parts {
				if part.Whole() && part.URI == "" {
					r.v.setWhole(p, part.Text)
					return true
				}
			}
		}
	case "codex/apply_patch":
		return r.applyCodexPatch(call, p)
	case "opencode/write":
		text, ok := str("content")
		if ok {
			r.v.setWhole(p, text)
		}
		return ok
	case "opencode/edit":
		// OpenCode keeps the file after the edit in its metadata.
		var meta struct {
			Filediff *struct {
				After *string `json:"after"`
			} `json:"filediff"`
		}
		if json.Unmarshal(call.Metadata, &meta) == nil && meta.Filediff != nil && meta.Filediff.After != nil {
			r.v.setWhole(p, *meta.Filediff.After)
			return true
		}
		old, _ := str("oldString")
		nw, _ := str("newString")
		all, _ := args["replaceAll"].(bool)
		return r.v.replace(p, old, nw, all)
	}
	return false
}

// spliceSnippet applies a str_replace whose old text was never shown whole,
// from the numbered snippet of the new file that file_editor shows: the
// replacement starts on the snippet's first line that begins new_str.
func (r *replayer) spliceSnippet(p, old, nw string, res recognize.Result) bool {
	if len(res.Parts) != 1 || res.Parts[0].Whole() || old == "" {
		return false
	}
	snip := res.Parts[0]
	lines := strings.Split(snip.Text, "\n")
	newLines := strings.Split(nw, "\n")
	oldN := strings.Count(old, "\n") + 1
	newN := len(newLines)
	for i := range lines {
		if i+newN > len(lines) || !strings.Contains(lines[i], newLines[0]) {
			continue
		}
		at := snip.Start + i
		r.v.splice(p, at, oldN, lines[i:i+newN])
		return true
	}
	return false
}
