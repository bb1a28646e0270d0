"""What the binding still knows of tool formats because the server does not yet.

Concord's `recognize` (docs/protocol.md) decides what a tool result showed and
renders its views. For openhands-tools 1.58.2 it does not yet know:
- the Gemini-style `read_file` (a numbered read) and the writes of `write_file`,
  `edit` and `apply_patch` (it answers them as events);
- file_editor's "NOTE: We only show up to N ..." line before a view_range that
  ran past the end of the file: its view keeps the old N;
- a clipped file_editor view: its view keeps, verbatim after the repaired lines,
  the cut line with its old number and whatever followed the clip notice.
This module covers exactly those, so nothing the binding tracked before is
lost; delete each part once the server recognizes it.
"""

from __future__ import annotations

import os
import re
from typing import Any

READ_FILE = "read_file"
FILE_EDITORS = frozenset({"file_editor", "planning_file_editor", "str_replace_editor"})
WRITE_TOOLS = frozenset({"write_file", "edit", "apply_patch"})
_LINE = re.compile(r" *(\d+)  (.*)\Z", re.S)
_SHOWING = re.compile(
    r"\A(Read file: .*?) \(showing lines \d+-\d+ of \d+\) "
    r"To read more, use: read_file\(file_path='(.*)', offset=\d+, limit=(\d+)\)\Z", re.S)
_CLIPPED, _NOTE_END = "<response clipped>", "</NOTE>"
_PAST_EOF = re.compile(r"NOTE: We only show up to \d+ since there're only \d+ lines in this file\.\n")


def _abs(path: str, root: str) -> str:
    return path if os.path.isabs(path) else os.path.normpath(os.path.join(root, path))


def writes(tool: str, args: dict[str, Any], obs: Any, root: str) -> list[str]:
    """The files a write tool the server does not recognize wrote."""
    if tool != "apply_patch":
        path = getattr(obs, "file_path", None) or args.get("file_path")
        return [_abs(path, root)] if path else []
    out: list[str] = []
    changes = getattr(getattr(obs, "commit", None), "changes", None) or {}
    for path, change in dict(changes).items():
        for p in (path, getattr(change, "move_path", None)):
            if p and _abs(p, root) not in out:
                out.append(_abs(p, root))
    return out


class ReadFile:
    """One read_file output: the header kept to re-render the lines shown."""

    def __init__(self, header: str, start: int, lines: list[str], ends: bool) -> None:
        self.header, self.start, self.lines, self.ends = header, start, lines, ends

    @staticmethod
    def parse(text: str) -> ReadFile | None:
        header, sep, body = text.partition("\n\n")
        if not sep or not header.startswith("Read file: "):
            return None
        lines: list[str] = []
        start = 1
        raw = body.split("\n")
        ends = raw[-1] == ""
        for k, ln in enumerate(raw[:-1] if ends else raw):
            m = _LINE.match(ln)
            if m is None or (lines and int(m.group(1)) != start + len(lines)):
                return None
            if k == 0:
                start = int(m.group(1))
            lines.append(m.group(2))
        return ReadFile(header, start, lines, ends)

    def source(self, path: str, whole: bool) -> tuple[str, str, tuple[int, int] | None]:
        rng = None if whole else (self.start, self.start + len(self.lines) - 1)
        return path, "\n".join(self.lines), rng

    def render(self, src: dict[str, Any]) -> str:
        """The read as the tool would show these lines now, its header kept true."""
        rng, text = src.get("range") or {}, str(src.get("text") or "")
        start = int(rng.get("start", 1)) if rng else 1
        # A range names its line count (one empty line is ""); else "" is no line.
        ranged = bool(rng) and int(rng.get("end", 0)) >= start
        lines = text.split("\n") if text or ranged else []
        end, total = start + len(lines) - 1, src.get("totalLines")
        header = self.header
        m = _SHOWING.match(header)
        if m is not None and isinstance(total, int):
            head, path, limit = m.groups()
            header = head if end >= total else (  # the tool says nothing of a read that reached the end
                f"{head} (showing lines {start}-{end} of {total}) To read more, use: "
                f"read_file(file_path='{path}', offset={end}, limit={limit})")
        body = "\n".join(f"{start + i:6d}  {ln}" for i, ln in enumerate(lines))
        return f"{header}\n\n{body}" + ("\n" if body and self.ends else "")


def fix_past_eof(view: str, args: dict[str, Any], sources: list[dict[str, Any]]) -> str:
    """Keep file_editor's "only N lines" note true for the lines the view shows now."""
    m = _PAST_EOF.search(view)
    if m is None or not sources:
        return view
    vr = args.get("view_range")
    requested = vr[1] if isinstance(vr, list) and len(vr) == 2 and isinstance(vr[1], int) and vr[1] > 0 else None
    src = sources[0]
    total = src.get("totalLines")
    if not isinstance(total, int):
        rng, text = src.get("range") or {}, str(src.get("text") or "")
        end = int(rng.get("start", 1)) + len(text.split("\n")) - 1
        # Without totalLines: a range that reaches past the old claim ran to the (new) end.
        total = end if requested is None or end < requested else None
    keep = total is not None and (requested is None or requested > total)
    note = f"NOTE: We only show up to {total} since there're only {total} lines in this file.\n" if keep else ""
    return view[: m.start()] + note + view[m.end():]


def fix_clipped(view: str) -> str:
    """Of a clipped file_editor view keep the complete lines and the clip notice only:
    the cut line and what followed it were old text at old numbers."""
    mark = view.find(_CLIPPED)
    close = view.find(_NOTE_END, mark)
    if mark < 0 or close < 0:
        return view
    line = view.rfind("\n", 0, mark) + 1
    return view[:line] + view[mark:close + len(_NOTE_END)] + "\n"


def fix_view(tool: str, args: dict[str, Any], view: str, sources: list[dict[str, Any]]) -> str:
    """The server's view of a file_editor result with the two fixes above applied."""
    if tool not in FILE_EDITORS:
        return view
    view = fix_clipped(view)
    return fix_past_eof(view, args, sources) if args.get("command") == "view" else view
