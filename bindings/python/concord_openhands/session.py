"""One Concord session for one conversation: the SDK-free core of the binding.

Sessions with the same configuration share ONE `concord serve` per process,
each under its own agent name; a closed (or collected) session releases its
blocks and the last one out stops the server. A missing binary makes every
call return None after ONE warning naming where it looked; a dead or hung
server is restarted (wire.BINDING_MAX_RESTARTS times, with backoff) and
`epoch` changes so each session re-registers what the model was shown; past
that, pass-through (docs/protocol.md, "Binding lifecycle").
"""

from __future__ import annotations

import functools
import json
import logging
import os
import threading
import time
import weakref
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args

from . import wire
from .rpc import RpcClient, RpcError, ServerUnavailable

log = logging.getLogger("concord_openhands")

PROTOCOL_VERSION = wire.VERSION
CLIENT_NAME, CLIENT_VERSION, ENV_BIN = "concord-openhands", "0.1.0", "CONCORD_BIN"
WARNING_PREFIX = "concord: context repair unavailable"
# Where a repair of a message the model has seen goes (docs/protocol.md, "Placement").
PLACEMENTS: tuple[str, ...] = get_args(wire.Placement)
DEFAULT_PLACEMENT = "auto"
# A prompt token's cost written to / read from the provider's cache, in input prices (initialize's cache.price).
ENV_PRICE = "CONCORD_CACHE_PRICE"


def version_mismatch(binary: str, supported: Any) -> str:
    return (f"{binary} speaks protocol {supported}, {CLIENT_NAME} {CLIENT_VERSION} needs {PROTOCOL_VERSION}: "
            f"use the concord binary that came with this package (or unset ${ENV_BIN})")


def binary_candidates(explicit: str | None = None) -> list[str]:
    """Every place `find_binary` looks, in order: explicit or $CONCORD_BIN, next to the package, PATH."""
    named = explicit or os.environ.get(ENV_BIN)
    if named:
        return [named]
    here = Path(__file__).resolve().parent
    return [str(here / "bin" / "concord"), str(here / "concord")] + [
        os.path.join(d, "concord") for d in os.environ.get("PATH", "").split(os.pathsep) if d]


def find_binary(explicit: str | None = None) -> str | None:
    """The first executable candidate; a named but unusable binary is None, never another one."""
    return next((c for c in binary_candidates(explicit) if os.path.isfile(c) and os.access(c, os.X_OK)), None)


@functools.cache  # each bad price is said once
def _warn_price_once(what: str) -> None:
    log.warning("concord: %s", what)


def cache_price_option(value: Any, placement: str = DEFAULT_PLACEMENT) -> Any:
    """`value`, else $CONCORD_CACHE_PRICE, as initialize's cache.price (the server checks it); None
    for none: unset, "" or "off", or under a placement other than auto (warned about once)."""
    where = "cache_price"
    if value is None:
        value, where = os.environ.get(ENV_PRICE), f"${ENV_PRICE}"
    if value is None or isinstance(value, str) and value.strip().lower() in ("", "off"):
        return None
    if placement != "auto":
        _warn_price_once(f"ignoring {where}: a cache price applies to placement 'auto' only, not {placement!r}")
        return None
    try:
        json.dumps(value, allow_nan=False)  # what JSON cannot carry would fail initialize as a whole
    except (TypeError, ValueError) as exc:
        _warn_price_once(f"ignoring {where}: {exc}; the cache price stays off")
        return None
    return value


def path_to_uri(path: str) -> str:
    return Path(os.path.abspath(path)).as_uri()


@dataclass
class Source:
    """One source link of an observation; range None is the whole file, uri a listing source."""

    path: str
    text: str
    range: tuple[int, int] | None = None
    uri: str | None = None

    def to_wire(self) -> wire.Source:
        out: wire.Source = {"uri": self.uri or path_to_uri(self.path), "text": self.text}
        if self.range is not None:
            out["range"] = {"start": self.range[0], "end": self.range[1]}
        return out


