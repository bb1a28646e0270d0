"""Terminal commands whose output is plainly file content, and how to re-render it.

SDK-free. A command is tracked only when the binding can tell exactly what
the output is: one simple command (no pipes, redirects, `&&`, `;`,
subshells, variables, globs or other shell syntax outside quotes), one of

    cat [-n] FILE            head [-n N | -N] FILE     tail [-n N | -N | -n +K] FILE
    sed -n 'Ap' / 'A,Bp' / 'A,$p' FILE                 nl -ba FILE
    grep -n [-rRiwFEIsH] [-e] PATTERN PATH...          rg -n [-iwFS] PATTERN [PATH...]
    ls [-aA1lpFh] [DIR]      find [DIR] [-maxdepth N] [-type f] [-name PAT] [-not -path '*/X/*']

and its exit status was 0. Everything else stays an event. Reads become
`Read`s (a file and a range, or one source per grep hit); `ls`/`find` become a
directory listing source (see CONTRACTS: `file:///dir?depth=..&hidden=..`).
"""

from __future__ import annotations

import os
import re
import shlex
import stat
from dataclasses import dataclass, field
from urllib.parse import quote

# Shell syntax that makes the output something other than one program's view
# of one file: operators, redirects, expansions, globs, comments, newlines.
_META_OUTSIDE = set("|&;<>()$`\\*?[]{}~!#\n\r")
_META_IN_DOUBLE = set("$`\\!")


def simple_argv(command: str) -> list[str] | None:
    """The argv of a plain command, or None if the shell would do more than run it."""
    quote_ch = ""
    for ch in command:
        if quote_ch == "'":
            if ch == "'":
                quote_ch = ""
            continue
        if quote_ch == '"':
            if ch == '"':
                quote_ch = ""
            elif ch in _META_IN_DOUBLE:
                return None
            continue
        if ch in ("'", '"'):
            quote_ch = ch
        elif ch in _META_OUTSIDE:
            return None
    if quote_ch:
        return None
    try:
        argv = shlex.split(command)
    except ValueError:
        return None
    if not argv or "=" in argv[0]:  # VAR=x cmd
        return None
    return argv


@dataclass
class Hit:
    """One line of a file the output showed."""

    path: str  # absolute
    line: int
    text: str
    shown_as: str  # the path as the tool printed it ("" when it printed none)


@dataclass
class TerminalRead:
    """What a terminal command showed: file lines or a directory listing."""

    kind: str  # "lines" (cat, head, ...), "hits" (grep, rg), "listing" (ls, find)
    path: str = ""  # absolute file or directory
    range: tuple[int, int] | None = None  # "lines": None = the whole file
    text: str = ""  # "lines": the raw lines; "listing": the canonical listing
    numbered: bool = False  # "lines": shown as `cat -n`/`nl -ba` (`%6d\t`)
    ends_with_newline: bool = True
    hits: list[Hit] = field(default_factory=list)
    uri: str = ""  # "listing": the listing source's URI
    # The terminal shows a screen, not bytes: tmux expands tabs and drops
    # trailing blanks, and the tool strips the whole output. Re-renders do
    # the same so a repaired read looks like the command's output.
    screen: bool = True
    heading: bool = False  # "hits": rg's tty format (a path line, then N:text lines)
    # "lines": the lines the command asked for, to check the screen against
    # the file: ("range", A, B) with B = -1 for "to the end", ("tail", N, 0),
    # or ("whole", 0, 0).
    want: tuple[str, int, int] = ("whole", 0, 0)


def parse_command(command: str, output: str, cwd: str) -> TerminalRead | None:
    """What `command`, run in `cwd` with exit status 0, showed as `output`.

    None when the output is not plainly file content.
    """
    argv = simple_argv(command.strip())
    if argv is None or not cwd:
        return None
    prog = os.path.basename(argv[0])
    fn = _PARSERS.get(prog)
    if fn is None:
        return None
    try:
        read = fn(argv[1:], output, cwd)
        if read is not None:
            read.screen = "\t" not in output
            _recover(read, output)
        return read
    except (ValueError, OSError):
        return None


def screen_line(line: str) -> str:
    """A line as the terminal pane shows it: tabs expanded, trailing blanks dropped."""
    return line.expandtabs(8).rstrip()


def _file_lines(path: str, cache: dict[str, list[str] | None]) -> list[str] | None:
    if path not in cache:
        try:
            with open(path, encoding="utf-8", errors="replace", newline="") as f:
                data = f.read().replace("\r\n", "\n")
            lines = data.split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            cache[path] = lines
        except OSError:
            cache[path] = None
    return cache[path]


