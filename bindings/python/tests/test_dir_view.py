"""file_editor's view of a directory as a listing source (`depth=2`, no hidden
entries): the pinned SDK's own output, forwarded to the server's `recognize`,
against the server's canonical listing of the same URI."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from concord_openhands.session import ConcordSession
from formats import with_texts

DIR_VIEW_HEADER = "Here's the files and directories up to 2 levels deep in "


@pytest.fixture
def session(tmp_path, concord_bin):
    s = ConcordSession([str(tmp_path.resolve())], binary=concord_bin, agent="dirview")
    yield s
    s.close()


def recognize(s: ConcordSession, anchor: str, path: Path, text: str) -> dict:
    call = {"runtime": "openhands", "tool": "file_editor", "output": text,
            "arguments": {"command": "view", "path": str(path)}}
    res = s.recognize(anchor, call, turn=1)
    if res is None:
        pytest.skip("server unavailable")
    return with_texts(s, res)


def sdk_view(path: Path) -> str:
    """The text the pinned SDK's file_editor shows for `view` of a directory."""
    if sys.version_info < (3, 12):
        pytest.skip("the OpenHands SDK needs Python >= 3.12")
    editor = pytest.importorskip("openhands.tools.file_editor.editor")
    obs = editor.FileEditor().view(path)
    assert not obs.is_error, obs.text
    return obs.text


def tree(root: Path, spec: dict[str, object]) -> None:
    """Make files (str content), directories (dict) and symlinks (("->", target))."""
    for name, v in spec.items():
        p = root / name
        if isinstance(v, dict):
            p.mkdir()
            tree(p, v)
        elif isinstance(v, tuple):
            p.symlink_to(v[1])
        else:
            p.write_text(str(v))


BASE = {
    "a.py": "x\n",
    ".env": "secret\n",
    "src": {"main.py": "", "pkg": {"deep.py": ""}, ".cache": {"x": ""}},
    "docs": {},
    "b c.txt": "",
}

# (name, tree, canonical listing or None when it must not be tracked)
CASES = [
    ("plain", BASE, "a.py\nb c.txt\ndocs/\nsrc/\nsrc/main.py\nsrc/pkg/"),
    ("empty", {}, ""),
    ("file symlink", {"t.txt": "", "l": ("->", "t.txt")}, "l\nt.txt"),
    ("dir symlink deep", {"d": {"e": {}, "ln": ("->", "e")}}, "d/\nd/e/\nd/ln"),
    # The tool enters a symlinked directory; Concord's listing never would.
    ("dir symlink top", {"d": {"x": ""}, "ln": ("->", "d")}, None),
]


@pytest.mark.parametrize("name,spec,want", CASES)
def test_directory_view_is_a_listing_source(tmp_path, session, name, spec, want):
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    tree(root, spec)
    text = sdk_view(root)
    assert text.startswith(DIR_VIEW_HEADER + str(root))
    res = recognize(session, "v1", root, text)
    assert not res.get("writes")
    if want is None:
        assert res["kind"] == "event" and not res.get("block"), res
        return
    assert res["kind"] == "listing" and res["status"] == "valid", res
    (src,) = res["sources"]
    assert src["uri"] == root.as_uri() + "?depth=2" and "range" not in src
    assert src["text"] == want


def test_a_directory_view_with_hidden_entries_keeps_the_tool_note(tmp_path, session):
    root = (tmp_path / "ws").resolve()
    root.mkdir()
    tree(root, BASE)
    text = sdk_view(root)
    assert "1 hidden files/directories in this directory are excluded" in text
    (src,) = recognize(session, "v1", root, text)["sources"]
    assert ".env" not in src["text"] and ".cache" not in src["text"]


@pytest.mark.parametrize(
    "text",
    [
        # another spelling of the path in the header
        DIR_VIEW_HEADER + "/w/./d, excluding hidden items:\n/w/d/\n/w/d/a",
        # an entry outside the directory, a third level
        DIR_VIEW_HEADER + "{d}, excluding hidden items:\n{d}/\n/elsewhere/a",
        DIR_VIEW_HEADER + "{d}, excluding hidden items:\n{d}/\n{d}/a/b/c",
        # the tool cut a large listing
        DIR_VIEW_HEADER + "{d}, excluding hidden items:\n{d}/\n{d}/a<response clipped><NOTE>x</NOTE>",
        # the directory's own line missing
        DIR_VIEW_HEADER + "{d}, excluding hidden items:\n{d}/a",
    ],
)
def test_directory_views_that_cannot_be_told_exactly_are_not_tracked(tmp_path, session, text):
    d = tmp_path.resolve()
    (d / "a").write_text("")
    res = recognize(session, "v1", d, text.replace("{d}", str(d)))
    assert res["kind"] == "event" and not res.get("block"), res


def test_directory_view_matches_the_servers_listing(tmp_path, session):
    """Each listing recognized from the SDK's view is what the server lists for
    that URI (status valid), and an added file makes it invalid."""
    s = session
    root = tmp_path.resolve()
    for i, (name, spec, want) in enumerate(c.values if hasattr(c, "values") else c for c in CASES):
        if want is None:
            continue
        d = root / f"case{i}"
        d.mkdir()
        tree(d, spec)
        res = recognize(s, f"v{i}", d, sdk_view(d))
        assert res["status"] == "valid", (name, res)
    s.sync(2)
    (root / "case0" / "src" / "pkg" / "new.py").write_text("")  # the third level: not shown
    (root / "case0" / "src" / "new.py").write_text("")
    os.remove(root / "case0" / "a.py")
    res = s.sync(3)
    views = {b.anchor: b for b in (res.blocks if res is not None else [])}
    assert set(views) == {"v0"}, views
    assert views["v0"].status == "invalid"
    assert "added src/new.py" in views["v0"].notice and "removed a.py" in views["v0"].notice