@dataclass
class BlockView:
    """A block's model-visible state, as `sync` returns it (placement "tail": keep the message, attach erratum)."""

    block: str
    anchor: str
    status: str
    sources: list[wire.Source] = field(default_factory=list)
    notice: str = ""
    reason: str = ""
    placement: str = ""
    erratum: str = ""
    view: str | None = None  # recognized blocks: the result re-rendered in its tool's format
    show: str | None = None  # in place: the text to show instead of the result (None: the original stands)

    @staticmethod
    def from_wire(raw: wire.BlockView) -> BlockView:
        s = {k: str(raw.get(k) or "") for k in ("block", "anchor", "status", "notice", "reason", "placement", "erratum")}
        view, show = raw.get("view"), raw.get("show")
        return BlockView(**s, sources=list(raw.get("sources") or []), view=view if isinstance(view, str) else None,
                         show=show if isinstance(show, str) else None)

    @property
    def at_tail(self) -> bool:
        return self.placement == "tail"


@dataclass
class SyncResult:
    blocks: list[BlockView]
    flushed: bool = False  # drop every erratum note before applying the views
    generation: int = 0


class _Server:
    """One `concord serve` process shared by the sessions of one configuration."""

    def __init__(self, key: tuple[Any, ...], config: dict[str, Any]) -> None:
        self.key, self.cfg = key, config
        self.lock = threading.RLock()
        self.client: RpcClient | None = None
        self.epoch = 0  # bumped on every (re)start: registrations must be redone
        self.server_info: dict[str, Any] = {}
        self.starts = self.restarts = 0
        self.last_error = ""
        self.disabled = self.warned = self.passthrough_said = False  # disabled: no binary, restarts used up, closed
        self.agents: dict[str, int] = {}  # agent name -> sessions using it

    def ensure(self) -> bool:
        """Start (or restart) the server if needed; False when running without Concord."""
        with self.lock:
            if self.client is not None and self.client.alive():
                return True
            if self.client is not None:
                self.fail(ServerUnavailable(f"concord serve (pid {self.client.pid}) exited"))
            while not self.disabled:
                if self.start():
                    return True
            return False

    def start(self) -> bool:
        """One start attempt; sets `disabled` when no more are allowed."""
        cfg = self.cfg
        if self.starts > cfg["max_restarts"]:
            what = "started" if self.epoch == 0 else "restarted"
            return self.give_up(f"concord serve could not be {what} after {self.starts} attempts (last: {self.last_error})")
        if self.starts:  # restart k = starts waits BINDING_BACKOFF_MS * 4**(k-1) ms
            time.sleep(wire.BINDING_BACKOFF_MS * 4 ** (self.starts - 1) / 1000)
        self.starts += 1
        binary = find_binary(cfg["binary"])
        if binary is None:
            named = cfg["binary"] or os.environ.get(ENV_BIN)
            return self.give_up(f"{named!r} is not an executable file" if named else (
                "no `concord` binary; looked at " + ", ".join(binary_candidates())
                + f" (set ${ENV_BIN}, install it next to the package, or put it on PATH)"))
        try:
            # No cwd: the roots go absolute in initialize, and a root that is missing then gets
            # the server's own answer (`root "...": file does not exist`), not Popen's error on it.
            client = RpcClient([binary, "serve", "--framing=newline", *cfg["extra_args"]])
        except ServerUnavailable as exc:
            return self.give_up(str(exc))
        params: wire.InitializeParams = {
            "protocolVersion": PROTOCOL_VERSION, "clientInfo": {"name": CLIENT_NAME, "version": CLIENT_VERSION},
            "roots": cfg["roots"], "watch": cfg["watch"], "placement": cfg["placement"]}  # placement always sent
        params.update({k: cfg[k] for k in ("policy", "locator") if cfg[k] is not None})  # type: ignore[typeddict-item]
        cache = {k: v for k, v in (("ttlSeconds", cfg["cache_ttl"]), ("price", cfg["cache_price"])) if v is not None}
        if cache:
            params["cache"] = cache  # type: ignore[typeddict-item]
        try:
            result = client.call(wire.METHOD_INITIALIZE, params, timeout=cfg["init_timeout"])
        except (ServerUnavailable, RpcError) as exc:
            client.kill()
            if isinstance(exc, RpcError) and str((exc.data or {}).get("field", "")).startswith("cache.price"):
                # A bad price must not cost the session: say why once and start again without it.
                _warn_price_once(
                    f"ignoring cache_price {cfg['cache_price']!r}: {exc.message}; the cache price stays off")
                cfg["cache_price"] = None
                self.starts -= 1  # not a failed start
                return False
            self.last_error = f"initialize failed: {exc}"
            if isinstance(exc, RpcError) and exc.code == wire.CODE_UNSUPPORTED_PROTO:
                self.last_error = version_mismatch(binary, (exc.data or {}).get("supported"))
            if isinstance(exc, RpcError):
                return self.give_up(self.last_error)  # a refusal will not change on retry
            log.debug("concord: %s", self.last_error)
            return False
        got = result.get("protocolVersion") if isinstance(result, dict) else None
        if got != PROTOCOL_VERSION:
            client.kill()
            return self.give_up(version_mismatch(binary, [got]))
        self.server_info, self.client = result, client
        self.epoch += 1
        if self.starts > 1:
            self.restarts += 1
            log.info("concord: restarted concord serve (pid %d); re-registering what the model was shown", client.pid)
        return True

    def close(self) -> None:
        with self.lock:
            self.disabled = True
            client, self.client = self.client, None
        with suppress(Exception):  # finalizers call this: never raise
            if client is not None:
                client.close(timeout=2.0)

    def give_up(self, why: str) -> bool:
        """No more attempts: pass-through from now on, said once. False, for `start`."""
        self.disabled = True
        log.log(logging.DEBUG if self.passthrough_said else logging.WARNING, "%s: %s. The agent keeps running "
                "unchanged (pass-through), but file contents it was shown may now be stale without notice.",
                WARNING_PREFIX, why)
        self.passthrough_said = self.warned = True
        return False

    def fail(self, exc: BaseException) -> None:
        self.last_error = f"concord serve stopped answering ({exc})"
        client, self.client = self.client, None
        if client is not None:
            client.kill()
        log.log(logging.DEBUG if self.warned else logging.WARNING, "%s: %s; restarting it",
                WARNING_PREFIX, self.last_error)
        self.warned = True

    def call(self, method: str, params: Any, timeout: float) -> Any:
        """Call the server; None when it is unavailable or refused this request."""
        with self.lock:
            if not self.ensure():
                return None
            assert self.client is not None
            try:
                return self.client.call(method, params, timeout=timeout)
            except ServerUnavailable as exc:
                self.fail(exc)
            except RpcError as exc:  # one request refused (outside the roots, ...): this one is not tracked
                log.debug("concord: %s refused: %s", method, exc)
            return None


