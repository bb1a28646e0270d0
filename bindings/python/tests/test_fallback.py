"""What the binding still renders itself, because the server's `recognize` does
not yet (fallback.py): read_file reads and file_editor's past-end-of-file note."""

from __future__ import annotations

import pytest

from concord_openhands import fallback
from formats import cat_n, read_file_out

URI = "file:///w/a.py"
NOTE = "NOTE: We only show up to {n} since there're only {n} lines in this file.\n"
PAGED = ("Read file: /w/a.py (showing lines 1-100 of 200) To read more, use: "
         "read_file(file_path='a.py', offset=100, limit=100)\n\n")


@pytest.mark.parametrize("text,start,lines", [
    (read_file_out("/w/b.txt", ["one", "  two"]), 1, ["one", "  two"]),
    (read_file_out("/w/b.txt", ["one", "two"], final_newline=False), 1, ["one", "two"]),
    (read_file_out("/w/b.txt", ["c", "d"], start=3), 3, ["c", "d"]),
    (read_file_out("/w/b.txt", []), 1, []),
])
def test_read_file_parses_and_renders_back(text, start, lines):
    got = fallback.ReadFile.parse(text)
    assert got is not None and (got.start, got.lines) == (start, lines)
    src = {"uri": URI, "text": "\n".join(lines)}
    if start != 1 or not lines:
        src["range"] = {"start": start, "end": start + len(lines) - 1}
    assert got.render(src) == text


@pytest.mark.parametrize("text", ["", "Read file: /w/a", "Read file: /w/a\n\n     1  a\n     3  c\n", "plain"])
def test_not_a_read_file_output(text):
    assert fallback.ReadFile.parse(text) is None


@pytest.mark.parametrize("start,end,total,want_header", [
    (1, 100, 250, "Read file: /w/a.py (showing lines 1-100 of 250) To read more, use: "
                  "read_file(file_path='a.py', offset=100, limit=100)\n\n"),
    (1, 100, 100, "Read file: /w/a.py\n\n"),  # now the whole file: the tool would say nothing
    (3, 102, 300, "Read file: /w/a.py (showing lines 3-102 of 300) To read more, use: "
                  "read_file(file_path='a.py', offset=102, limit=100)\n\n"),
])
def test_read_file_header_follows_total_lines(start, end, total, want_header):
    orig = read_file_out("/w/a.py", [f"l{i}" for i in range(1, 101)]).replace("Read file: /w/a.py\n\n", PAGED)
    reader = fallback.ReadFile.parse(orig)
    lines = [f"l{i}" for i in range(start, end + 1)]
    src = {"uri": URI, "range": {"start": start, "end": end}, "text": "\n".join(lines), "totalLines": total}
    assert reader.render(src) == want_header + "".join(f"{start + i:6d}  {ln}\n" for i, ln in enumerate(lines))


@pytest.mark.parametrize("requested,new_end,total,want_note", [
    (40, 25, 25, 25),  # grew, still short of what was asked: the note names the new total
    (40, 40, 45, None),  # grew past what was asked: the note would be false, it goes
    (40, 25, None, 25),  # no totalLines: the range ran to the new end
    (40, 18, 18, 18),  # shrank: still true with the new total
])
def test_past_eof_note_follows_total_lines(requested, new_end, total, want_note):
    lines = [f"l{i}" for i in range(15, new_end + 1)]
    src = {"uri": URI, "range": {"start": 15, "end": new_end}, "text": "\n".join(lines)}
    if total is not None:
        src["totalLines"] = total
    # The server's view keeps the note of the original output (20 lines then).
    view = NOTE.format(n=20) + cat_n("/w/a.py", lines, 15)
    got = fallback.fix_past_eof(view, {"command": "view", "view_range": [15, requested]}, [src])
    assert got == (NOTE.format(n=want_note) if want_note else "") + cat_n("/w/a.py", lines, 15)


def test_clipped_view_keeps_complete_lines_and_the_notice():
    notice = "<response clipped><NOTE>Due to the max output limit, only part of this file has been shown to you.</NOTE>"
    # The server's view: repaired lines, then the cut line and the tail as first shown.
    view = cat_n("/w/huge", ["FIRST", "second"]) + "     3\tthi" + notice + "ail of the file\n     4\tlast\n"
    assert fallback.fix_clipped(view) == cat_n("/w/huge", ["FIRST", "second"]) + notice + "\n"
    assert fallback.fix_clipped(cat_n("/w/a", ["x"])) == cat_n("/w/a", ["x"])
