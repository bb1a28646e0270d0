"""At start the binding checks the protocol version the binary speaks and says clearly when the
two do not match (issue 15), instead of failing later on an unknown field."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

from concord_openhands import session as S
from concord_openhands.session import ConcordSession

PEER = '''
import json, sys
def send(msg):
    sys.stdout.buffer.write(json.dumps(msg).encode() + b"\\n")
    sys.stdout.buffer.flush()
for line in sys.stdin.buffer:
    msg = json.loads(line)
    if msg.get("method") == "initialize":
        {answer}
'''

ANSWERS = {
    # An older or newer server that answers with the version it speaks.
    "answers version 2": 'send({"jsonrpc": "2.0", "id": msg["id"], "result": {"protocolVersion": 2, "serverInfo": {"name": "concord"}, "capabilities": {}}})',
    # A server that refuses the client's version, as `concord serve` does (-32003).
    "refuses with -32003": 'send({"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32003, "message": "unsupported protocol version 1", "data": {"supported": [2]}}})',
}


def fake_binary(tmp_path: Path, answer: str) -> Path:
    script = tmp_path / "peer.py"
    script.write_text(PEER.format(answer=answer))
    exe = tmp_path / "concord"
    exe.write_text(f"#!/bin/sh\nexec {sys.executable} {script}\n")
    exe.chmod(0o755)
    return exe


@pytest.mark.parametrize("answer", sorted(ANSWERS))
def test_protocol_mismatch_is_named_once_and_the_agent_goes_on(tmp_path, caplog, answer):
    exe = fake_binary(tmp_path, ANSWERS[answer])
    s = ConcordSession([str(tmp_path)], binary=str(exe), init_timeout=5)
    with caplog.at_level(logging.WARNING):
        for turn in range(1, 4):
            assert s.sync(turn) is None  # pass-through: the agent keeps running
    got = [r.getMessage() for r in caplog.records
           if r.levelno >= logging.WARNING and r.name.startswith("concord_openhands")]
    assert len(got) == 1, got
    assert "speaks protocol [2]" in got[0] and "needs 1" in got[0], got[0]
    s.close()


def test_the_real_binary_speaks_this_bindings_version(concord_bin, tmp_path):
    s = ConcordSession([str(tmp_path)], binary=concord_bin)
    assert s.sync(1) is not None
    assert s.server_info.get("protocolVersion") == S.PROTOCOL_VERSION
    s.close()