_SERVERS: dict[tuple[Any, ...], _Server] = {}
_SERVERS_LOCK = threading.Lock()


def _acquire(config: dict[str, Any], agent: str) -> tuple[_Server, str]:
    key = (config["binary"] or os.environ.get(ENV_BIN) or "", tuple(config["roots"]), config["watch"],
           json.dumps(config["policy"], sort_keys=True), json.dumps(config["locator"], sort_keys=True),
           config["placement"], config["cache_ttl"], json.dumps(config["cache_price"], sort_keys=True),
           tuple(config["extra_args"]))
    with _SERVERS_LOCK:
        server = _SERVERS.get(key)
        if server is None:
            server = _SERVERS[key] = _Server(key, config)
        # Each session is its own agent: sync returns per-agent deltas two conversations must not share.
        name, n = agent, 1
        while name in server.agents:
            n += 1
            name = f"{agent}#{n}"
        server.agents[name] = 1
        return server, name


def _release_session(server: _Server, agent: str, anchors: set[str], timeout: float) -> None:
    """A session ended: drop its blocks; the last one out stops the server."""
    with suppress(Exception):  # a finalizer: never raise
        if anchors and server.client is not None and server.client.alive():
            with suppress(ServerUnavailable, RpcError):
                server.client.call(wire.METHOD_RELEASE, {"agent": agent, "anchors": sorted(anchors)}, timeout=timeout)
        anchors.clear()
        with _SERVERS_LOCK:
            server.agents.pop(agent, None)
            last = not server.agents
            if last and _SERVERS.get(server.key) is server:
                del _SERVERS[server.key]
        if last:
            server.close()


