"""The SDK-free session: binary discovery, pass-through, and the protocol flow
against the real `concord serve`."""

from __future__ import annotations

import logging
import os
import signal
import stat
import time
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from concord_openhands import session as S
from concord_openhands.session import ConcordSession, Source, find_binary


def warnings_of(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno >= logging.WARNING and r.name.startswith("concord_openhands")]


def make_exe(path: Path) -> Path:
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_find_binary_order(tmp_path, monkeypatch):
    on_path = make_exe((tmp_path / "pathdir").mkdir() or tmp_path / "pathdir" / "concord")
    monkeypatch.setenv("PATH", str(on_path.parent))
    monkeypatch.delenv("CONCORD_BIN", raising=False)
    assert find_binary() == str(on_path)
    from_env = make_exe(tmp_path / "env-concord")
    monkeypatch.setenv("CONCORD_BIN", str(from_env))
    assert find_binary() == str(from_env)
    explicit = make_exe(tmp_path / "explicit")
    assert find_binary(str(explicit)) == str(explicit)
    # A named binary that is unusable is an error, not a reason to run another one.
    monkeypatch.setenv("CONCORD_BIN", str(tmp_path / "missing"))
    assert find_binary() is None


def test_missing_binary_passes_through_with_one_warning(workspace, caplog, monkeypatch):
    monkeypatch.setenv("CONCORD_BIN", str(workspace / "no-such-concord"))
    s = ConcordSession([str(workspace)])
    with caplog.at_level(logging.WARNING):
        for turn in range(1, 4):
            assert s.observe(f"c{turn}", [Source(str(workspace / "a"), "x")], turn=turn) is None
            assert s.sync(turn) is None
            assert s.source_changed(str(workspace / "a")) is None
    got = warnings_of(caplog)
    assert len(got) == 1, got
    assert S.WARNING_PREFIX in got[0] and "no-such-concord" in got[0]


def test_hung_binary_passes_through_with_one_warning(workspace, caplog):
    hung = workspace / "hung-concord"
    hung.write_text("#!/bin/sh\nexec sleep 60\n")
    hung.chmod(0o755)
    s = ConcordSession([str(workspace)], binary=str(hung), init_timeout=0.3, max_restarts=1)
    t0 = time.monotonic()
    with caplog.at_level(logging.WARNING):
        for turn in range(1, 5):
            assert s.sync(turn) is None
    assert time.monotonic() - t0 < 5  # two bounded attempts, then off for good
    got = warnings_of(caplog)
    assert len(got) == 1 and "initialize failed" in got[0], got
    s.close()


def test_uri_round_trip(tmp_path):
    p = str(tmp_path / "dir with space" / "ä.py")
    uri = S.path_to_uri(p)
    assert uri.startswith("file:///") and " " not in uri
    assert unquote(urlparse(uri).path) == p


@pytest.fixture
def session(concord_bin, workspace):
    s = ConcordSession([str(workspace)], binary=concord_bin, watch="auto", placement="inplace")
    yield s
    s.close()


def wait_sync(s: ConcordSession, turn: int, want: str, timeout: float = 5.0):
    """sync until a block reaches status `want` (sync verifies before answering,
    so the first call should already do; the loop only absorbs scheduling)."""
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        res = s.sync(turn)
        blocks = res.blocks if res is not None else []
        seen += blocks
        for b in blocks:
            if b.status == want:
                return b, seen
        time.sleep(0.05)
    raise AssertionError(f"no block became {want}: {seen}")


def test_local_edit_is_patched_at_new_lines(session, workspace):
    f = workspace / "config.yaml"
    lines = [f"key{i}: value{i}" for i in range(1, 21)]
    f.write_text("\n".join(lines) + "\n")
    res = session.observe("call_1", [Source(str(f), "\n".join(lines[9:12]), (10, 12))], turn=1)
    assert res is not None and res["status"] == "valid", res
    assert session.sync(2) is not None
    new = ["# header", "# more"] + lines
    new[2 + 10] = "key11: CHANGED"
    f.write_text("\n".join(new) + "\n")
    b, _ = wait_sync(session, 3, "patched")
    assert b.anchor == "call_1"
    src = b.sources[0]
    assert src["range"] == {"start": 12, "end": 14}
    assert src["text"] == "key10: value10\nkey11: CHANGED\nkey12: value12"


