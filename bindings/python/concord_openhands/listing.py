"""Parse and re-render the numbered file listings that tools show the model.

Two formats exist in OpenHands tools:

- `file_editor` (`cat -n`):  ``f"{n:6}\\t{line}"`` after a header line
  "Here's the result of running `cat -n` on ...:". Edit results embed such a
  listing of a snippet, between a leading sentence and a trailing one.
- Gemini-style `read_file`: ``f"{n:6d}  {line}"`` after "Read file: ...\\n\\n".

A Listing keeps everything around the numbered lines verbatim, so a repaired
block is re-rendered in the tool's own format with its new line numbers and
the same surrounding text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CAT_N_HEADER = "Here's the result of running `cat -n` on "
READ_FILE_HEADER = "Read file: "
CLIPPED_MARK = "<response clipped>"


@dataclass(frozen=True)
class Style:
    name: str
    pattern: re.Pattern[str]
    sep: str

    def line(self, n: int, text: str) -> str:
        return f"{n:6}{self.sep}{text}"


CAT_N = Style("cat-n", re.compile(r"^ *(\d+)\t(.*)\Z", re.S), "\t")
READ_FILE = Style("read-file", re.compile(r"^ *(\d+)  (.*)\Z", re.S), "  ")


@dataclass
class Listing:
    """A numbered listing found inside a tool's output."""

    style: Style
    prefix: str  # everything before the first numbered line (headers, notes)
    start: int  # number of the first line (1-based); meaningful if lines
    lines: list[str]  # the raw lines, without numbers
    suffix: str  # everything after the last numbered line's newline
    clipped: bool = False  # the tool cut the output; only `lines` is reliable
    ends_with_newline: bool = True  # whether the last numbered line ended with "\n"
    requested_end: int | None = None  # file_editor: the view_range end asked for (None: to EOF)

    @property
    def end(self) -> int:
        return self.start + len(self.lines) - 1

    @property
    def text(self) -> str:
        """The lines as the protocol wants them: joined by "\\n", no trailing newline."""
        return "\n".join(self.lines)

    def render(self, start: int, lines: list[str]) -> str:
        """The same output with `lines` numbered from `start` in place of the old ones."""
        body = "\n".join(self.style.line(start + i, ln) for i, ln in enumerate(lines))
        if body and (self.ends_with_newline or self.suffix):
            body += "\n"
        return self.prefix + body + self.suffix


def parse(text: str, style: Style | None = None) -> Listing | None:
    """Find the numbered listing in a tool output; None if there is none.

    The style is detected from the header when not given.
    """
    if style is None:
        if CAT_N_HEADER in text:
            style = CAT_N
        elif text.startswith(READ_FILE_HEADER):
            style = READ_FILE
        else:
            return None
    if style is CAT_N:
        at = text.find(CAT_N_HEADER)
        if at < 0:
            return None
        nl = text.find("\n", at)
        if nl < 0:
            return None
        body_at = nl + 1
    else:
        if not text.startswith(READ_FILE_HEADER):
            return None
        sep = text.find("\n\n")
        if sep < 0:
            return None
        body_at = sep + 2
    return _parse_body(text, body_at, style)


def _parse_body(text: str, body_at: int, style: Style) -> Listing:
    prefix = text[:body_at]
    lines: list[str] = []
    start = 0
    pos = body_at
    clipped = False
    ends_with_newline = True
    while pos < len(text):
        nl = text.find("\n", pos)
        raw = text[pos:] if nl < 0 else text[pos:nl]
        m = style.pattern.match(raw)
        if m is None:
            break
        n = int(m.group(1))
        if lines and n != start + len(lines):
            break  # numbering broke: not part of this listing
        content = m.group(2)
        if CLIPPED_MARK in content:
            # The tool truncated the middle of its output: the notice is glued
            # to a partial line and the lines after it are misnumbered. Keep
            # the complete lines before it and the notice itself.
            clipped = True
            mark = content.index(CLIPPED_MARK)
            notice = content[mark:]
            close = notice.find("</NOTE>")
            if close >= 0:
                notice = notice[: close + len("</NOTE>")]
            return Listing(style, prefix, start or n, lines, notice + "\n", clipped=True)
        if not lines:
            start = n
        lines.append(content)
        if nl < 0:
            pos = len(text)
            ends_with_newline = False
            break
        pos = nl + 1
    return Listing(
        style,
        prefix,
        start or 1,
        lines,
        text[pos:],
        clipped=clipped,
        ends_with_newline=ends_with_newline,
    )