class ConcordSession:
    """The binding's handle on Concord for one conversation (server started lazily)."""

    def __init__(self, roots: list[str], *, binary: str | None = None, agent: str = "main", watch: str = "auto",
                 policy: wire.PolicyConfig | None = None, locator: wire.LocatorParams | None = None,
                 placement: str = DEFAULT_PLACEMENT, cache_ttl: float | None = None, cache_price: Any = None,
                 timeout: float = wire.BINDING_REQUEST_TIMEOUT_MS / 1000,
                 init_timeout: float = wire.BINDING_START_TIMEOUT_MS / 1000, max_restarts: int = wire.BINDING_MAX_RESTARTS,
                 extra_args: list[str] | None = None, check_roots: bool = True) -> None:
        """`check_roots`: refuse a root that is not a directory here (ValueError); off, the
        server refuses it at start and the session passes through with its message, said once."""
        if check_roots:
            for r in roots:
                if not os.path.isdir(r):
                    what = "is not a directory" if os.path.exists(r) else "does not exist"
                    raise ValueError(f"root {os.fspath(r)!r} {what} (roots are the directories Concord "
                                     "keeps track of, as paths on the machine where the agent runs)")
        if placement not in PLACEMENTS:
            raise ValueError(f"placement must be one of {', '.join(PLACEMENTS)}, not {placement!r}")
        if cache_ttl is not None and not cache_ttl > 0:
            raise ValueError(f"cache_ttl must be > 0 seconds, not {cache_ttl!r}")
        self.roots = [os.path.abspath(r) for r in roots]
        self.binary, self.placement, self.cache_ttl, self.timeout = binary, placement, cache_ttl, timeout
        self.cache_price = cache_price_option(cache_price, placement)  # as given; the server checks it
        config = {"binary": binary, "roots": self.roots, "watch": watch, "policy": policy, "locator": locator,
                  "placement": placement, "cache_ttl": cache_ttl, "cache_price": self.cache_price,
                  "init_timeout": init_timeout, "max_restarts": max_restarts, "extra_args": list(extra_args or [])}
        self._server, self.agent = _acquire(config, agent)
        self._closed = False
        self._anchors: set[str] = set()  # anchors with a live block, released when the session ends
        self._finalizer = weakref.finalize(self, _release_session, self._server, self.agent, self._anchors, timeout)

    client = property(lambda self: self._server.client)
    epoch = property(lambda self: self._server.epoch)
    server_info = property(lambda self: self._server.server_info)
    restarts = property(lambda self: self._server.restarts, doc="Restarts after the server died or hung.")
    available = property(lambda self: not self._closed and not self._server.disabled)

    def ensure(self) -> bool:
        """Start (or restart) the server if needed; False when running without Concord."""
        return not self._closed and self._server.ensure()

    def close(self) -> None:
        """Release this session's blocks; stop the server if no session uses it. Safe twice."""
        self._closed = True
        self._finalizer()

    def _call(self, method: str, params: Any, anchor: str | None = None) -> Any:
        result = None if self._closed else self._server.call(method, params, self.timeout)
        if anchor and isinstance(result, dict) and result.get("block"):
            self._anchors.add(anchor)  # any block, whatever its status (issue 10 bug 4)
        return result

    def observe(self, anchor: str, sources: list[Source], *, turn: int,
                kind: wire.Kind = "snapshot") -> wire.ObserveResult | None:
        params: wire.ObserveParams = {"agent": self.agent, "turn": turn, "anchor": anchor, "kind": kind,
                                      "sources": [s.to_wire() for s in sources]}
        return self._call(wire.METHOD_OBSERVE, params, anchor)

    def recognize(self, anchor: str, call: wire.ToolCall, *, turn: int) -> wire.RecognizeResult | None:
        """Forward one finished tool call: the server decides what it showed, reports its writes
        and registers its block (docs/protocol.md, `recognize`)."""
        params: wire.RecognizeParams = {"agent": self.agent, "turn": turn, "anchor": anchor, "call": call}
        return self._call(wire.METHOD_RECOGNIZE, params, anchor)

    def source_changed(self, path: str, anchor: str | None = None) -> list[str] | None:
        """Report a write by the agent's own tool; `anchor` (the call's id) lets an erratum point to it."""
        params: wire.SourceChangedParams = {"uri": path_to_uri(path), "agent": self.agent}
        if anchor:
            params["anchor"] = anchor
        result = self._call(wire.METHOD_SOURCE_CHANGED, params)
        return list(result.get("blocks") or []) if isinstance(result, dict) else None

    def sync(self, turn: int, full: bool = False, prefix_rebuilt: bool = False, prompt_chars: int = 0) -> SyncResult | None:
        """`prefix_rebuilt`: messages were condensed or dropped since the last sync; `prompt_chars`: this
        call's size before this sync's views and notes (0: not reported; a priced `auto` needs it)."""
        params: wire.SyncParams = {"agent": self.agent, "turn": turn}
        for k, v in (("full", full), ("prefixRebuilt", prefix_rebuilt), ("promptChars", max(0, int(prompt_chars)))):
            if v:
                params[k] = v  # type: ignore[literal-required]
        result = self._call(wire.METHOD_SYNC, params)
        if not isinstance(result, dict):
            return None
        return SyncResult([BlockView.from_wire(b) for b in result.get("blocks") or [] if isinstance(b, dict)],
                          bool(result.get("flushed")), int(result.get("generation") or 0))

    def compacted(self, anchor: str, text: str, replaced: list[str], *, turn: int = 0) -> wire.CompactedResult | None:
        """The runtime compacted: the message `anchor` (its text as the model is shown it) summarizes the
        results `replaced`. The server keeps the summary as a derived block (corrected when a source it
        restates changes) and releases the replaced blocks itself. None: not done (a server without
        `compacted`, or one that refused it); the caller then releases `replaced` as before."""
        params: wire.CompactedParams = {"agent": self.agent, "anchor": anchor, "text": text, "replaced": list(replaced)}
        if turn:
            params["turn"] = turn
        result = self._call(wire.METHOD_COMPACTED, params)
        if not isinstance(result, dict):
            return None
        self._anchors.difference_update(replaced)
        if result.get("derived"):
            self._anchors.add(anchor)  # released with the session, as a tool result is
        return result

    def release(self, anchors: list[str]) -> list[str] | None:
        if not anchors:
            return []
        result = self._call(wire.METHOD_RELEASE, {"agent": self.agent, "anchors": anchors})
        self._anchors.difference_update(anchors)
        return list(result.get("released") or []) if isinstance(result, dict) else None

    def forget_registrations(self) -> None:
        self._anchors.clear()  # the server restarted: nothing of this session is registered

    def stats(self) -> wire.StatsResult | None:
        result = self._call(wire.METHOD_STATS, None)
        return result if isinstance(result, dict) else None