def _recover(read: TerminalRead, output: str) -> None:
    """Replace the screen text of each line by the file's bytes when the file
    still holds exactly what the screen showed.

    The model saw the screen rendering (tabs as spaces, no trailing blanks);
    Concord compares raw lines. Where the file differs from what was shown
    (it changed since), the shown text is kept and Concord repairs it.
    """
    cache: dict[str, list[str] | None] = {}
    shown = output.split("\n")
    if read.kind == "lines":
        file_lines = _file_lines(read.path, cache)
        if file_lines is None:
            return
        n = len(file_lines)
        how, x, y = read.want
        if how == "range":
            start, end = x, (n if y == -1 else min(y, n))
        elif how == "tail":
            start, end = max(n - x + 1, 1), n
        else:
            start, end = 1, n
        if end < start:
            return
        cand = file_lines[start - 1 : end]
        body = [f"{start + i:6}\t{ln}" for i, ln in enumerate(cand)] if read.numbered else cand
        # The screen strips the whole output, so leading and trailing blank
        # lines of the window do not show: compare screens, not line counts.
        if _screen_of(body) != output.strip():
            return
        read.text = "\n".join(cand)
        read.range = None if how == "whole" else (start, end)
        return
    if read.kind == "hits":
        for h in read.hits:
            file_lines = _file_lines(h.path, cache)
            if file_lines is None or not 1 <= h.line <= len(file_lines):
                continue
            line = file_lines[h.line - 1]
            if screen_line(line) == screen_line(h.text) or (
                screen_line(_hit_prefix(h, read.heading) + line)
                == screen_line(_hit_prefix(h, read.heading) + h.text)
            ):
                h.text = line


def _screen_of(lines: list[str]) -> str:
    return "\n".join(screen_line(ln) for ln in lines).strip()


def _hit_prefix(h: Hit, heading: bool) -> str:
    return f"{h.line}:" if heading or not h.shown_as else f"{h.shown_as}:{h.line}:"


# -- file reads --------------------------------------------------------------


def _file(arg: str, cwd: str) -> str | None:
    """The file an operand names; a file gone since the command ran still
    counts (Concord then tells the model it was deleted: issue 10 bug 4)."""
    path = os.path.normpath(os.path.join(cwd, arg))
    try:
        return path if stat.S_ISREG(os.stat(path).st_mode) else None
    except FileNotFoundError:
        return path
    except OSError:
        return None


def _lines(output: str) -> tuple[list[str], bool]:
    if output == "":
        return [], True
    ends = output.endswith("\n")
    body = output[:-1] if ends else output
    return body.split("\n"), ends


def _count_lines(path: str) -> int:
    n = 0
    last = b"\n"
    with open(path, "rb") as f:
        while chunk := f.read(1 << 16):
            n += chunk.count(b"\n")
            last = chunk[-1:]
    return n + (0 if last == b"\n" else 1)


# `cat -n`/`nl -ba`: "%6d\t" + line; on the screen the tab is 2 spaces (or
# nothing when the line is empty and its trailing blanks were dropped).
_NUMBERED = re.compile(r"^ *(\d+)(?:\t|  |\Z)(.*)\Z", re.S)


def _cat(args: list[str], output: str, cwd: str) -> TerminalRead | None:
    numbered = False
    files = []
    for a in args:
        if a == "-n":
            numbered = True
        elif a.startswith("-"):
            return None
        else:
            files.append(a)
    if len(files) != 1:
        return None
    path = _file(files[0], cwd)
    if path is None:
        return None
    lines, ends = _lines(output)
    if numbered:
        return _numbered(path, lines, ends, whole=True)
    return TerminalRead("lines", path, None, "\n".join(lines), ends_with_newline=ends)


def _numbered(path: str, lines: list[str], ends: bool, *, whole: bool) -> TerminalRead | None:
    raw = []
    start = 0
    for i, ln in enumerate(lines):
        m = _NUMBERED.match(ln)
        if m is None:
            return None
        n = int(m.group(1))
        if i == 0:
            start = n
        elif n != start + i:
            return None
        raw.append(m.group(2))
    if not raw:
        return None
    rng = None if whole and start == 1 else (start, start + len(raw) - 1)
    return TerminalRead("lines", path, rng, "\n".join(raw), numbered=True, ends_with_newline=ends)


