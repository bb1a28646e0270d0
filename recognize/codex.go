package recognize

import (
	"strconv"
	"strings"
)

// Codex CLI tools (@openai/codex 0.169.0; formats captured in testdata/codex).
//
// A command reaches Concord in two shapes:
//   - exec_command, as the model saw it (a rollout's function_call_output):
//     a header (chunk id, wall time, exit code, token count), "Output:",
//     then the output;
//   - Bash, as a PostToolUse hook has it: tool_input {"command"}, the raw
//     output, and the hook's cwd is the command's (its workdir resolved);
//     the exit code is not in the hook's input (the binding takes it from
//     the rollout and sets ExitCode).
//
// apply_patch is a freeform tool: its patch is arguments.command (the
// hook's tool_input) or arguments.input (a rollout's custom_tool_call).

const (
	// cxTruncated starts an output Codex cut to max_output_tokens (its
	// middle is then elided as "…N tokens truncated…").
	cxTruncated = "Warning: truncated output (original token count: "
	cxPatchDone = "Success. Updated the following files:\n"
)

var cxElided = lazyRegexp(`…\d+ tokens truncated…`)

func (r *recognizer) codex() Result {
	switch r.call.Tool {
	case "exec_command":
		return r.cxExec()
	case "Bash":
		return r.cxBash()
	case "apply_patch":
		return r.cxPatch()
	case "write_stdin":
		return event("codex/write_stdin", "output of a command started by an earlier call")
	}
	if strings.HasPrefix(r.call.Tool, "mcp__") {
		return event("codex/mcp", "an MCP tool")
	}
	return event("codex/"+r.call.Tool, "a tool that shows no file content")
}

// cxExec is exec_command's output as the model saw it.
func (r *recognizer) cxExec() Result {
	x, ok := parseCodexExec(r.call.Output)
	switch {
	case !ok:
		return event("terminal", "not an exec_command output in a known shape")
	case x.running:
		return event("terminal", "the command was still running")
	case x.exit != 0:
		return event("terminal", "the command did not exit 0")
	case r.call.Truncated || cxCut(x.body):
		return event("terminal", "the output was cut")
	}
	res := r.terminal(r.str("cmd"), r.cxCwd(), x.body, false)
	if res.render != nil {
		inner, head := res.render, x.head
		res.render = func(ps []Part) string { return head + inner(ps) }
	}
	return res
}

// cxBash is a command as a PostToolUse hook has it.
func (r *recognizer) cxBash() Result {
	switch {
	case r.call.ExitCode == nil:
		return event("terminal", "the exit code is unknown")
	case *r.call.ExitCode != 0:
		return event("terminal", "the command did not exit 0")
	case r.call.Truncated || cxCut(r.call.Output):
		return event("terminal", "the output was cut")
	}
	return r.terminal(r.str("command"), r.cxCwd(), r.call.Output, false)
}

// cxCwd is where the command ran: the session's cwd, or the call's workdir
// resolved against it.
func (r *recognizer) cxCwd() string {
	cwd := r.call.Cwd
	if w := r.str("workdir"); w != "" && cwd != "" {
		cwd = resolve(cwd, w)
	} else if w != "" {
		cwd = w
	}
	return cwd
}

func cxCut(out string) bool {
	return strings.HasPrefix(out, cxTruncated) || cxElided().MatchString(out)
}

// codexExec is exec_command's output, parsed.
type codexExec struct {
	head    string // everything up to and including "Output:\n"
	exit    int
	running bool // "Process running with session ID N": no exit yet
	body    string
}

// parseCodexExec reads the header lines Codex puts before a command's
// output; each is "Key: value" or the process line, and "Output:" ends them.
func parseCodexExec(out string) (codexExec, bool) {
	var x codexExec
	rest, exit := out, false
	for {
		line, after, ok := strings.Cut(rest, "\n")
		if !ok {
			return x, false
		}
		rest = after
		switch {
		case line == "Output:":
			x.head, x.body = out[:len(out)-len(rest)], rest
			return x, exit || x.running
		case strings.HasPrefix(line, "Process exited with code "):
			n, err := strconv.Atoi(strings.TrimPrefix(line, "Process exited with code "))
			if err != nil || exit || x.running {
				return x, false
			}
			x.exit, exit = n, true
		case strings.HasPrefix(line, "Process running with session ID "):
			if exit || x.running {
				return x, false
			}
			x.running = true
		case strings.HasPrefix(line, "Chunk ID: "), strings.HasPrefix(line, "Wall time: "),
			strings.HasPrefix(line, "Original token count: "):
		default:
			return x, false
		}
	}
}

// cxPatch is apply_patch: the files its patch added, updated, deleted or
// moved (both names), once it said it applied them.
func (r *recognizer) cxPatch() Result {
	const format = "codex/apply_patch"
	out := r.call.Output
	if r.call.Error || !strings.HasPrefix(out, "Exit code: 0\n") || !strings.Contains(out, cxPatchDone) {
		return event(format, "the patch was not applied")
	}
	patch := r.str("command")
	if patch == "" {
		patch = r.str("input")
	}
	var writes []string
	seen := map[string]bool{}
	for _, name := range patchFiles(patch) {
		p := r.abs(name)
		if p == "" {
			return event(format, "a relative path without a working directory")
		}
		if !seen[p] {
			seen[p] = true
			writes = append(writes, p)
		}
	}
	if len(writes) == 0 {
		return event(format, "no file in the patch")
	}
	return Result{Kind: KindWrite, Format: format, Writes: writes}
}
