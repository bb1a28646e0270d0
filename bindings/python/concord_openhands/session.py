"""One Concord session for one conversation: the SDK-free core of the binding.

It finds and launches `concord serve`, performs `initialize`, and offers the
protocol's calls in the binding's terms (paths, ranges, anchors). It fails
open: if the binary is missing, crashes, or stops answering, every call
returns None, ONE warning is logged, and the agent carries on unchanged. A
crashed or hung server is restarted (a few times at most); `epoch` then
changes so the caller re-registers what the model has been shown.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from .rpc import RpcClient, RpcError, ServerUnavailable

log = logging.getLogger("concord_openhands")

PROTOCOL_VERSION = 1
CLIENT_NAME = "concord-openhands"
CLIENT_VERSION = "0.1.0"
ENV_BIN = "CONCORD_BIN"

WARNING_PREFIX = "concord: context repair unavailable"

# Where a repair of a message the model has already seen goes (docs/protocol.md,
# "Placement"). The binding's default is the server's: in place.
PLACEMENTS = ("inplace", "tail", "auto")
DEFAULT_PLACEMENT = "inplace"


def find_binary(explicit: str | None = None) -> str | None:
    """Locate `concord`: an explicit path, $CONCORD_BIN, next to the package, then PATH."""
    named = explicit or os.environ.get(ENV_BIN)
    if named:
        # Named but unusable is an error: do not silently run another binary.
        return named if os.path.isfile(named) and os.access(named, os.X_OK) else None
    here = Path(__file__).resolve().parent
    for c in (here / "bin" / "concord", here / "concord"):
        if c.is_file() and os.access(c, os.X_OK):
            return str(c)
    return shutil.which("concord")


def path_to_uri(path: str) -> str:
    return Path(os.path.abspath(path)).as_uri()


def uri_to_path(uri: str) -> str:
    parsed = urlparse(uri)
    if parsed.scheme != "file":
        return uri
    return unquote(parsed.path)


@dataclass
class Source:
    """One source link of an observation."""

    path: str
    text: str
    range: tuple[int, int] | None = None  # None: the whole file

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"uri": path_to_uri(self.path), "text": self.text}
        if self.range is not None:
            out["range"] = {"start": self.range[0], "end": self.range[1]}
        return out


@dataclass
class BlockView:
    """A block's model-visible state, as `sync` returns it."""

    block: str
    anchor: str
    status: str
    sources: list[dict[str, Any]] = field(default_factory=list)
    notice: str = ""
    reason: str = ""
    # Under placement tail/auto: "tail" means leave the anchor's message as it
    # is and attach `erratum` after the newest message; "" means in place.
    placement: str = ""
    erratum: str = ""

    @staticmethod
    def from_wire(raw: dict[str, Any]) -> BlockView:
        return BlockView(
            block=str(raw.get("block", "")),
            anchor=str(raw.get("anchor", "")),
            status=str(raw.get("status", "")),
            sources=list(raw.get("sources") or []),
            notice=str(raw.get("notice") or ""),
            reason=str(raw.get("reason") or ""),
            placement=str(raw.get("placement") or ""),
            erratum=str(raw.get("erratum") or ""),
        )

    @property
    def at_tail(self) -> bool:
        return self.placement == "tail"

    def key(self) -> tuple[Any, ...]:
        """What the model would see; equal keys render equal text."""
        srcs = tuple(
            (
                s.get("uri"),
                (s.get("range") or {}).get("start"),
                (s.get("range") or {}).get("end"),
                s.get("text"),
            )
            for s in self.sources
        )
        return (self.status, srcs, self.notice)


@dataclass
class SyncResult:
    """One `sync` answer."""

    blocks: list[BlockView]
    flushed: bool = False  # drop every erratum note before applying the views
    generation: int = 0


def _close_quietly(holder: dict[str, Any]) -> None:
    client = holder.get("client")
    holder["client"] = None
    if client is not None:
        try:
            client.close(timeout=2.0)
        except Exception:  # noqa: BLE001 (finalizer: never raise)
            pass