def test_rewrite_is_invalidated_with_notice(session, workspace):
    f = workspace / "main.go"
    f.write_text("package main\n\nfunc main() {\n\tprintln(1)\n}\n")
    session.observe("call_1", [Source(str(f), "func main() {\n\tprintln(1)", (3, 4))], turn=1)
    session.sync(2)
    f.write_text("completely\ndifferent\ncontent\nnow\n")
    b, _ = wait_sync(session, 3, "invalid")
    assert str(f) in b.notice and "Re-read" in b.notice


def test_rewrite_of_a_whole_file_read_is_refreshed(session, workspace):
    # The re-read a notice would ask for returns exactly the current file: it goes in place.
    f = workspace / "main.go"
    f.write_text("package main\n\nfunc main() {\n\tprintln(1)\n}\n")
    session.observe("call_1", [Source(str(f), "package main\n\nfunc main() {\n\tprintln(1)\n}")], turn=1)
    f.write_text("completely\ndifferent\ncontent\nnow\n")
    b, _ = wait_sync(session, 2, "patched")
    assert b.sources[0]["text"] == "completely\ndifferent\ncontent\nnow" and "refreshed" in b.reason


def test_registration_verifies_against_the_file(session, workspace):
    # What the tool showed differs from the file now: caught at registration.
    f = workspace / "a.txt"
    f.write_text("one\nTWO\nthree\n")
    res = session.observe("call_1", [Source(str(f), "one\ntwo\nthree")], turn=1)
    assert res is not None and res["status"] in ("patched", "invalid"), res
    b, _ = wait_sync(session, 2, res["status"])
    assert b.anchor == "call_1"


def test_own_write_release_and_outside_roots(session, workspace, tmp_path):
    f = workspace / "a.txt"
    lines = [f"setting {i} = value {i} # comment" for i in range(1, 9)]
    f.write_text("\n".join(lines) + "\n")
    session.observe("call_1", [Source(str(f), "\n".join(lines))], turn=1)
    session.sync(2)
    lines[3] = "setting 4 = CHANGED # comment"
    f.write_text("\n".join(lines) + "\n")
    blocks = session.source_changed(str(f))
    assert blocks is not None
    b, _ = wait_sync(session, 3, "patched")
    assert b.sources[0]["text"] == "\n".join(lines)
    assert session.release(["call_1"]) is not None
    # A file outside the roots is refused for that call only; the session lives on.
    outside = tmp_path / "outside.txt"
    outside.write_text("x\n")
    assert session.observe("call_2", [Source(str(outside), "x")], turn=4) is None
    assert session.stats() is not None


def test_crash_warns_once_and_restarts(session, workspace, caplog):
    f = workspace / "a.txt"
    f.write_text("a\n")
    assert session.observe("call_1", [Source(str(f), "a")], turn=1) is not None
    assert session.epoch == 1
    first = session.client.pid
    with caplog.at_level(logging.WARNING):
        os.kill(session.client.pid, signal.SIGKILL)
        time.sleep(0.2)
        assert session.sync(2) is not None  # restarted behind the scenes
        assert session.epoch == 2 and session.client.pid != first
        os.kill(session.client.pid, signal.SIGKILL)
        time.sleep(0.2)
        session.sync(3)
    got = warnings_of(caplog)
    assert len(got) == 1 and "stopped answering" in got[0], got


def test_close_ends_the_process(concord_bin, workspace):
    s = ConcordSession([str(workspace)], binary=concord_bin)
    assert s.ensure()
    proc = s.client._proc
    s.close()
    assert proc.poll() == 0
    assert not s.ensure()  # closed for good


