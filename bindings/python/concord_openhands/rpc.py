"""A small JSON-RPC 2.0 client for `concord serve --framing=newline` over a child's stdio (stdlib only).

One JSON message per line (JSON escapes the newlines in it); one reader thread routes responses to
their callers, one drains stderr (a chatty server never blocks on a full pipe), a worker thread
answers each server-to-client request (a slow handler never stalls reading); writes are locked,
every call has a timeout.
"""

from __future__ import annotations

import io
import json
import logging
import subprocess
import threading
from collections import deque
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

from .wire import CODE_INTERNAL_ERROR, CODE_METHOD_NOT_FOUND, METHOD_EXIT, METHOD_SHUTDOWN, ErrorObject

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT = 10.0


class RpcError(Exception):
    """The server answered a request with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None):
        super().__init__(f"{message} (code {code})")
        self.code, self.message, self.data = code, message, data


class ServerUnavailable(Exception):
    """The server cannot answer: not started, exited, hung (timeout) or broken pipe."""


@dataclass
class _Pending:
    done: threading.Event = field(default_factory=threading.Event)
    result: Any = None
    error: BaseException | None = None


class RpcClient:
    """One `concord serve` child process and the JSON-RPC conversation with it."""

    def __init__(self, argv: Sequence[str], *, cwd: str | None = None, env: dict[str, str] | None = None,
                 stderr_lines: int = 200) -> None:
        self.argv = list(argv)
        self._write_lock, self._state_lock = threading.Lock(), threading.Lock()
        self._pending: dict[int, _Pending] = {}
        self._next_id = 0
        self._closed_reason: str | None = None
        self.stderr_tail: deque[str] = deque(maxlen=stderr_lines)  # for error messages and debugging
        try:
            self._proc = subprocess.Popen(self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                          stderr=subprocess.PIPE, cwd=cwd, env=env, bufsize=0)
        except OSError as exc:
            raise ServerUnavailable(f"start {self.argv[0]}: {exc}") from exc
        for target, name in ((self._read_loop, "reader"), (self._drain_stderr, "stderr")):
            threading.Thread(target=target, name=f"concord-rpc-{name}", daemon=True).start()

    @property
    def pid(self) -> int:
        return self._proc.pid

    def alive(self) -> bool:
        return self._closed_reason is None and self._proc.poll() is None

    def call(self, method: str, params: Any = None, timeout: float = DEFAULT_TIMEOUT) -> Any:
        """Send a request and wait for its result (or raise RpcError / ServerUnavailable)."""
        pending = _Pending()
        with self._state_lock:
            if self._closed_reason is not None:
                raise ServerUnavailable(self._closed_reason)
            self._next_id += 1
            req_id = self._next_id
            self._pending[req_id] = pending
        try:
            self._send(_message(method, params, id=req_id))
            if not pending.done.wait(timeout):
                raise ServerUnavailable(f"{method}: no answer within {timeout:g}s")
        except ServerUnavailable:
            with self._state_lock:
                self._pending.pop(req_id, None)
            raise
        if pending.error is not None:
            raise pending.error
        return pending.result

    def close(self, timeout: float = 2.0) -> int | None:
        """Shut the server down politely (shutdown + exit), then by force; the exit status, or None if killed."""
        if self.alive():
            with suppress(ServerUnavailable, RpcError):
                self.call(METHOD_SHUTDOWN, None, timeout=timeout)
                self._send(_message(METHOD_EXIT, None))  # a notification
        self._fail_all("client closed")
        with suppress(OSError):
            if self._proc.stdin:
                self._proc.stdin.close()
        try:
            return self._proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def kill(self) -> None:
        self._fail_all("client killed the server")
        with suppress(OSError, subprocess.TimeoutExpired):
            self._proc.kill()
            self._proc.wait(5)

    def _send(self, msg: dict[str, Any]) -> None:
        rest = memoryview(json.dumps(msg, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n")
        with self._write_lock:
            if self._closed_reason is not None:
                raise ServerUnavailable(self._closed_reason)
            assert self._proc.stdin is not None
            try:
                while rest:  # the pipe is unbuffered: a raw write may take only part of a frame
                    rest = rest[self._proc.stdin.write(rest) or 0:]
            except (OSError, ValueError) as exc:
                self._fail_all(f"write to server: {exc}")
                raise ServerUnavailable(f"write to server: {exc}") from exc

    def _read_loop(self) -> None:
        assert self._proc.stdout is not None
        reason = "server closed its stdout"
        try:
            for line in io.BufferedReader(self._proc.stdout, 1 << 16):
                try:
                    msg = json.loads(line)
                except ValueError:
                    log.warning("concord: unparseable message from server: %.200r", line)
                    continue
                if isinstance(msg, dict):
                    self._dispatch(msg)
        except (OSError, ValueError) as exc:
            reason = f"read from server: {exc}"
        try:
            code = self._proc.wait(1)
        except subprocess.TimeoutExpired:
            code = None
        if code is not None:
            reason += f" (exit status {code})"
        if self.stderr_tail:
            reason += "; stderr: " + "; ".join(list(self.stderr_tail)[-3:])
        self._fail_all(reason)

    def _dispatch(self, msg: dict[str, Any]) -> None:
        method = msg.get("method")
        if method is not None and "id" not in msg:
            return  # a hint (blocksChanged): this binding syncs before every model call anyway
        if method is not None:
            # readSource: this binding registers no keyed sources; answered at once, never left hanging.
            with suppress(ServerUnavailable):
                self._send({"jsonrpc": "2.0", "id": msg["id"],
                            "error": ErrorObject(code=CODE_METHOD_NOT_FOUND, message=f"client does not handle {method}")})
            return
        req_id = msg.get("id")
        with self._state_lock:
            pending = self._pending.pop(req_id, None) if isinstance(req_id, int) else None
        if pending is None:
            return  # a late answer to a call that timed out
        err = msg.get("error")
        if err is not None:
            err = err if isinstance(err, dict) else ErrorObject(code=CODE_INTERNAL_ERROR, message=str(err))
            pending.error = RpcError(int(err.get("code", CODE_INTERNAL_ERROR)), str(err.get("message", "")),
                                     err.get("data"))
        pending.result = msg.get("result")
        pending.done.set()

    def _drain_stderr(self) -> None:
        assert self._proc.stderr is not None
        with suppress(OSError, ValueError):
            for raw in iter(self._proc.stderr.readline, b""):
                if line := raw.decode("utf-8", "replace").rstrip():
                    self.stderr_tail.append(line)
                    log.debug("concord stderr: %s", line)

    def _fail_all(self, reason: str) -> None:
        with self._state_lock:
            if self._closed_reason is None:
                self._closed_reason = reason
            pending, self._pending = self._pending, {}
        for p in pending.values():
            p.error = ServerUnavailable(reason)
            p.done.set()


def _message(method: str, params: Any, **extra: Any) -> dict[str, Any]:
    msg: dict[str, Any] = {"jsonrpc": "2.0", **extra, "method": method}
    if params is not None:
        msg["params"] = params
    return msg