def _count_arg(args: list[str]) -> tuple[str | None, str | None]:
    """(count spec, file) of head/tail arguments; (None, None) if unsupported."""
    count = "10"
    files: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "-n" and i + 1 < len(args):
            count = args[i + 1]
            i += 2
            continue
        if a.startswith("-n") and len(a) > 2:
            count = a[2:]
        elif re.fullmatch(r"-\d+", a):
            count = a[1:]
        elif a.startswith("-"):
            return None, None
        else:
            files.append(a)
        i += 1
    if len(files) != 1 or not re.fullmatch(r"\+?\d+", count):
        return None, None
    return count, files[0]


def _head(args: list[str], output: str, cwd: str) -> TerminalRead | None:
    count, name = _count_arg(args)
    if count is None or name is None or count.startswith("+"):
        return None
    path = _file(name, cwd)
    lines, ends = _lines(output)
    if path is None or not lines or len(lines) > int(count):
        return None
    return TerminalRead("lines", path, (1, len(lines)), "\n".join(lines), ends_with_newline=ends,
                        want=("range", 1, int(count)))


def _tail(args: list[str], output: str, cwd: str) -> TerminalRead | None:
    count, name = _count_arg(args)
    if count is None or name is None:
        return None
    path = _file(name, cwd)
    lines, ends = _lines(output)
    if path is None or not lines:
        return None
    if count.startswith("+"):
        start = max(int(count[1:]), 1)
        want = ("range", start, -1)
    else:
        want = ("tail", int(count), 0)
        if len(lines) > int(count):
            return None
        # The output is the file's last lines: number them from the file's
        # length now (Concord verifies the claim and reconciles a mismatch).
        try:
            total = _count_lines(path)
        except FileNotFoundError:
            total = len(lines)
        start = max(total - len(lines) + 1, 1)
    return TerminalRead("lines", path, (start, start + len(lines) - 1), "\n".join(lines), ends_with_newline=ends,
                        want=want)


_SED_SCRIPT = re.compile(r"(\d+)(?:,(\d+|\$))?p")


def _sed(args: list[str], output: str, cwd: str) -> TerminalRead | None:
    if len(args) != 3 or args[0] != "-n":
        return None
    m = _SED_SCRIPT.fullmatch(args[1].strip())
    if m is None:
        return None
    start = int(m.group(1))
    end = m.group(2)
    path = _file(args[2], cwd)
    lines, ends = _lines(output)
    if path is None or not lines or start < 1:
        return None
    want = 1 if end is None else (None if end == "$" else int(end) - start + 1)
    if want is not None and (want < 1 or len(lines) > want):
        return None
    last = start if end is None else (-1 if end == "$" else int(end))
    return TerminalRead("lines", path, (start, start + len(lines) - 1), "\n".join(lines), ends_with_newline=ends,
                        want=("range", start, last))


def _nl(args: list[str], output: str, cwd: str) -> TerminalRead | None:
    if len(args) != 2 or args[0] not in ("-ba", "-b a", "--body-numbering=a"):
        return None
    path = _file(args[1], cwd)
    if path is None:
        return None
    lines, ends = _lines(output)
    return _numbered(path, lines, ends, whole=True)


# -- grep / rg ---------------------------------------------------------------

_GREP_FLAGS = set("nrRiwFEIsHx")
_RG_FLAGS = set("niwFSHx")


def _grep(args: list[str], output: str, cwd: str) -> TerminalRead | None:
    return _search(args, output, cwd, rg=False)


def _rg(args: list[str], output: str, cwd: str) -> TerminalRead | None:
    return _search(args, output, cwd, rg=True)


