"""The stdlib JSON-RPC client (newline framing: the Content-Length parser is the server's,
rpc/internal/frame): concurrency, timeouts, stderr, failures."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest

from concord_openhands.rpc import RpcClient, RpcError, ServerUnavailable

PEER = [sys.executable, str(Path(__file__).with_name("stdio_peer.py"))]


@pytest.fixture
def peer():
    c = RpcClient(PEER)
    yield c
    c.kill()


def test_call_and_concurrency(peer):
    assert peer.call("echo", {"a": [1, "ü"]}) == {"a": [1, "ü"]}
    results: dict[int, object] = {}

    def worker(i: int) -> None:
        for j in range(25):
            results[i * 100 + j] = peer.call("echo", {"n": i * 100 + j})

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {k: {"n": k} for k in results} and len(results) == 200


def test_large_messages_both_ways(peer):
    big = {"text": "äbc\n" * (1 << 19)}  # 2 MiB of UTF-8, far beyond a pipe's buffer
    assert peer.call("echo", big, timeout=20) == big


def test_error_reply(peer):
    with pytest.raises(RpcError) as exc:
        peer.call("fail", {})
    assert (exc.value.code, exc.value.data) == (-32602, {"field": "x"})
    assert peer.call("echo", 1) == 1  # the connection is still fine


def test_timeout_then_keeps_serving(peer):
    t0 = time.monotonic()
    with pytest.raises(ServerUnavailable, match="no answer within"):
        peer.call("hang", None, timeout=0.3)
    assert time.monotonic() - t0 < 2
    assert peer.call("echo", "after") == "after"


def test_stderr_is_drained(peer):
    # 1 MiB of stderr would block a server whose stderr pipe nobody reads.
    assert peer.call("flood", None, timeout=10) == "flooded"
    assert peer.call("echo", 2) == 2
    assert peer.stderr_tail and peer.stderr_tail[-1].startswith("xxx")


def test_server_request_refused_and_notification_ignored(peer):
    # The binding registers no keyed sources: a readSource is answered "method not found" at once
    # (never left hanging), a hint is dropped, and the connection goes on.
    got = peer.call("ask", {"uri": "res://db/1"}, timeout=5)
    assert got["code"] == -32601 and "readSource" in got["message"]
    assert peer.call("note", None) == "noted"
    assert peer.call("echo", 3) == 3


def test_death_fails_pending_and_later_calls(peer):
    t0 = time.monotonic()
    with pytest.raises(ServerUnavailable, match="exit status 3"):
        peer.call("die", None, timeout=10)
    assert time.monotonic() - t0 < 5  # not the timeout: the reader saw EOF
    assert not peer.alive()
    with pytest.raises(ServerUnavailable):
        peer.call("echo", 1)


def test_missing_executable():
    with pytest.raises(ServerUnavailable, match="start"):
        RpcClient(["/nonexistent/concord", "serve"])


def test_real_server_lifecycle(concord_bin, workspace):
    c = RpcClient([concord_bin, "serve", "--framing=newline"])
    try:
        with pytest.raises(RpcError) as exc:
            c.call("sync", {"agent": "main", "turn": 1})
        assert exc.value.code == -32002  # before initialize
        with pytest.raises(RpcError) as exc:
            c.call("initialize", {"protocolVersion": 99, "roots": [str(workspace)]})
        assert exc.value.code == -32003
        res = c.call("initialize", {"protocolVersion": 1, "roots": [str(workspace)],
                                    "clientInfo": {"name": "test", "version": "0"}})
        assert res["protocolVersion"] == 1
        with pytest.raises(RpcError) as exc:
            c.call("noSuchMethod", {})
        assert exc.value.code == -32601
        # Many threads at once over one connection.
        errors: list[BaseException] = []

        def worker() -> None:
            try:
                for _ in range(20):
                    assert isinstance(c.call("stats", None), dict)
            except BaseException as e:  # noqa: BLE001
                errors.append(e)

        threads = [threading.Thread(target=worker) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
    finally:
        status = c.close()
    assert status == 0  # shutdown then exit: a clean end
