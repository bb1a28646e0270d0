"""Terminal commands whose output is plainly file content, and how to re-render it.

SDK-free. A command is tracked only when the binding can tell exactly what
the output is: one simple command (no pipes, redirects, `&&`, `;`,
subshells, variables, globs or other shell syntax outside quotes), one of

    cat [-n] FILE...         head [-n N | -N] FILE...  tail [-n N | -N | -n +K] FILE...
    sed -n 'Ap' / 'A,Bp' / 'A,$p' FILE                 nl -ba FILE
    grep -n [-rRiwFEIsH] [-A N] [-B N] [-C N] [-e] PATTERN PATH...
    rg -n [-iwFS] [-A N] [-B N] [-C N] PATTERN [PATH...]
    ls [-aA1lpFh] [DIR]      find [DIR] [-maxdepth N] [-type f] [-name PAT] [-not -path '*/X/*']

and its exit status was 0. Everything else stays an event. Reads become
`Read`s (a file and a range, or one source per grep line: hits and context
lines alike); `ls`/`find` become a directory listing source (see
docs/protocol.md, "Listing sources": `file:///dir?depth=..&hidden=..`).

Several files: GNU cat concatenates them without a separator, so the output
is split by the files' current contents, and only when those concatenated
show exactly the output (else the command is an event); head and tail print
`==> name <==` headers, checked the same way.
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
    sep: str = ":"  # ":" a matching line, "-" a context line (grep -A/-B/-C)


@dataclass
class Part:
    """One file of a several-file cat/head/tail: the lines it showed."""

    path: str  # absolute
    shown_as: str  # the operand as given (head/tail print it in `==> name <==`)
    start: int  # first line shown (1-based)
    lines: list[str]  # the file's raw lines
    whole: bool  # cat: the whole file (no range)


@dataclass
class TerminalRead:
    """What a terminal command showed: file lines or a directory listing."""

    kind: str  # "lines" (cat, head, ...), "hits" (grep, rg), "listing" (ls, find),
    # "files" (cat/head/tail of several files: one Part per file)
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
    context: bool = False  # "hits": grep/rg -A/-B/-C: non-adjacent groups split by `--`
    parts: list[Part] = field(default_factory=list)  # "files"
    headers: bool = False  # "files": head/tail's `==> name <==` sections
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
            with open(path, "rb") as f:
                cache[path] = _decode_lines(f.read())
        except OSError:
            cache[path] = None
    return cache[path]


def _decode_lines(data: bytes) -> list[str]:
    """A file's lines as Concord reads them: UTF-8 (undecodable bytes as
    U+FFFD), CRLF as LF, no empty last line for a final newline."""
    lines = data.decode("utf-8", errors="replace").replace("\r\n", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


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
    return f"{h.line}{h.sep}" if heading or not h.shown_as else f"{h.shown_as}{h.sep}{h.line}{h.sep}"


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
    if len(files) > 1:
        return _several(files, output, cwd, numbered=numbered)
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


def _count_arg(args: list[str]) -> tuple[str | None, list[str]]:
    """(count spec, files) of head/tail arguments; (None, []) if unsupported."""
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
            return None, []
        else:
            files.append(a)
        i += 1
    if not files or not re.fullmatch(r"\+?\d+", count):
        return None, []
    return count, files


def _head(args: list[str], output: str, cwd: str) -> TerminalRead | None:
    count, names = _count_arg(args)
    if count is None or count.startswith("+"):
        return None
    if len(names) > 1:
        return _several(names, output, cwd, head=int(count))
    name = names[0]
    path = _file(name, cwd)
    lines, ends = _lines(output)
    if path is None or not lines or len(lines) > int(count):
        return None
    return TerminalRead("lines", path, (1, len(lines)), "\n".join(lines), ends_with_newline=ends,
                        want=("range", 1, int(count)))


def _tail(args: list[str], output: str, cwd: str) -> TerminalRead | None:
    count, names = _count_arg(args)
    if count is None:
        return None
    if len(names) > 1:
        if count.startswith("+"):
            return _several(names, output, cwd, tail_from=max(int(count[1:]), 1))
        return _several(names, output, cwd, tail=int(count))
    name = names[0]
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


_SPLIT_MAX_BYTES = 16 << 20


def _several(names: list[str], output: str, cwd: str, *, numbered: bool = False, head: int | None = None,
             tail: int | None = None, tail_from: int | None = None) -> TerminalRead | None:
    """cat/head/tail of several files, split by the files' current contents.

    `cat a b` prints a's bytes then b's, with nothing between them: where
    a ends can only be told from a's content. So the output is tracked only
    when the files as they are now show exactly that output (compared as the
    terminal shows it: a screen, or the raw bytes); a file that changed
    since the command ran makes it an event. Any split whose parts concatenate
    to what was shown is sound here: every repair re-renders all the parts.
    """
    cat = head is None and tail is None and tail_from is None
    paths = [os.path.normpath(os.path.join(cwd, n)) for n in names]
    if len(set(paths)) != len(paths):
        return None  # one file twice: two sources of one block would be the same
    parts: list[Part] = []
    for name, path in zip(names, paths):
        try:
            st = os.stat(path)
            # cat shows every byte: a file longer than the output cannot be in it
            # (4 bytes a character at most); head/tail of a huge log is not read.
            limit = 4 * len(output) + 4096 if cat else _SPLIT_MAX_BYTES
            if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
                return None
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            return None
        lines = _decode_lines(data)
        n = len(lines)
        if cat:
            # A file without a final newline runs into the next file's first line.
            if path != paths[-1] and data and not data.endswith(b"\n"):
                return None
            parts.append(Part(path, name, 1, lines, whole=True))
            continue
        if head is not None:
            start, end = 1, min(head, n)
        elif tail is not None:
            start, end = max(n - tail + 1, 1), n
        else:
            start, end = tail_from, n
        if end < start:
            return None  # an empty section has no range to register
        parts.append(Part(path, name, start, lines[start - 1 : end], whole=False))
    read = TerminalRead("files", paths[0], numbered=numbered, parts=parts, headers=not cat)
    expected = _files_lines(read, [(p.start, p.lines) for p in parts])
    if "\t" in output:  # raw bytes (no tmux): byte for byte
        if output not in ("\n".join(expected), "\n".join(expected) + "\n"):
            return None
        read.ends_with_newline = output.endswith("\n")
    elif _screen_of(expected) != output.strip():
        return None
    return read


def _files_lines(read: TerminalRead, spans: list[tuple[int, list[str]]]) -> list[str]:
    """The output lines of a several-file read showing `spans` (start, lines) per part."""
    out: list[str] = []
    n = 0
    for i, (_start, lines) in enumerate(spans):
        if read.headers:
            if i > 0:
                out.append("")
            out.append(f"==> {read.parts[i].shown_as if i < len(read.parts) else '?'} <==")
        for ln in lines:
            n += 1
            out.append(f"{n:6}\t{ln}" if read.numbered else ln)
    return out


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


_CONTEXT_LONG = ("--context", "--after-context", "--before-context")


def _search(args: list[str], output: str, cwd: str, *, rg: bool) -> TerminalRead | None:
    flags: set[str] = set()
    operands: list[str] = []
    pattern: str | None = None
    context = False  # -A/-B/-C given: context lines and `--` group separators
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
            if name in _CONTEXT_LONG:
                value = a.split("=", 1)[1] if "=" in a else (args[i + 1] if i + 1 < len(args) else "")
                if not value.isdigit():
                    return None
                context = True
                i += 1 if "=" in a else 2
                continue
            ok = {"--line-number", "--color=never", "--no-heading", "--hidden"} if rg else {
                "--line-number", "--color=never", "--include", "--exclude", "--exclude-dir"}
            if a not in ok and name not in ok:
                return None
            if a == "--line-number":
                flags.add("n")
        elif re.fullmatch(r"-\d+", a) and not rg:
            context = True  # GNU grep: -NUM is -C NUM
        elif a.startswith("-") and len(a) > 1:
            # A cluster of flag letters, which may end in -A/-B/-C and its
            # number (`-rnC2`, `-A 3`).
            letters = a[1:]
            m = re.fullmatch(r"([^ABC]*)([ABC])(\d*)", letters)
            if m is not None:
                letters = m.group(1)
                if m.group(3) == "":
                    if i + 1 >= len(args) or not args[i + 1].isdigit():
                        return None
                    i += 1
                context = True
            if not set(letters) <= (_RG_FLAGS if rg else _GREP_FLAGS):
                return None
            flags |= set(letters)
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
        return _rg_headings(lines, cwd, context=context)
    if context:
        return _context_hits(lines, cwd, paths[0] if single_file else None)
    hits: list[Hit] = []
    for ln in lines:
        hit = _hit(ln, cwd, paths[0] if single_file else None)
        if hit is None:
            return None  # a line we cannot place ("Binary file ... matches", context)
        hits.append(hit)
    return TerminalRead("hits", hits=hits)


def _groups(lines: list[str], sep: str = "--") -> list[list[str]] | None:
    """Lines split at separator lines (grep's `--` between groups by default);
    None on an empty group."""
    groups: list[list[str]] = [[]]
    for ln in lines:
        if ln == sep:
            groups.append([])
        else:
            groups[-1].append(ln)
    return None if any(not g for g in groups) else groups


_NUMBERED_HIT = re.compile(r"(\d+)([:-])(.*)\Z", re.S)


def _numbered_group(group: list[str], path: str, shown: str) -> list[Hit] | None:
    """A group of `N:text` / `N-text` lines of one file: consecutive lines."""
    hits: list[Hit] = []
    for ln in group:
        m = _NUMBERED_HIT.match(ln)
        if m is None:
            return None
        n = int(m.group(1))
        if hits and n != hits[-1].line + 1:
            return None
        hits.append(Hit(path, n, m.group(3), shown, m.group(2)))
    return hits


def _context_hits(lines: list[str], cwd: str, single: str | None) -> TerminalRead | None:
    """grep -n with -A/-B/-C: groups of consecutive lines of one file, a match
    `path:N:text`, a context line `path-N-text`, groups split by `--`.

    Within a group the path is the same on every line and the numbers count
    up by one, which places each line even where a path or a text holds
    `-N-` or `:N:` itself; a group that fits more than one existing file, or
    none and more than one split, makes the command an event.
    """
    groups = _groups(lines)
    if groups is None:
        return None
    hits: list[Hit] = []
    for group in groups:
        got = _numbered_group(group, single, "") if single is not None else _path_group(group, cwd)
        if got is None or not any(h.sep == ":" for h in got):
            return None  # every group holds a match
        hits.extend(got)
    return TerminalRead("hits", hits=hits, context=True)


def _path_group(group: list[str], cwd: str) -> list[Hit] | None:
    cands: list[list[Hit]] = []
    first = group[0]
    for m in re.finditer(r"(?=([:-])(\d+)\1)", first):
        shown = first[: m.start()]
        if not shown:
            continue
        path = os.path.normpath(os.path.join(cwd, shown))
        n = int(m.group(2))
        hits: list[Hit] = []
        for k, ln in enumerate(group):
            for sep in ":-":
                pre = f"{shown}{sep}{n + k}{sep}"
                if ln.startswith(pre):
                    hits.append(Hit(path, n + k, ln[len(pre):], shown, sep))
                    break
            else:
                break
        if len(hits) == len(group) and any(h.sep == ":" for h in hits):
            cands.append(hits)  # every group holds a match
    files = [c for c in cands if os.path.isfile(c[0].path)]
    if len(files) > 1:
        # Still two readings: the one whose lines the file holds now, if only one does.
        cache: dict[str, list[str] | None] = {}
        files = [c for c in files if _holds(c, cache)]
    if len(files) == 1:
        return files[0]
    if not files and len(cands) == 1:
        return cands[0]  # deleted since: the only reading there is
    return None


def _holds(hits: list[Hit], cache: dict[str, list[str] | None]) -> bool:
    lines = _file_lines(hits[0].path, cache)
    return lines is not None and all(
        h.line <= len(lines) and screen_line(lines[h.line - 1]) == screen_line(h.text) for h in hits)


def _rg_headings(lines: list[str], cwd: str, *, context: bool = False) -> TerminalRead | None:
    """rg on a terminal: a path line, its `N:text` hits (with context lines
    `N-text` and `--` between groups under -A/-B/-C), a blank line, the next path."""
    hits: list[Hit] = []
    sections = _groups(lines, sep="")  # a blank line between files
    if sections is None:
        return None
    for sec in sections:
        path = os.path.normpath(os.path.join(cwd, sec[0]))
        if os.path.isdir(path) or len(sec) < 2:
            return None
        if not context:
            for ln in sec[1:]:
                m = re.match(r"(\d+):(.*)\Z", ln, re.S)
                if m is None:
                    return None
                hits.append(Hit(path, int(m.group(1)), m.group(2), sec[0]))
            continue
        groups = _groups(sec[1:])
        if groups is None:
            return None
        for group in groups:
            got = _numbered_group(group, path, sec[0])
            if got is None or not any(h.sep == ":" for h in got):
                return None
            hits.extend(got)
    if not hits:
        return None
    return TerminalRead("hits", hits=hits, heading=True, context=context)


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
    # lstat: a symlink is an entry, never followed, as in Concord's listing.
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
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


def render_hits(read: TerminalRead, hits: list[tuple[str, int, str] | tuple[str, int, str, str]]) -> str:
    """grep/rg output for (path, line, text[, sep]) hits, paths spelled as the tool did.

    `sep` is ":" for a match and "-" for a context line (default ":"). Under
    -A/-B/-C a `--` line goes between lines that are not adjacent in one
    file, as grep and rg print them.
    """
    shown = {h.path: h.shown_as for h in read.hits}
    out: list[str] = []
    last: str | None = None
    prev: tuple[str, int] | None = None
    for hit in hits:
        path, line, text = hit[0], hit[1], hit[2]
        sep = hit[3] if len(hit) > 3 else ":"
        name = shown.get(path, path)
        if read.heading:
            if name != last:
                if last is not None:
                    out.append("")
                out.append(name)
                last = name
            elif read.context and prev is not None and line != prev[1] + 1:
                out.append("--")
            out.append(f"{line}{sep}{text}")
        else:
            if read.context and prev is not None and (path, line) != (prev[0], prev[1] + 1):
                out.append("--")
            out.append(f"{name}{sep}{line}{sep}{text}" if name else f"{line}{sep}{text}")
        prev = (path, line)
    return _screen_text(read, out)


def render_files(read: TerminalRead, spans: list[tuple[int, list[str]]]) -> str:
    """A several-file cat/head/tail shown again with these (start, lines) per file."""
    return _screen_text(read, _files_lines(read, spans))
