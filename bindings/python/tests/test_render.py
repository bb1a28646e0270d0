"""What the model is shown for each block status (docs/protocol.md table)."""

from __future__ import annotations

import pytest

from concord_openhands.listing import parse
from concord_openhands.render import render_block
from concord_openhands.session import BlockView
from test_listing import cat_n

URI = "file:///w/a.py"
NOTICE = "[concord] /w/a.py changed since this read; re-read /w/a.py lines 3-4."
ORIG = cat_n("/w/a.py", ["c", "d"], start=3)


@pytest.mark.parametrize(
    "status,sources,notice,want",
    [
        ("valid", [{"uri": URI, "range": {"start": 3, "end": 4}, "text": "c\nd"}], "", None),
        ("released", [], "", None),
        ("patched", [{"uri": URI, "range": {"start": 5, "end": 7}, "text": "c\nD\ne"}], "",
         cat_n("/w/a.py", ["c", "D", "e"], start=5)),
        ("patched", [{"uri": URI, "text": "whole\nfile"}], "", cat_n("/w/a.py", ["whole", "file"])),
        ("patched", [{"uri": URI, "text": ""}], "", cat_n("/w/a.py", [])),
        ("stale", [{"uri": URI, "range": {"start": 3, "end": 4}, "text": "c\nd"}], NOTICE,
         ORIG + NOTICE),
        ("invalid", [], NOTICE, NOTICE),
        ("superseded", [], NOTICE, NOTICE),
        ("invalid", [{"uri": URI}], "", "[concord] /w/a.py changed since this read; the content "
         "shown earlier is no longer accurate. Re-read it before relying on it."),
    ],
)
def test_render_block(status, sources, notice, want):
    bv = BlockView(block="b1", anchor="call_1", status=status, sources=sources, notice=notice)
    assert render_block(parse(ORIG), bv) == want


def test_key_tracks_what_the_model_sees():
    a = BlockView("b1", "c", "patched", [{"uri": URI, "range": {"start": 1, "end": 1}, "text": "x"}])
    b = BlockView("b1", "c", "patched", [{"uri": URI, "range": {"start": 1, "end": 1}, "text": "x"}],
                  reason="other")
    c = BlockView("b1", "c", "patched", [{"uri": URI, "range": {"start": 2, "end": 2}, "text": "x"}])
    assert a.key() == b.key() != c.key()


# -- headers and footers stay true (issue 10 bug 5) ----------------------------------

NOTE = "NOTE: We only show up to {n} since there're only {n} lines in this file.\n"


def past_eof_view(requested_end: int, old_total: int, start: int = 15):
    """file_editor's output for view_range [start, requested_end] on a file of old_total lines."""
    text = NOTE.format(n=old_total) + cat_n("/w/a.py", [f"l{i}" for i in range(start, old_total + 1)], start)
    listing = parse(text)
    listing.requested_end = requested_end
    return listing


@pytest.mark.parametrize(
    "requested,new_end,total,want_note",
    [
        (40, 25, 25, 25),  # grew, still short of what was asked: the note names the new total
        (40, 40, 45, None),  # grew past what was asked: the note would be false, it goes
        (40, 25, None, 25),  # no totalLines (an older server): the range ran to the new end
        (40, 18, 18, 18),  # shrank: still true with the new total
    ],
)
def test_past_eof_note_is_rerendered_from_total_lines(requested, new_end, total, want_note):
    listing = past_eof_view(requested, 20)
    src = {"uri": URI, "range": {"start": 15, "end": new_end},
           "text": "\n".join(f"l{i}" for i in range(15, new_end + 1))}
    if total is not None:
        src["totalLines"] = total
    got = render_block(listing, BlockView("b1", "call_1", "patched", [src]))
    body = cat_n("/w/a.py", [f"l{i}" for i in range(15, new_end + 1)], 15)
    assert got == (NOTE.format(n=want_note) if want_note else "") + body


@pytest.mark.parametrize(
    "start,end,total,want_header",
    [
        (1, 100, 250, "Read file: /w/a.py (showing lines 1-100 of 250) To read more, use: "
                      "read_file(file_path='a.py', offset=100, limit=100)\n\n"),
        (1, 100, 100, "Read file: /w/a.py\n\n"),  # now the whole file: the tool would say nothing
        (3, 102, 300, "Read file: /w/a.py (showing lines 3-102 of 300) To read more, use: "
                      "read_file(file_path='a.py', offset=102, limit=100)\n\n"),
    ],
)
def test_read_file_header_follows_total_lines(start, end, total, want_header):
    from test_listing import read_file_out

    orig = read_file_out("/w/a.py", [f"l{i}" for i in range(1, 101)]).replace(
        "Read file: /w/a.py\n\n",
        "Read file: /w/a.py (showing lines 1-100 of 200) To read more, use: "
        "read_file(file_path='a.py', offset=100, limit=100)\n\n")
    listing = parse(orig)
    lines = [f"l{i}" for i in range(start, end + 1)]
    src = {"uri": URI, "range": {"start": start, "end": end}, "text": "\n".join(lines), "totalLines": total}
    got = render_block(listing, BlockView("b1", "call_1", "patched", [src]))
    assert got == want_header + "".join(f"{start + i:6d}  {ln}\n" for i, ln in enumerate(lines))


def test_key_changes_with_total_lines():
    a = BlockView("b1", "c", "patched", [{"uri": URI, "text": "x", "totalLines": 1}])
    b = BlockView("b1", "c", "patched", [{"uri": URI, "text": "x", "totalLines": 2}])
    assert a.key() != b.key()
