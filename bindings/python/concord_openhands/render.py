"""Turn a block's state (from `sync`) into the text the model is shown instead."""

from __future__ import annotations

import re
from typing import Any

from .listing import CAT_N, READ_FILE, Listing
from .session import BlockView, uri_to_path
from .terminal import TerminalRead, render_files, render_hits, render_lines

# file_editor's note when a view_range ran past the end of the file.
_PAST_EOF = re.compile(
    r"NOTE: We only show up to (\d+) since there're only (\d+) lines in this file\.\n"
)
# read_file's header of a partial read.
_SHOWING = re.compile(
    r"\A(Read file: .*?) \(showing lines (\d+)-(\d+) of (\d+)\) "
    r"To read more, use: read_file\(file_path='(.*)', offset=(\d+), limit=(\d+)\)\n\n\Z",
    re.S,
)


def render_block(listing: Listing | TerminalRead | None, view: BlockView) -> str | None:
    """The replacement text for a tool result, or None to keep the original.

    See docs/protocol.md, "How a binding renders a block view".
    """
    status = view.status
    if status in ("valid", "released", ""):
        return None
    out = None
    if status in ("patched", "stale") and view.sources and listing is not None:
        out = _render_sources(listing, view.sources)
    if out is not None:
        if status == "stale" and view.notice:
            if out and not out.endswith("\n"):
                out += "\n"
            out += view.notice
        return out
    if view.notice:
        return view.notice
    # A state we cannot show faithfully: say so rather than show stale text.
    paths = ", ".join(uri_to_path(str(s.get("uri", ""))) for s in view.sources) or "the file"
    return (
        f"[concord] {paths} changed since this read; the content shown earlier is "
        "no longer accurate. Re-read it before relying on it."
    )


def _span(src: dict[str, Any]) -> tuple[int, list[str]]:
    rng = src.get("range") or None
    text = str(src.get("text") or "")
    if rng:
        return int(rng.get("start", 1)), text.split("\n")
    return 1, (text.split("\n") if text else [])


def _total(src: dict[str, Any]) -> int | None:
    """The source's current line count: `totalLines`, or known from a whole-file view."""
    total = src.get("totalLines")
    if isinstance(total, int):
        return total
    if not src.get("range"):
        text = str(src.get("text") or "")
        return len(text.split("\n")) if text else 0
    return None


def _render_sources(listing: Listing | TerminalRead, sources: list[dict[str, Any]]) -> str | None:
    if isinstance(listing, TerminalRead):
        if listing.kind == "hits":
            hits = []
            for k, s in enumerate(sources):
                start, lines = _span(s)
                path = uri_to_path(str(s.get("uri", "")))
                # Sources come back in the order observed: one per hit or context line.
                sep = listing.hits[k].sep if k < len(listing.hits) else ":"
                # A hit whose line grew into several (a line inserted in it) shows each.
                hits.extend((path, start + i, ln, sep) for i, ln in enumerate(lines))
            return render_hits(listing, hits)
        if listing.kind == "files":
            if len(sources) != len(listing.parts):
                return None
            return render_files(listing, [_span(s) for s in sources])
        if listing.kind == "lines":
            start, lines = _span(sources[0])
            return render_lines(listing, start, lines)
        return None  # a listing: the server sends a notice, never a re-render
    start, lines = _span(sources[0])
    out = listing.render(start, lines)
    total = _total(sources[0])
    end = start + len(lines) - 1
    if listing.style is CAT_N:
        return _fix_past_eof(listing, out, end, total)
    if listing.style is READ_FILE:
        return _fix_showing(listing, out, start, end, total)
    return out


def _fix_past_eof(listing: Listing, out: str, end: int, total: int | None) -> str:
    """Keep file_editor's "only N lines" note true for the lines shown now."""
    m = _PAST_EOF.search(listing.prefix)
    if m is None:
        return out
    requested = listing.requested_end
    if total is None:
        # Without totalLines: a range that reaches past the old claim ran to
        # the (new) end of the file.
        total = end if requested is None or end < requested else None
    if total is not None and (requested is None or requested > total):
        note = f"NOTE: We only show up to {total} since there're only {total} lines in this file.\n"
    else:
        note = ""  # the file now has the lines asked for: the note would be false
    return out.replace(m.group(0), note, 1)


def _fix_showing(listing: Listing, out: str, start: int, end: int, total: int | None) -> str:
    """Keep read_file's "(showing lines A-B of T)" header true."""
    m = _SHOWING.match(listing.prefix)
    if m is None or total is None:
        return out
    head, _a, _b, _t, fp, _off, limit = m.groups()
    if end >= total:  # the tool says nothing of a read that reached the end
        new = f"{head}\n\n"
    else:
        new = (
            f"{head} (showing lines {start}-{end} of {total}) To read more, use: "
            f"read_file(file_path='{fp}', offset={end}, limit={limit})\n\n"
        )
    return new + out[len(listing.prefix):]