def _search(args: list[str], output: str, cwd: str, *, rg: bool) -> TerminalRead | None:
    flags: set[str] = set()
    operands: list[str] = []
    pattern: str | None = None
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            operands.extend(args[i + 1 :])
            break
        if a == "-e" and i + 1 < len(args) and pattern is None:
            pattern = args[i + 1]
            i += 2
            continue
        if a.startswith("--"):
            name = a.split("=", 1)[0]
            ok = {"--line-number", "--color=never", "--no-heading", "--hidden"} if rg else {
                "--line-number", "--color=never", "--include", "--exclude", "--exclude-dir"}
            if a not in ok and name not in ok:
                return None
            if a == "--line-number":
                flags.add("n")
        elif a.startswith("-") and len(a) > 1:
            letters = set(a[1:])
            if not letters <= (_RG_FLAGS if rg else _GREP_FLAGS):
                return None
            flags |= letters
        else:
            operands.append(a)
        i += 1
    if "n" not in flags:
        return None
    if pattern is None:
        if not operands:
            return None
        pattern, operands = operands[0], operands[1:]
    recursive = rg or bool(flags & {"r", "R"})
    if not operands:
        if not recursive:
            return None  # grep without a file reads stdin
        operands = ["."]
    paths = [os.path.normpath(os.path.join(cwd, o)) for o in operands]
    single_file = len(paths) == 1 and not os.path.isdir(paths[0]) and "H" not in flags
    lines, _ = _lines(output)
    if not lines:
        return None
    if rg and not single_file and "--no-heading" not in args:
        return _rg_headings(lines, cwd)
    hits: list[Hit] = []
    for ln in lines:
        hit = _hit(ln, cwd, paths[0] if single_file else None)
        if hit is None:
            return None  # a line we cannot place ("Binary file ... matches", context)
        hits.append(hit)
    return TerminalRead("hits", hits=hits)


def _rg_headings(lines: list[str], cwd: str) -> TerminalRead | None:
    """rg on a terminal: a path line, its `N:text` hits, a blank line, the next path."""
    hits: list[Hit] = []
    current: tuple[str, str] | None = None
    for ln in lines:
        if ln == "":
            current = None
            continue
        if current is None:
            path = os.path.normpath(os.path.join(cwd, ln))
            if os.path.isdir(path):
                return None
            current = (path, ln)
            continue
        m = re.match(r"(\d+):(.*)\Z", ln, re.S)
        if m is None:
            return None
        hits.append(Hit(current[0], int(m.group(1)), m.group(2), current[1]))
    if not hits:
        return None
    return TerminalRead("hits", hits=hits, heading=True)


_LINE_NO = re.compile(r"(\d+):")


def _hit(line: str, cwd: str, single: str | None) -> Hit | None:
    if single is not None:
        m = re.match(r"(\d+):(.*)\Z", line, re.S)
        if m is None:
            return None
        return Hit(single, int(m.group(1)), m.group(2), "")
    # path:line:text — the path may itself hold ":digits:", so take the first
    # split whose path is a file.
    first = None
    for m in re.finditer(r":(\d+):", line):
        shown = line[: m.start()]
        if not shown:
            continue
        path = os.path.normpath(os.path.join(cwd, shown))
        hit = Hit(path, int(m.group(1)), line[m.end() :], shown)
        if os.path.isfile(path):
            return hit
        first = first or hit  # deleted since: the first split is the likely one
    return first


# -- listings ----------------------------------------------------------------


def listing_uri(directory: str, *, depth: int, hidden: bool, ignore: list[str] | None = None,
                glob: str | None = None) -> str:
    """The listing source URI (CONTRACTS.md: parameters in order, defaults but depth omitted)."""
    base = "file://" + quote(directory)
    # depth is always written: a file:// URI without a query names a file.
    params = [f"depth={depth}"]
    if hidden:
        params.append("hidden=1")
    if ignore:
        params.append("ignore=" + ",".join(quote(n, safe="") for n in ignore))
    if glob:
        params.append("glob=" + quote(glob, safe="*?{},/"))
    return base + "?" + "&".join(params)


def _dir(arg: str, cwd: str) -> str | None:
    path = os.path.normpath(os.path.join(cwd, arg))
    return path if os.path.isdir(path) else None


def _is_dir(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.stat(path).st_mode)
    except OSError:
        return False


def _ls(args: list[str], output: str, cwd: str) -> TerminalRead | None:
    flags: set[str] = set()
    operands: list[str] = []
    for a in args:
        if a.startswith("-") and len(a) > 1:
            letters = set(a[1:])
            if not letters <= set("aA1lpFh"):
                return None
            flags |= letters
        else:
            operands.append(a)
    if len(operands) > 1:
        return None
    directory = _dir(operands[0] if operands else ".", cwd)
    if directory is None:
        return None
    names: list[str] = []
    lines, _ = _lines(output)
    if "l" in flags:
        for ln in lines:
            if ln.startswith("total "):
                continue
            parts = ln.split(None, 8)
            if len(parts) < 9:
                return None
            name = parts[8]
            if ln.startswith("l") and " -> " in name:
                name = name.split(" -> ", 1)[0]
            names.append(name)
    else:
        # One name per line (a pipe) or columns (a terminal): names with
        # whitespace would be ambiguous, so such a directory is not tracked.
        names = output.split()
        if any(any(c.isspace() for c in n) for n in os.listdir(directory)):
            return None
    out = []
    for n in names:
        if "F" in flags or "p" in flags:
            if n.endswith("/"):
                n = n[:-1]
            elif "F" in flags and n[-1:] in ("*", "@", "=", "|", ">"):
                n = n[:-1]
        if n in (".", ".."):
            continue
        if "/" in n or not n:
            return None
        out.append(n + "/" if _is_dir(os.path.join(directory, n)) else n)
    hidden = bool(flags & {"a", "A"})
    text = "\n".join(sorted(set(out), key=lambda s: s.encode()))
    return TerminalRead("listing", directory, text=text, uri=listing_uri(directory, depth=1, hidden=hidden))