class ConcordSession:
    """The binding's handle on one `concord serve` process (started lazily)."""

    def __init__(
        self,
        roots: list[str],
        *,
        binary: str | None = None,
        agent: str = "main",
        watch: str = "auto",
        policy: dict[str, Any] | None = None,
        locator: dict[str, Any] | None = None,
        placement: str = DEFAULT_PLACEMENT,
        cache_ttl: float | None = None,
        timeout: float = 5.0,
        init_timeout: float = 10.0,
        max_restarts: int = 2,
        extra_args: list[str] | None = None,
    ) -> None:
        self.roots = [os.path.abspath(r) for r in roots]
        self.binary = binary
        self.agent = agent
        self.watch = watch
        self.policy = policy
        self.locator = locator
        if placement not in PLACEMENTS:
            raise ValueError(f"placement must be one of {', '.join(PLACEMENTS)}, not {placement!r}")
        if cache_ttl is not None and not cache_ttl > 0:
            raise ValueError(f"cache_ttl must be > 0 seconds, not {cache_ttl!r}")
        self.placement = placement
        self.cache_ttl = cache_ttl
        self.timeout = timeout
        self.init_timeout = init_timeout
        self.max_restarts = max_restarts
        self.extra_args = list(extra_args or [])
        self.epoch = 0  # bumped on every (re)start: registrations must be redone
        self.server_info: dict[str, Any] = {}
        self._lock = threading.RLock()
        self._holder: dict[str, Any] = {"client": None}
        self._starts = 0
        self._disabled = False  # permanently off (no binary, restarts used up)
        self._warned = False
        # Closes the server when the session is collected, and at interpreter exit.
        self._finalizer = weakref.finalize(self, _close_quietly, self._holder)

    # -- lifecycle --------------------------------------------------------

    @property
    def client(self) -> RpcClient | None:
        return self._holder["client"]

    def ensure(self) -> bool:
        """Start (or restart) the server if needed; False when running without Concord."""
        with self._lock:
            client = self.client
            if client is not None and client.alive():
                return True
            if client is not None:
                self._fail(ServerUnavailable(f"concord serve (pid {client.pid}) exited"))
            if self._disabled:
                return False
            return self._start()

    def _start(self) -> bool:
        if self._starts > self.max_restarts:
            self._disabled = True
            return False
        self._starts += 1
        binary = find_binary(self.binary)
        if binary is None:
            self._disabled = True
            named = self.binary or os.environ.get(ENV_BIN)
            where = (
                f"{named!r} is not an executable file"
                if named
                else f"no `concord` binary (set ${ENV_BIN}, install it next to "
                "the package, or put it on PATH)"
            )
            self._warn(where)
            return False
        try:
            client = RpcClient([binary, "serve", *self.extra_args], cwd=self.roots[0])
        except ServerUnavailable as exc:
            self._disabled = True
            self._warn(str(exc))
            return False
        params: dict[str, Any] = {
            "protocolVersion": PROTOCOL_VERSION,
            "clientInfo": {"name": CLIENT_NAME, "version": CLIENT_VERSION},
            "roots": self.roots,
            "watch": self.watch,
        }
        if self.policy is not None:
            params["policy"] = self.policy
        if self.locator is not None:
            params["locator"] = self.locator
        # Always sent, so the binding's default does not depend on the server's.
        params["placement"] = self.placement
        if self.cache_ttl is not None:
            params["cache"] = {"ttlSeconds": self.cache_ttl}
        try:
            result = client.call("initialize", params, timeout=self.init_timeout)
        except (ServerUnavailable, RpcError) as exc:
            client.kill()
            if isinstance(exc, RpcError):
                self._disabled = True  # a refusal will not change on retry
            self._warn(f"initialize failed: {exc}")
            return False
        self.server_info = result if isinstance(result, dict) else {}
        self._holder["client"] = client
        self.epoch += 1
        if self._starts > 1:
            log.info("concord: restarted concord serve (pid %d); re-registering reads", client.pid)
        return True

    def close(self) -> None:
        """Shut the server down (shutdown + exit). Safe to call twice."""
        with self._lock:
            self._disabled = True
            _close_quietly(self._holder)

    def _warn(self, why: str) -> None:
        if self._warned:
            log.debug("concord: %s", why)
            return
        self._warned = True
        log.warning(
            "%s: %s. The agent keeps running unchanged, but file contents it was "
            "shown may now be stale without notice.",
            WARNING_PREFIX,
            why,
        )

    def _fail(self, exc: BaseException) -> None:
        client = self.client
        self._holder["client"] = None
        if client is not None:
            client.kill()
        self._warn(f"concord serve stopped answering ({exc})")

    # -- calls ------------------------------------------------------------

    def _call(self, method: str, params: Any) -> Any:
        """Call the server; None when it is unavailable or refused this request."""
        with self._lock:
            if not self.ensure():
                return None
            client = self.client
            assert client is not None
            try:
                return client.call(method, params, timeout=self.timeout)
            except ServerUnavailable as exc:
                self._fail(exc)
                return None
            except RpcError as exc:
                # One request refused (outside the roots, binary file, ...):
                # the session is fine, this observation is just not tracked.
                log.debug("concord: %s refused: %s", method, exc)
                return None

    def observe(
        self, anchor: str, sources: list[Source], *, turn: int, kind: str = "snapshot"
    ) -> dict[str, Any] | None:
        params = {
            "agent": self.agent,
            "turn": turn,
            "anchor": anchor,
            "kind": kind,
            "sources": [s.to_wire() for s in sources],
        }
        return self._call("observe", params)

    def event(self, anchor: str, *, turn: int) -> dict[str, Any] | None:
        """Register an action result (a command run): acknowledged, never rewritten."""
        params = {
            "agent": self.agent,
            "turn": turn,
            "anchor": anchor,
            "kind": "event",
            "sources": [],  # an event links no source (docs/protocol.md: observe)
        }
        return self._call("observe", params)

    def source_changed(self, path: str, anchor: str | None = None) -> list[str] | None:
        """Report a write by the agent's own tool; `anchor` is that tool call's id
        (a tail erratum then points to the edit instead of repeating its text)."""
        params: dict[str, Any] = {"uri": path_to_uri(path), "agent": self.agent}
        if anchor:
            params["anchor"] = anchor
        result = self._call("sourceChanged", params)
        if isinstance(result, dict):
            return list(result.get("blocks") or [])
        return None

    @property
    def effective_placement(self) -> str:
        """The placement the server applies: what it echoed, else in place (an
        older server without cache-aware repair renders every view in place)."""
        caps = self.server_info.get("capabilities") or {}
        placement = caps.get("placement") if isinstance(caps, dict) else None
        return placement if placement in PLACEMENTS else "inplace"

    def sync(self, turn: int, full: bool = False, prefix_rebuilt: bool = False) -> SyncResult | None:
        """`prefix_rebuilt`: the runtime condensed or dropped messages since the last sync."""
        params: dict[str, Any] = {"agent": self.agent, "turn": turn}
        if full:
            params["full"] = True
        if prefix_rebuilt:
            params["prefixRebuilt"] = True
        result = self._call("sync", params)
        if not isinstance(result, dict):
            return None
        return SyncResult(
            blocks=[BlockView.from_wire(b) for b in result.get("blocks") or [] if isinstance(b, dict)],
            flushed=bool(result.get("flushed")),
            generation=int(result.get("generation") or 0),
        )

    def release(self, anchors: list[str]) -> list[str] | None:
        if not anchors:
            return []
        result = self._call("release", {"agent": self.agent, "anchors": anchors})
        if isinstance(result, dict):
            return list(result.get("released") or [])
        return None

    def stats(self) -> dict[str, Any] | None:
        result = self._call("stats", None)
        return result if isinstance(result, dict) else None