def test_missing_binary_warning_lists_where_it_looked(workspace, caplog, monkeypatch, tmp_path):
    monkeypatch.delenv("CONCORD_BIN", raising=False)
    monkeypatch.setenv("PATH", f"{tmp_path / 'p1'}{os.pathsep}{tmp_path / 'p2'}")
    s = ConcordSession([str(workspace)])
    with caplog.at_level(logging.WARNING):
        assert s.sync(1) is None
        assert s.sync(2) is None
    got = warnings_of(caplog)
    assert len(got) == 1, got
    for place in S.binary_candidates():
        assert place in got[0]
    assert str(tmp_path / "p1" / "concord") in got[0] and str(tmp_path / "p2" / "concord") in got[0]
    assert "pass-through" in got[0]
    s.close()


def test_sessions_share_one_server_and_release_on_close(concord_bin, workspace):
    f = workspace / "a.txt"
    f.write_text("a\nb\n")
    s1 = ConcordSession([str(workspace)], binary=concord_bin)
    s2 = ConcordSession([str(workspace)], binary=concord_bin)
    assert (s1.agent, s2.agent) == ("main", "main#2")
    assert s1.observe("call_1", [Source(str(f), "a\nb")], turn=1)["block"]
    assert s2.observe("call_1", [Source(str(f), "a\nb")], turn=1)["block"]  # same anchor, other agent
    assert s1.client.pid == s2.client.pid
    assert s1.stats()["blocks"].get("valid") == 2
    proc = s1.client._proc
    s1.close()  # releases its block; the server stays for s2
    assert proc.poll() is None
    assert s2.stats()["blocks"].get("valid") == 1
    s2.close()  # the last one out stops it
    assert proc.wait(5) == 0


def test_collected_session_releases_its_blocks(concord_bin, workspace):
    import gc

    f = workspace / "a.txt"
    f.write_text("a\n")
    keep = ConcordSession([str(workspace)], binary=concord_bin)
    other = ConcordSession([str(workspace)], binary=concord_bin)
    other.observe("call_9", [Source(str(f), "a")], turn=1)
    assert keep.stats()["blocks"].get("valid") == 1
    del other
    gc.collect()
    assert not keep.stats()["blocks"].get("valid")
    keep.close()


def test_compacted_keeps_the_summary_and_corrects_it(session, workspace):
    # A read (call_1) and a summary restating line 2 of it: the server keeps the summary as a derived
    # block built from lines 1-8, releases call_1 itself, and when line 2 changes the summary's view
    # is its text byte-identical followed by a correction naming the file, the lines and the new text.
    f = workspace / "config.yaml"
    lines = ["name: demo", "retry_limit: 3", "port: 8080", "debug: false", "level: info", "mode: fast", "color: blue", "owner: ops"]
    f.write_text("\n".join(lines) + "\n")
    session.observe("call_1", [Source(str(f), "\n".join(lines), (1, 8))], turn=1)
    assert session.sync(2) is not None
    summary = "The agent read config.yaml: retry_limit: 3."
    res = session.compacted("sum_1", summary, ["call_1"], turn=3)
    assert res is not None and res["derived"], res
    assert res["released"] == ["call_1"], res
    assert [(p["uri"], p["startLine"], p["endLine"]) for p in res["provenance"]] == [(f.as_uri(), 1, 8)], res
    assert session._anchors == {"sum_1"}  # call_1 released by the server, the summary released with the session
    assert not session.sync(3).blocks  # nothing changed yet: nothing to correct
    lines[1] = "retry_limit: 5"
    f.write_text("\n".join(lines) + "\n")
    views = [b for b in session.sync(4).blocks if b.anchor == "sum_1"]
    assert len(views) == 1 and views[0].show is not None, views
    show = views[0].show
    assert show.startswith(summary + "\n\n[concord] "), show
    fix = show[len(summary):]
    assert "sum_1" in fix and str(f) in fix and "retry_limit: 5" in fix, fix
    # A line the summary never restated (the default rule) adds nothing; the correction is not repeated.
    lines[6] = "color: green"
    f.write_text("\n".join(lines) + "\n")
    assert not [b for b in session.sync(5).blocks if b.anchor == "sum_1"]
    assert session.release(["sum_1"]) is not None and not session._anchors
