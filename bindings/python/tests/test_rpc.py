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
    notes = []
    c = RpcClient(
        PEER,
        on_request=lambda m, p: {"text": f"{m}:{p['uri']}", "version": "v1"},
        on_notification=lambda m, p: notes.append((m, p)),
    )
    c.notes = notes
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


def test_server_request_and_notification(peer):
    assert peer.call("ask", {"uri": "res://db/1"}) == {"text": "readSource:res://db/1", "version": "v1"}
    assert peer.call("note", None) == "noted"
    assert peer.notes == [("blocksChanged", {"generation": 7})]


def test_slow_request_handler_does_not_block_reading():
    # Bug 8: the handler of a server-to-client request ran on the reader
    # thread, so while it waited nothing else was read: every other call
    # timed out. It now runs on a worker; the reader keeps routing answers.
    release = threading.Event()
    threads: list[str] = []

    def slow(method: str, params: object) -> object:
        threads.append(threading.current_thread().name)
        assert release.wait(10), "never released"
        return {"text": "late", "version": "v1"}

    c = RpcClient(PEER, on_request=slow)
    try:
        asked: dict[str, object] = {}
        t = threading.Thread(target=lambda: asked.setdefault("r", c.call("ask", {"uri": "res://x"}, timeout=10)))
        t.start()
        deadline = time.monotonic() + 5
        while not threads and time.monotonic() < deadline:
            time.sleep(0.01)
        assert threads, "the server's request never reached the handler"
        # The handler is blocked; a call made now is still answered at once.
        t0 = time.monotonic()
        assert c.call("echo", "meanwhile", timeout=2) == "meanwhile"
        assert time.monotonic() - t0 < 1.5
        assert threads[0] != "concord-rpc-reader"
        release.set()
        t.join(10)
        assert asked["r"] == {"text": "late", "version": "v1"}
    finally:
        release.set()
        c.kill()


def test_request_handler_errors_are_answered():
    def broken(method: str, params: object) -> object:
        raise RuntimeError("boom")

    c = RpcClient(PEER, on_request=broken)
    try:
        got = c.call("ask", {"uri": "res://x"}, timeout=5)
        assert got == {"code": -32603, "message": "readSource: boom"}
    finally:
        c.kill()


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
