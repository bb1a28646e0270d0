"""A root that is not there reads as what it is (issue 37): the session's constructor refuses it,
and a root the server refuses at start (the condenser's path: it never stops the agent) passes
through with the server's own message, not Popen's error on a missing working directory."""

from __future__ import annotations

import logging

import pytest

from concord_openhands.session import WARNING_PREFIX, ConcordSession


def warnings_of(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno >= logging.WARNING and r.name.startswith("concord_openhands")]


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_constructor_refuses_a_root_that_is_not_a_directory(tmp_path, kind):
    root = tmp_path / "nonexistent" / "dir"
    want = "does not exist"
    if kind == "file":
        root = tmp_path / "a.txt"
        root.write_text("x\n")
        want = "is not a directory"
    with pytest.raises(ValueError, match=f"root '{root}' {want}"):
        ConcordSession([str(root)], binary="/no/such/concord")


def server_refusal(caplog, session: ConcordSession, root) -> str:
    with caplog.at_level(logging.WARNING):
        assert session.ensure() is False
        assert session.ensure() is False  # said once
    got = warnings_of(caplog)
    assert len(got) == 1, got
    assert WARNING_PREFIX in got[0], got[0]
    assert f'root "{root}": file does not exist' in got[0], got[0]
    assert "Errno" not in got[0], got[0]
    return got[0]


def test_unchecked_missing_root_gets_the_servers_message(concord_bin, tmp_path, caplog):
    root = tmp_path / "nonexistent" / "dir"
    s = ConcordSession([str(root)], binary=concord_bin, check_roots=False)
    try:
        server_refusal(caplog, s, root)
    finally:
        s.close()


def test_root_gone_before_the_start_gets_the_servers_message(concord_bin, tmp_path, caplog):
    root = tmp_path / "ws"
    root.mkdir()
    s = ConcordSession([str(root)], binary=concord_bin)  # the server starts lazily
    root.rmdir()
    try:
        server_refusal(caplog, s, root)
    finally:
        s.close()


def test_no_roots_start(concord_bin):
    s = ConcordSession([], binary=concord_bin)  # roots[0] was the server's cwd: an IndexError
    try:
        assert s.ensure() is True
    finally:
        s.close()


def test_condenser_with_a_missing_root_passes_through_with_the_servers_message(concord_bin, tmp_path, caplog):
    pytest.importorskip("openhands.sdk", reason="the condenser needs the OpenHands SDK (Python 3.12+)")
    from concord_openhands import ConcordCondenser

    root = tmp_path / "nonexistent" / "dir"
    # Built anywhere (an agent server's roots are its own paths): no error here.
    c = ConcordCondenser(roots=[str(root)], binary=concord_bin)
    try:
        server_refusal(caplog, c.session, root)
    finally:
        c.close()
