"""Which file parts a tool result showed and which files it wrote (no SDK needed)."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from concord_openhands.extract import extract
from test_listing import cat_n, read_file_out

SNIPPET = (
    "The file /w/a.py has been edited. "
    + cat_n("a snippet of /w/a.py", ["b", "B2", "c"], start=2)
    + "Review the changes and make sure they are as expected. Edit the file again if necessary."
)


def fe(command: str, path: str = "/w/a.py", **kw):
    return NS(command=command, path=path, is_error=False, **kw)


@pytest.mark.parametrize(
    "name,tool,action,obs,text,writes,reads,event",
    [
        ("view whole file", "file_editor", {"command": "view", "path": "/w/a.py"}, fe("view"),
         cat_n("/w/a.py", ["a", "b"]), [], [("/w/a.py", None, "a\nb")], None),
        ("view range", "file_editor", {"command": "view", "path": "/w/a.py", "view_range": [3, 4]},
         fe("view"), cat_n("/w/a.py", ["c", "d"], start=3), [], [("/w/a.py", (3, 4), "c\nd")], None),
        ("view range from 1", "file_editor", {"command": "view", "path": "/w/a.py", "view_range": [1, 2]},
         fe("view"), cat_n("/w/a.py", ["a", "b"]), [], [("/w/a.py", (1, 2), "a\nb")], None),
        ("view, action unknown: ranged", "file_editor", None, fe("view"),
         cat_n("/w/a.py", ["a", "b"]), [], [("/w/a.py", (1, 2), "a\nb")], None),
        ("view empty file", "file_editor", {"command": "view", "path": "/w/e"}, fe("view", "/w/e"),
         cat_n("/w/e", []), [], [("/w/e", None, "")], None),
        ("view directory", "file_editor", {"command": "view", "path": "/w"}, fe("view", "/w"),
         "Here's the files and directories up to 2 levels deep in /w, excluding hidden items:\n/w/\n",
         [], [], None),
        ("str_replace", "file_editor", {"command": "str_replace", "path": "/w/a.py"}, fe("str_replace"),
         SNIPPET, ["/w/a.py"], [("/w/a.py", (2, 4), "b\nB2\nc")], None),
        ("insert", "file_editor", {"command": "insert", "path": "/w/a.py"}, fe("insert"),
         SNIPPET, ["/w/a.py"], [("/w/a.py", (2, 4), "b\nB2\nc")], None),
        ("create", "file_editor", {"command": "create", "path": "/w/n.py"}, fe("create", "/w/n.py"),
         "File created successfully at: /w/n.py", ["/w/n.py"], [], None),
        ("undo_edit shows the whole file", "file_editor", {"command": "undo_edit", "path": "/w/a.py"},
         fe("undo_edit"), "Last edit to /w/a.py undone successfully. " + cat_n("/w/a.py", ["a"]),
         ["/w/a.py"], [("/w/a.py", None, "a")], None),
        ("planning editor", "planning_file_editor", {"command": "view", "path": "/w/PLAN.md"},
         fe("view", "/w/PLAN.md"), cat_n("/w/PLAN.md", ["# plan"]), [], [("/w/PLAN.md", None, "# plan")], None),
        ("error", "file_editor", {"command": "view", "path": "/w/a.py"},
         NS(command="view", path="/w/a.py", is_error=True), "Invalid `path`", [], [], None),
        ("read_file whole", "read_file", {"file_path": "/w/b.txt"},
         NS(file_path="/w/b.txt", is_truncated=False, is_error=False),
         read_file_out("/w/b.txt", ["x", "y"]), [], [("/w/b.txt", None, "x\ny")], None),
        ("read_file relative + offset", "read_file", {"file_path": "b.txt", "offset": 2, "limit": 2},
         NS(file_path="b.txt", is_truncated=True, is_error=False),
         "Read file: /w/b.txt (showing lines 3-4 of 9)\n\n     3  c\n     4  d\n",
         [], [("/w/b.txt", (3, 4), "c\nd")], None),
        ("write_file", "write_file", {"file_path": "/w/c.txt", "content": "z"},
         NS(file_path="/w/c.txt", is_error=False), "Wrote file: /w/c.txt", ["/w/c.txt"], [], None),
        ("edit relative", "edit", {"file_path": "c.txt"}, NS(file_path=None, is_error=False),
         "Edited file", ["/w/c.txt"], [], None),
        ("apply_patch", "apply_patch", {"patch": "..."},
         NS(is_error=False, commit=NS(changes={
             "src/a.py": NS(type="update", move_path=None),
             "old.py": NS(type="update", move_path="new.py"),
             "/w/gone.py": NS(type="delete", move_path=None)})),
         "Done!", ["/w/src/a.py", "/w/old.py", "/w/new.py", "/w/gone.py"], [], None),
        ("terminal is an event", "terminal", {"command": "sed -i s/a/b/ a.py"},
         NS(command="sed -i s/a/b/ a.py", is_error=False), "$ ...", [], [], "sed -i s/a/b/ a.py"),
        ("unknown tool", "browser", {}, NS(is_error=False), "page", [], [], None),
    ],
)
def test_extract(name, tool, action, obs, text, writes, reads, event):
    got = extract(tool, action, obs, text, root="/w")
    assert got.writes == writes, name
    assert [(r.path, r.range, r.text) for r in got.reads] == reads, name
    assert got.event == event, name


def test_read_keeps_the_listing_for_rendering():
    got = extract("file_editor", {"command": "str_replace"}, fe("str_replace"), SNIPPET)
    (read,) = got.reads
    assert read.listing.render(read.range[0], read.text.split("\n")) == SNIPPET
