package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Input is one session to read: an OpenHands conversation directory (with
// events/), or one JSON/JSONL file (an OpenCode export, a Claude Code
// transcript, a Codex rollout, a Gemini CLI chat, or an OpenAI-format message list).
type Input struct {
	Path string
	Dir  bool // an OpenHands conversation directory
}

// Find lists the inputs under paths, in a stable order. A directory is an
// OpenHands conversation when it holds events/ with event-*.json files (its
// events/ directory itself counts as it), else it is searched for
// conversations and .json/.jsonl files. A path that does not exist, or a
// file of another kind named outright, is an error naming it.
func Find(paths []string) ([]Input, []InputError) {
	var ins []Input
	var errs []InputError
	seen := map[string]bool{}
	add := func(in Input) {
		if !seen[in.Path] {
			seen[in.Path] = true
			ins = append(ins, in)
		}
	}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			errs = append(errs, InputError{File: p, Error: err.Error()})
			continue
		}
		if !st.IsDir() {
			add(Input{Path: p})
			continue
		}
		err = filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
			if err != nil {
				errs = append(errs, InputError{File: q, Error: err.Error()})
				return nil
			}
			if d.IsDir() {
				switch {
				case d.Name() == "events" && hasEvents(q):
					add(Input{Path: filepath.Dir(q), Dir: true})
					return fs.SkipDir
				case hasEvents(filepath.Join(q, "events")):
					add(Input{Path: q, Dir: true})
					return fs.SkipDir
				}
				return nil
			}
			if ext := strings.ToLower(filepath.Ext(q)); (ext == ".json" || ext == ".jsonl") && !ccSidecar(q) {
				add(Input{Path: q})
			}
			return nil
		})
		if err != nil {
			errs = append(errs, InputError{File: p, Error: err.Error()})
		}
	}
	sort.SliceStable(ins, func(i, j int) bool { return ins[i].Path < ins[j].Path })
	return ins, errs
}

func hasEvents(dir string) bool {
	m, _ := filepath.Glob(filepath.Join(dir, "event-*.json"))
	return len(m) > 0
}

// ErrUnknownFormat is a file that is none of the accepted inputs.
var ErrUnknownFormat = errors.New("not a session this audit reads (an OpenHands conversation directory, an `opencode export` JSON, a Claude Code transcript, a Codex rollout, a Gemini CLI chat, or an OpenAI-format message list)")

// ErrSQLite is a SQLite database given as an input (OpenCode's opencode.db).
var ErrSQLite = errors.New("a SQLite database (OpenCode 1.18 keeps sessions in opencode.db): export each session with `opencode export <sessionID> > <sessionID>.json` and audit the JSON")

// Load reads one input (read-only).
func Load(in Input) (*Session, error) {
	if in.Dir {
		return loadOpenHands(in.Path)
	}
	data, err := os.ReadFile(in.Path)
	if err != nil {
		return nil, err
	}
	if bytes.HasPrefix(data, []byte("SQLite format 3\x00")) {
		return nil, ErrSQLite
	}
	if isClaudeCode(data) {
		return parseClaudeCode(in.Path, data)
	}
	if isGeminiChat(data) {
		return parseGeminiCLI(in.Path, data)
	}
	if isCodexRollout(data) {
		return parseCodex(in.Path, data)
	}
	trim := bytes.TrimSpace(data)
	if len(trim) > 0 && trim[0] == '{' {
		// One JSON object: its keys say what it is (without decoding the values).
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(trim, &raw); err == nil {
			switch {
			case isOpenCodeExport(raw):
				return parseOpenCode(in.Path, data)
			case raw["messages"] != nil:
				return parseOpenAI(in.Path, data)
			case raw["role"] != nil:
				return parseOpenAI(in.Path, data) // one message: JSONL of one line
			}
			return nil, ErrUnknownFormat
		}
	}
	if len(trim) > 0 && (trim[0] == '[' || trim[0] == '{') {
		s, err := parseOpenAI(in.Path, data)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnknownFormat, err)
		}
		return s, nil
	}
	return nil, ErrUnknownFormat
}

func baseName(p string) string {
	b := filepath.Base(p)
	return strings.TrimSuffix(b, filepath.Ext(b))
}

// Progress is told how many inputs are done, of how many.
type Progress func(done, total int)

// Run audits every input: each is read, replayed and counted in, one at a
// time, so memory does not grow with the number of sessions (only the
// per-session reports kept with keepSessions do). A file that cannot be
// read or replayed is an error in the report, and the audit goes on.
func Run(ctx context.Context, ins []Input, opt Options, keepSessions bool, progress Progress) (*Report, error) {
	rep := NewReport(opt)
	for i, in := range ins {
		if err := ctx.Err(); err != nil {
			return rep, err
		}
		s, err := Load(in)
		if err == nil {
			var sr *SessionReport
			sr, err = Replay(ctx, s, opt)
			if err == nil {
				rep.Add(sr, keepSessions)
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return rep, ctx.Err()
			}
			rep.Errors = append(rep.Errors, InputError{File: in.Path, Error: err.Error()})
		}
		if progress != nil {
			progress(i+1, len(ins))
		}
	}
	return rep, nil
}