_PRUNE = re.compile(r"\*/([^/*?\[\]]+)/\*")


def _find(args: list[str], output: str, cwd: str) -> TerminalRead | None:
    start = "."
    i = 0
    if args and not args[0].startswith("-") and args[0] not in ("!", "("):
        start = args[0]
        i = 1
    depth = 0
    files_only = False
    name_glob: str | None = None
    ignore: list[str] = []
    while i < len(args):
        a = args[i]
        nxt = args[i + 1] if i + 1 < len(args) else None
        if a == "-maxdepth" and nxt is not None and nxt.isdigit() and int(nxt) >= 1:
            depth = int(nxt)
            i += 2
        elif a == "-type" and nxt == "f":
            files_only = True
            i += 2
        elif a == "-name" and nxt is not None and name_glob is None and "/" not in nxt:
            name_glob = nxt
            i += 2
        elif a in ("-not", "!") and i + 2 < len(args) and args[i + 1] == "-path":
            m = _PRUNE.fullmatch(args[i + 2])
            if m is None:
                return None
            ignore.append(m.group(1))
            i += 3
        else:
            return None
    directory = _dir(start, cwd)
    if directory is None:
        return None
    glob = None
    if name_glob is not None:
        glob = "**/" + name_glob
    elif files_only:
        glob = "**"
    # find prints each path as the starting point joined with the relative path.
    prefix = start if start.endswith("/") else start + "/"
    out = []
    lines, _ = _lines(output)
    for ln in lines:
        if ln.rstrip("/") == start.rstrip("/") or ln == start:
            continue  # find prints its starting point
        if not ln.startswith(prefix):
            return None
        rel = ln[len(prefix):]
        if not rel:
            continue
        if any(part in ignore for part in rel.split("/")):
            continue  # `-not -path '*/X/*'` still prints X itself; the listing skips it
        full = os.path.join(directory, rel)
        if glob is None and _is_dir(full):
            rel += "/"
        elif glob is not None and _is_dir(full):
            return None  # a directory matched -name: the listing keeps only files
        out.append(rel)
    text = "\n".join(sorted(set(out), key=lambda s: s.encode()))
    uri = listing_uri(directory, depth=depth, hidden=True, ignore=ignore or None, glob=glob)
    return TerminalRead("listing", directory, text=text, uri=uri)


_PARSERS = {
    "cat": _cat,
    "head": _head,
    "tail": _tail,
    "sed": _sed,
    "nl": _nl,
    "grep": _grep,
    "rg": _rg,
    "ls": _ls,
    "find": _find,
}


# -- re-rendering --------------------------------------------------------------


def _screen_text(read: TerminalRead, lines: list[str]) -> str:
    if read.screen:
        lines = [screen_line(ln) for ln in lines]
    body = "\n".join(lines)
    if read.screen:
        return body.strip()  # the tool strips the command's output
    if body and read.ends_with_newline:
        body += "\n"
    return body


def render_lines(read: TerminalRead, start: int, lines: list[str]) -> str:
    """A `lines` read shown again: the same command's output for these lines."""
    if read.numbered:
        lines = [f"{start + i:6}\t{ln}" for i, ln in enumerate(lines)]
    return _screen_text(read, lines)


def render_hits(read: TerminalRead, hits: list[tuple[str, int, str]]) -> str:
    """grep/rg output for (path, line, text) hits, paths spelled as the tool did."""
    shown = {h.path: h.shown_as for h in read.hits}
    out: list[str] = []
    last: str | None = None
    for path, line, text in hits:
        name = shown.get(path, path)
        if read.heading:
            if name != last:
                if last is not None:
                    out.append("")
                out.append(name)
                last = name
            out.append(f"{line}:{text}")
        else:
            out.append(f"{name}:{line}:{text}" if name else f"{line}:{text}")
    return _screen_text(read, out)
