"""A scripted, OpenAI-compatible chat-completions server on 127.0.0.1.

It plays the model in the end-to-end tests: each POST to
/v1/chat/completions runs the next step of a script. A step sees the request
the agent sent (so it can assert on what the model would have been shown, and
change files between two model calls) and returns the assistant's reply: a
tool call or a final text. Assertion failures inside a step are collected and
re-raised in the test thread by `check()`; the server then answers with a
final text so the agent stops instead of looping.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
import traceback
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


@dataclass
class Request:
    """One chat-completions request as the agent sent it."""

    body: dict[str, Any]

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))

    def tool_results(self) -> dict[str, str]:
        """tool_call_id -> the text of that tool result."""
        out: dict[str, str] = {}
        for m in self.messages:
            if m.get("role") == "tool":
                out[m.get("tool_call_id", "")] = content_text(m.get("content"))
        return out

    def tool_result(self, call_id: str) -> str:
        results = self.tool_results()
        assert call_id in results, f"no tool result for {call_id!r} in {sorted(results)}"
        return results[call_id]

    def all_text(self) -> str:
        return "\n".join(content_text(m.get("content")) for m in self.messages)


def content_text(content: Any) -> str:
    """The text of a message content: a string or a list of {"type":"text"} parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for part in content:
        if isinstance(part, dict) and part.get("type") == "text":
            parts.append(part.get("text", ""))
    return "".join(parts)


@dataclass
class Reply:
    """The assistant's answer: tool calls, or plain text (which ends the run)."""

    text: str = ""
    tool_calls: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)

    @staticmethod
    def call(call_id: str, name: str, **arguments: Any) -> Reply:
        return Reply(tool_calls=[(call_id, name, arguments)])

    @staticmethod
    def finish(message: str = "done") -> Reply:
        # The SDK's built-in finish tool ends the conversation cleanly.
        return Reply.call(f"call_finish_{int(time.time() * 1e6)}", "finish", message=message)


Step = Callable[[Request], Reply]


class FakeLLM:
    """Serve `script` (one step per model call) until stopped."""

    def __init__(self, script: list[Step], *, untooled: str | Callable[[Request], str] | None = None) -> None:
        self.script = list(script)
        self.requests: list[Request] = []
        # With `untooled`, a request that offers no tools (the agent server's
        # conversation title, a summarizing condenser's summary) gets that text
        # (or what the function makes of the request) and takes no script step.
        self.untooled = untooled
        self.side_requests: list[Request] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("Content-Length", "0"))
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    self._send(400, {"error": {"message": "bad json"}})
                    return
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                self._send(200, fake._answer(body))

            def do_GET(self) -> None:  # noqa: N802
                self._send(404, {"error": {"message": f"no route {self.path}"}})

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:  # quiet
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="fake-llm", daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> FakeLLM:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()

    def check(self) -> None:
        """Re-raise, in the test thread, what went wrong inside the server."""
        if self.errors:
            raise AssertionError("fake model: " + "\n---\n".join(self.errors))
        if len(self.requests) < len(self.script):
            raise AssertionError(
                f"fake model: the agent made {len(self.requests)} model calls, "
                f"the script expected {len(self.script)}"
            )

    def _answer(self, body: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            req = Request(body)
            if self.untooled is not None and not body.get("tools"):
                self.side_requests.append(req)
                text = self.untooled(req) if callable(self.untooled) else self.untooled
                return self._completion(Reply(text=text), body.get("model", "fake"))
            self.requests.append(req)
            n = len(self.requests)
            if n > len(self.script):
                self.errors.append(f"unexpected model call #{n} (script has {len(self.script)})")
                reply = Reply(text="unexpected call; stopping")
            else:
                try:
                    reply = self.script[n - 1](req)
                except Exception:  # noqa: BLE001 (reported through check())
                    self.errors.append(f"step {n}: {traceback.format_exc()}")
                    reply = Reply.finish("the fake model's assertion failed")
            return self._completion(reply, body.get("model", "fake"))

    def _completion(self, reply: Reply, model: str) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        finish = "stop"
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": cid,
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
                for cid, name, args in reply.tool_calls
            ]
            finish = "tool_calls"
        return {
            "id": f"chatcmpl-{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }
