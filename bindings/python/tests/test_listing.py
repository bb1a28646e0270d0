"""cat -n / read_file listings: parsing and re-rendering in the tool's own format."""

from __future__ import annotations

import pytest

from concord_openhands import listing as L


def cat_n(path: str, lines: list[str], start: int = 1) -> str:
    """file_editor's view output (editor.py _make_output)."""
    body = "\n".join(f"{start + i:6}\t{ln}" for i, ln in enumerate(lines))
    out = f"Here's the result of running `cat -n` on {path}:\n"
    return out + (body + "\n" if body else "")


def read_file_out(path: str, lines: list[str], start: int = 1, final_newline: bool = True) -> str:
    """The Gemini read_file tool's output (read_file/impl.py)."""
    raw = [ln + "\n" for ln in lines]
    if raw and not final_newline:
        raw[-1] = raw[-1][:-1]
    return f"Read file: {path}\n\n" + "".join(f"{start + i:6d}  {ln}" for i, ln in enumerate(raw))


@pytest.mark.parametrize(
    "name,text,style,start,lines,prefix,suffix",
    [
        (
            "view whole",
            cat_n("/w/a.py", ["import os", "", "\tx = 1"]),
            L.CAT_N, 1, ["import os", "", "\tx = 1"],
            "Here's the result of running `cat -n` on /w/a.py:\n", "",
        ),
        (
            "view range with NOTE",
            "NOTE: We only show up to 12 since there're only 12 lines in this file.\n"
            + cat_n("/w/a.py", ["a", "b"], start=11),
            L.CAT_N, 11, ["a", "b"],
            "NOTE: We only show up to 12 since there're only 12 lines in this file.\n"
            "Here's the result of running `cat -n` on /w/a.py:\n",
            "",
        ),
        (
            "edit snippet",
            "The file /w/a.py has been edited. "
            + cat_n("a snippet of /w/a.py", ["x", "y  # tab\tin line"], start=7)
            + "Review the changes and make sure they are as expected. Edit the file again if necessary.",
            L.CAT_N, 7, ["x", "y  # tab\tin line"],
            "The file /w/a.py has been edited. Here's the result of running `cat -n` on a snippet of /w/a.py:\n",
            "Review the changes and make sure they are as expected. Edit the file again if necessary.",
        ),
        (
            "big line numbers",
            cat_n("/w/big", ["p", "q"], start=999_999),
            L.CAT_N, 999_999, ["p", "q"],
            "Here's the result of running `cat -n` on /w/big:\n", "",
        ),
        (
            "empty file",
            cat_n("/w/empty", []),
            L.CAT_N, 1, [],
            "Here's the result of running `cat -n` on /w/empty:\n", "",
        ),
        (
            "read_file",
            read_file_out("/w/b.txt", ["one", "  two"]),
            L.READ_FILE, 1, ["one", "  two"], "Read file: /w/b.txt\n\n", "",
        ),
        (
            "read_file paged",
            "Read file: /w/b.txt (showing lines 3-4 of 9) To read more, use: "
            "read_file(file_path='b.txt', offset=4, limit=2)\n\n"
            + "     3  c\n     4  d\n",
            L.READ_FILE, 3, ["c", "d"],
            "Read file: /w/b.txt (showing lines 3-4 of 9) To read more, use: "
            "read_file(file_path='b.txt', offset=4, limit=2)\n\n",
            "",
        ),
    ],
)
def test_parse(name, text, style, start, lines, prefix, suffix):
    got = L.parse(text)
    assert got is not None, name
    assert got.style is style
    assert (got.start, got.lines, got.prefix, got.suffix) == (start, lines, prefix, suffix)
    assert got.text == "\n".join(lines)
    assert not got.clipped
    # Rendering the same lines reproduces the tool's output byte for byte.
    assert got.render(got.start, got.lines) == text


def test_render_new_numbers_and_lines():
    got = L.parse(cat_n("/w/a.py", ["a", "b", "c"], start=10))
    assert got is not None
    assert got.render(13, ["a", "B", "c", "d"]) == cat_n("/w/a.py", ["a", "B", "c", "d"], start=13)


def test_read_file_without_final_newline_round_trips():
    text = read_file_out("/w/b.txt", ["one", "two"], final_newline=False)
    got = L.parse(text)
    assert got is not None and got.lines == ["one", "two"] and not got.ends_with_newline
    assert got.render(1, ["one", "two"]) == text
    assert got.render(1, ["one", "2"]) == read_file_out("/w/b.txt", ["one", "2"], final_newline=False)


def test_clipped_output_keeps_only_complete_head_lines():
    notice = "<response clipped><NOTE>Due to the max output limit, only part of this file has been shown to you.</NOTE>"
    text = (
        "Here's the result of running `cat -n` on /w/huge:\n"
        "     1\tfirst\n     2\tsecond\n     3\tthi" + notice + "ail of the file\n     4\tlast\n"
    )
    got = L.parse(text)
    assert got is not None and got.clipped
    assert (got.start, got.lines) == (1, ["first", "second"])
    rendered = got.render(1, ["FIRST", "second"])
    assert rendered == (
        "Here's the result of running `cat -n` on /w/huge:\n"
        "     1\tFIRST\n     2\tsecond\n" + notice + "\n"
    )


@pytest.mark.parametrize(
    "text",
    [
        "",
        "File created successfully at: /w/a.py",
        "Here's the files and directories up to 2 levels deep in /w, excluding hidden items:\n/w/\n/w/a.py",
        "Image file /w/x.png read successfully. Displaying image content.",
        "Read file: /w/a",  # no body separator
    ],
)
def test_no_listing(text):
    got = L.parse(text)
    assert got is None or got.lines == []


def test_numbering_gap_ends_listing():
    text = "Here's the result of running `cat -n` on /w/a:\n     1\ta\n     2\tb\n     9\tz\n"
    got = L.parse(text)
    assert got is not None
    assert got.lines == ["a", "b"]
    assert got.suffix == "     9\tz\n"
    assert got.render(1, ["a", "b"]) == text
