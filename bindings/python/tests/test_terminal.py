"""Terminal results as the server's `recognize` takes them: the real output
captured from the pinned SDK's terminal tool (tests/testdata/terminal.json,
written by tests/capture_terminal.py), forwarded as the binding forwards it.
The recognizer itself is tested in Go against the same captures
(testdata/recognize/openhands-terminal.*.json)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from concord_openhands.session import ConcordSession
from formats import with_texts, simple_argv

HERE = Path(__file__).resolve().parent
CAPTURE = json.loads((HERE / "testdata" / "terminal.json").read_text())
sys.path.insert(0, str(HERE))
from capture_terminal import fixture  # noqa: E402


@pytest.fixture(scope="module")
def ws(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("capture").resolve()
    fixture(d)
    return d


def case(command: str, ws: Path) -> tuple[str, str, str, int]:
    for c in CAPTURE["cases"]:
        if c["command"] == command:
            sub = lambda s: s.replace("{WS}", str(ws))  # noqa: E731
            return sub(c["text"]), sub(c["working_dir"]), sub(c["shown"]), c["exit_code"]
    raise KeyError(command)


def recognize(s: ConcordSession, anchor: str, command: str, text: str, cwd: str, exit_code: int = 0) -> dict:
    call = {"runtime": "openhands", "tool": "terminal", "arguments": {"command": command},
            "output": text, "exitCode": exit_code, "cwd": cwd}
    res = s.recognize(anchor, call, turn=1)
    if res is None:
        pytest.skip("server unavailable")
    return with_texts(s, res)


@pytest.fixture(scope="module")
def session(ws, concord_bin):
    s = ConcordSession([str(ws)], binary=concord_bin, agent="terminal")
    yield s
    s.close()


# (command, path, range, numbered)
LINE_READS = [
    ("cat config.txt", "config.txt", None, False),
    ("cat -n src/main.py", "src/main.py", None, True),
    ("cat noeol.txt", "noeol.txt", None, False),
    ("head -n 5 config.txt", "config.txt", (1, 5), False),
    ("head -n 100 src/pkg/util.py", "src/pkg/util.py", (1, 2), False),
    ("tail -n 4 config.txt", "config.txt", (27, 30), False),
    ("tail -n +27 config.txt", "config.txt", (27, 30), False),
    ("sed -n '10,14p' config.txt", "config.txt", (10, 14), False),
    ("sed -n '28,40p' config.txt", "config.txt", (28, 30), False),
    ("sed -n 5p config.txt", "config.txt", (5, 5), False),
    ("nl -ba blank.txt", "blank.txt", None, True),
    ("cat -n blank.txt", "blank.txt", None, True),
]


@pytest.mark.parametrize("command,rel,rng,numbered", LINE_READS, ids=[c[0] for c in LINE_READS])
def test_line_reads_from_real_output(ws, session, command, rel, rng, numbered):
    text, cwd, _, code = case(command, ws)
    res = recognize(session, "r-" + command, command, text, cwd, code)
    assert res["kind"] == "read" and res["status"] == "valid", res
    (src,) = res["sources"]
    assert src["uri"] == (ws / rel).as_uri()
    assert (src.get("range") or None) == (None if rng is None else {"start": rng[0], "end": rng[1]})


LISTINGS = [
    ("ls", "", "?depth=1", "blank.txt\nconfig.txt\nnoeol.txt\nsrc/"),
    ("ls -a", "", "?depth=1&hidden=1", ".hidden\nblank.txt\nconfig.txt\nnoeol.txt\nsrc/"),
    ("ls -la src", "/src", "?depth=1&hidden=1", "main.py\npkg/"),
    ("ls -1 src", "/src", "?depth=1", "main.py\npkg/"),
    ("find . -not -path '*/.git/*'", "", "?depth=0&hidden=1&ignore=.git",
     ".hidden\nblank.txt\nconfig.txt\nnoeol.txt\nsrc/\nsrc/main.py\nsrc/pkg/\nsrc/pkg/util.py"),
    ("find src -name '*.py'", "/src", "?depth=0&hidden=1&glob=**/*.py", "main.py\npkg/util.py"),
    ("find . -type f", "", "?depth=0&hidden=1&glob=**",
     ".hidden\nblank.txt\nconfig.txt\nnoeol.txt\nsrc/main.py\nsrc/pkg/util.py"),
    ("find . -maxdepth 1", "", "?depth=1&hidden=1", ".hidden\nblank.txt\nconfig.txt\nnoeol.txt\nsrc/"),
]




@pytest.mark.parametrize("command,sub,query,listing", LISTINGS, ids=[c[0] for c in LISTINGS])
def test_listings_from_real_output_match_the_servers_listing(ws, session, command, sub, query, listing):
    text, cwd, _, code = case(command, ws)
    res = recognize(session, "l-" + command, command, text, cwd, code)
    assert res["kind"] == "listing" and res["status"] == "valid", res
    (src,) = res["sources"]
    assert src["uri"] == Path(str(ws) + sub).as_uri() + query
    assert src["text"] == listing


@pytest.mark.parametrize("command", ["ls", "ls -la", "find . -maxdepth 1"])
def test_symlink_to_a_directory_is_an_entry_not_a_directory(tmp_path, concord_bin, command):
    """Issue 19: `link -> sub` is listed as `link`, never `link/`: Concord's
    listing does not follow symlinks (docs/protocol.md)."""
    d = tmp_path.resolve()
    (d / "sub").mkdir()
    (d / "sub" / "x.txt").write_text("x\n")
    (d / "f.txt").write_text("f\n")
    (d / "link").symlink_to("sub")
    out = subprocess.run(simple_argv(command), cwd=d, capture_output=True, text=True, check=True).stdout
    s = ConcordSession([str(d)], binary=concord_bin, agent="symlink")
    try:
        res = recognize(s, "l1", command, out.strip("\n"), str(d))
        assert res["kind"] == "listing" and res["status"] == "valid", res
        assert res["sources"][0]["text"] == "f.txt\nlink\nsub/"
    finally:
        s.close()
