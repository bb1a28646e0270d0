package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/concord-ctx/concord/audit"
	"github.com/concord-ctx/concord/protocol"
)

type auditOptions struct {
	asJSON      *bool
	html, price *string
	each        *bool
	codex       *bool
}

func auditFlags() (*pflag.FlagSet, *auditOptions) {
	fs := pflag.NewFlagSet("audit", pflag.ContinueOnError)
	return fs, &auditOptions{
		asJSON: fs.Bool("json", false, "print the report as JSON"),
		html:   fs.String("html", "", "also write a self-contained HTML page with a per-call timeline to this file"),
		price:  fs.String("price", "", "price the repairs' prompt-cache cost: anthropic (write 1.25, read 0.1), openai (1, 0.5) or WRITE:READ"),
		each:   fs.Bool("sessions", false, "list every session in the text summary (the default up to 20 sessions)"),
		codex:  fs.Bool("codex", false, "also audit Codex CLI's rollouts ($CODEX_HOME/sessions, default ~/.codex/sessions)"),
	}
}

// prices are the cache price models (docs/protocol.md, cache.price).
var prices = map[string]protocol.CachePrice{
	"anthropic": {Write: 1.25, Read: 0.1},
	"openai":    {Write: 1, Read: 0.5},
}

func parsePrice(s string) (*protocol.CachePrice, error) {
	if s == "" {
		return nil, nil
	}
	if p, ok := prices[s]; ok {
		return &p, nil
	}
	w, r, ok := strings.Cut(s, ":")
	pw, err1 := strconv.ParseFloat(w, 64)
	pr, err2 := strconv.ParseFloat(r, 64)
	if !ok || err1 != nil || err2 != nil || !(pw > 0 && pr >= 0 && pr <= pw) {
		return nil, fmt.Errorf("--price %q: want anthropic, openai or WRITE:READ with WRITE > 0 and 0 <= READ <= WRITE", s)
	}
	return &protocol.CachePrice{Write: pw, Read: pr}, nil
}

// runAudit is `concord audit PATH...`: finished sessions replayed through
// serve's recognition and reconciliation (package audit). Status 1 when
// some input could not be audited (the others are reported all the same).
func runAudit(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs, o := auditFlags()
	if err := parseCommand(fs, "audit", args, stderr); err != nil {
		return err
	}
	paths := fs.Args()
	if *o.codex {
		dir, err := audit.CodexSessions()
		if err != nil {
			return err
		}
		paths = append(paths, dir)
	}
	if len(paths) == 0 {
		return usageError{errors.New("no PATH to audit")}
	}
	price, err := parsePrice(*o.price)
	if err != nil {
		return usageError{err}
	}
	opt := audit.Options{Price: price, PriceName: *o.price, Timeline: *o.html != ""}
	ins, errs := audit.Find(paths)
	for _, p := range holdingNothing(paths, ins, errs) {
		fmt.Fprintf(stderr, "concord audit: %s: no sessions found here. %s\n", p, lookedFor)
	}
	if len(ins) == 0 {
		// Nothing to audit: a report of zeros would read as "no stale
		// context", which nobody measured.
		for _, e := range errs {
			fmt.Fprintf(stderr, "concord audit: %s: %s\n", e.File, e.Error)
		}
		return exitStatus(1)
	}
	var progress audit.Progress
	if audit.IsTerminal(stderr) && len(ins) > 1 {
		progress = audit.ProgressBar(stderr)
	}
	keep := *o.asJSON || *o.html != "" || *o.each || len(ins) <= 20
	rep, err := audit.Run(ctx, ins, opt, keep, progress)
	if err != nil {
		return err
	}
	rep.Errors = append(errs, rep.Errors...)
	if *o.html != "" {
		if err := writeFile(*o.html, rep.WriteHTML); err != nil {
			return fmt.Errorf("--html: %w", err)
		}
	}
	if *o.asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	} else {
		text := *rep
		if *o.html != "" && !*o.each {
			// The page has every session; the terminal keeps the summary
			// (500 sessions were 2,000 lines).
			text.Sessions = nil
		}
		if err = text.WriteText(stdout); err == nil && *o.html != "" {
			_, err = fmt.Fprintf(stdout, "  Each session, call by call: %s\n", *o.html)
		}
	}
	if err != nil {
		return err
	}
	if len(rep.Errors) > 0 {
		for _, e := range rep.Errors {
			fmt.Fprintf(stderr, "concord audit: %s: %s\n", e.File, e.Error)
		}
		return exitStatus(1)
	}
	return nil
}

// lookedFor says what the audit reads, for a path where it found nothing.
const lookedFor = "The audit reads OpenHands conversations (a directory with events/event-*.json: " +
	"a conversation's persistence_dir; an agent server keeps them under workspace/conversations), " +
	"`opencode export <sessionID>` JSON files, " +
	"and OpenAI-format message lists (.json, .jsonl); directories are searched recursively (docs/audit.md, \"Inputs\")."

// holdingNothing are the paths of args under which Find found no input and
// no error: an empty directory, or one of other files.
func holdingNothing(args []string, ins []audit.Input, errs []audit.InputError) []string {
	var out []string
	for _, a := range args {
		under := func(p string) bool {
			rel, err := filepath.Rel(filepath.Clean(a), filepath.Clean(p))
			return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
		}
		found := false
		for _, in := range ins {
			found = found || under(in.Path)
		}
		for _, e := range errs {
			found = found || under(e.File)
		}
		if !found {
			out = append(out, a)
		}
	}
	return out
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
