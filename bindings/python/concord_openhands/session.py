"""One Concord session for one conversation: the SDK-free core of the binding.

It finds and launches `concord serve`, performs `initialize`, and offers the
protocol's calls in the binding's terms (paths, ranges, anchors).

Server lifetime: sessions with the same configuration (binary, roots, watch,
policy) share ONE `concord serve` per process, each under its own agent name;
a session that closes releases its blocks, and the last one out stops the
server. ConcordCondenser closes its session when the conversation closes
(condenser.py chains onto Agent.close()); garbage collection and interpreter
exit are the fallback.

Failures: if the binary is missing, every call returns None and ONE warning
lists where it was looked for. If the server dies or hangs, it is restarted
(bounded retries with backoff, as go-plugin restarts its plugins) and `epoch`
changes so each session re-registers what the model has been shown. When it
cannot be restarted, the agent carries on unchanged (pass-through) and says
so once.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import threading
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, get_args
from urllib.parse import unquote, urlparse

from . import wire
from .rpc import RpcClient, RpcError, ServerUnavailable

log = logging.getLogger("concord_openhands")

# The wire types and constants are generated from the Go protocol package (wire.py).
PROTOCOL_VERSION = wire.VERSION
UNSUPPORTED_VERSION = wire.CODE_UNSUPPORTED_PROTO  # initialize's answer to a protocol version the server does not speak


def version_mismatch(binary: str, supported: Any) -> str:
    """The message for a binary that speaks another protocol version than this binding."""
    return (f"{binary} speaks protocol {supported}, {CLIENT_NAME} {CLIENT_VERSION} needs "
            f"{PROTOCOL_VERSION}: use the concord binary that came with this package "
            f"(or unset ${ENV_BIN})")
CLIENT_NAME = "concord-openhands"
CLIENT_VERSION = "0.1.0"
ENV_BIN = "CONCORD_BIN"

WARNING_PREFIX = "concord: context repair unavailable"
# Seconds to wait before restart attempt k (1-based): 0.05, 0.2, 0.8, ...
RESTART_BACKOFF = 0.05


def binary_candidates(explicit: str | None = None) -> list[str]:
    """Every place `find_binary` looks, in order."""
    named = explicit or os.environ.get(ENV_BIN)
    if named:
        return [named]
    here = Path(__file__).resolve().parent
    out = [str(here / "bin" / "concord"), str(here / "concord")]
    for d in os.environ.get("PATH", "").split(os.pathsep):
        if d:
            out.append(os.path.join(d, "concord"))
    return out

# Where a repair of a message the model has already seen goes (docs/protocol.md,
# "Placement"). The binding's default is the server's: in place.
PLACEMENTS: tuple[str, ...] = get_args(wire.Placement)  # inplace, tail, auto
DEFAULT_PLACEMENT = "auto"


# What a prompt token costs when a call writes it to the provider's cache and
# when it reads it from there, in multiples of the plain input price
# (initialize's cache.price; docs/protocol.md, "Priced rewrites").
ENV_PRICE = "CONCORD_CACHE_PRICE"
PRICE_PRESETS: dict[str, tuple[float, float]] = {"anthropic": (1.25, 0.1), "openai": (1.0, 0.5)}
PRICE_OFF = "off"
_PRICE_WARNED: set[str] = set()  # each bad price (or price without auto) is said once


def parse_cache_price(value: Any) -> tuple[float, float] | None:
    """The (write, read) a cache price option names; None when it names none.

    Forms: None, "" or "off"; a preset ("anthropic" 1.25/0.1, "openai" 1/0.5);
    "W,R"; or a mapping {"write": W, "read": R}. Raises ValueError, saying what
    is wrong, for anything else or for numbers the server would refuse
    (it needs write > 0 and 0 <= read <= write).
    """
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("", PRICE_OFF):
            return None
        if text in PRICE_PRESETS:
            return PRICE_PRESETS[text]
        parts = text.split(",")
        if len(parts) != 2:
            raise ValueError(
                f"{value!r} is not {', '.join(map(repr, PRICE_PRESETS))}, {PRICE_OFF!r} or 'WRITE,READ'")
        try:
            write, read = float(parts[0]), float(parts[1])
        except ValueError:
            raise ValueError(f"{value!r}: WRITE,READ must be two numbers") from None
    elif isinstance(value, dict):
        if set(value) != {"write", "read"}:
            raise ValueError(f"{value!r} must have exactly the keys 'write' and 'read'")
        write, read = value["write"], value["read"]
        if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in (write, read)):
            raise ValueError(f"{value!r}: write and read must be numbers")
        write, read = float(write), float(read)
    else:
        raise ValueError(f"{value!r} is not a preset name, 'WRITE,READ' or a {{write, read}} mapping")
    if not (math.isfinite(write) and math.isfinite(read) and write > 0 and 0 <= read <= write):
        raise ValueError(
            f"write {write:g}, read {read:g}: must have write > 0 and 0 <= read <= write "
            "(multiples of the input price)")
    return (write, read)


def _warn_price_once(what: str) -> None:
    if what not in _PRICE_WARNED:
        _PRICE_WARNED.add(what)
        log.warning("concord: %s", what)


def resolve_cache_price(value: Any, placement: str = DEFAULT_PLACEMENT) -> tuple[float, float] | None:
    """The price to send: `value`, else $CONCORD_CACHE_PRICE when `value` is None.

    Never raises: a bad price is warned about (once) and left off, since a price
    the server refuses would fail `initialize` and leave the agent without
    Concord. A price is only sent under placement `auto` (the only one it
    changes); under another it is left off with a warning.
    """
    where = "cache_price"
    if value is None:
        value, where = os.environ.get(ENV_PRICE), f"${ENV_PRICE}"
    try:
        price = parse_cache_price(value)
    except ValueError as exc:
        _warn_price_once(f"ignoring {where}: {exc}; the cache price stays off")
        return None
    if price is not None and placement != "auto":
        _warn_price_once(f"ignoring {where}: a cache price applies to placement 'auto' only, "
                         f"not {placement!r}")
        return None
    return price


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
    uri: str | None = None  # a listing source (directory + query); None: the file's URI

    def to_wire(self) -> wire.Source:
        out: wire.Source = {"uri": self.uri or path_to_uri(self.path), "text": self.text}
        if self.range is not None:
            out["range"] = {"start": self.range[0], "end": self.range[1]}
        return out


@dataclass
class BlockView:
    """A block's model-visible state, as `sync` returns it."""

    block: str
    anchor: str
    status: str
    sources: list[wire.Source] = field(default_factory=list)
    notice: str = ""
    reason: str = ""
    # Under placement tail/auto: "tail" means leave the anchor's message as it
    # is and attach `erratum` after the newest message; "" means in place.
    placement: str = ""
    erratum: str = ""
    # A block registered by `recognize`: the result re-rendered in its tool's format.
    view: str | None = None

    @staticmethod
    def from_wire(raw: wire.BlockView) -> BlockView:
        return BlockView(
            block=str(raw.get("block", "")),
            anchor=str(raw.get("anchor", "")),
            status=str(raw.get("status", "")),
            sources=list(raw.get("sources") or []),
            notice=str(raw.get("notice") or ""),
            reason=str(raw.get("reason") or ""),
            placement=str(raw.get("placement") or ""),
            erratum=str(raw.get("erratum") or ""),
            view=raw["view"] if isinstance(raw.get("view"), str) else None,
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
                s.get("totalLines"),
            )
            for s in self.sources
        )
        return (self.status, srcs, self.notice, self.view)


@dataclass
class SyncResult:
    """One `sync` answer."""

    blocks: list[BlockView]
    flushed: bool = False  # drop every erratum note before applying the views
    generation: int = 0


class _Server:
    """One `concord serve` process shared by the sessions of one configuration."""

    def __init__(self, key: tuple[Any, ...], config: dict[str, Any]) -> None:
        self.key = key
        self.binary: str | None = config["binary"]
        self.roots: list[str] = config["roots"]
        self.watch: str = config["watch"]
        self.policy: wire.PolicyConfig | None = config["policy"]
        self.locator: wire.LocatorParams | None = config["locator"]
        self.init_timeout: float = config["init_timeout"]
        self.max_restarts: int = config["max_restarts"]
        self.extra_args: list[str] = config["extra_args"]
        self.placement: str = config["placement"]
        self.cache_ttl: float | None = config["cache_ttl"]
        self.cache_price: tuple[float, float] | None = config["cache_price"]
        self.lock = threading.RLock()
        self.client: RpcClient | None = None
        self.epoch = 0  # bumped on every (re)start: registrations must be redone
        self.server_info: dict[str, Any] = {}
        self.starts = 0
        self.restarts = 0
        self.last_error = ""
        self.disabled = False  # permanently off (no binary, restarts used up, closed)
        self.warned = False
        self.passthrough_said = False
        self.agents: dict[str, int] = {}  # agent name -> sessions using it

    # -- lifecycle --------------------------------------------------------

    def ensure(self) -> bool:
        """Start (or restart) the server if needed; False when running without Concord."""
        with self.lock:
            client = self.client
            if client is not None and client.alive():
                return True
            if client is not None:
                self.fail(ServerUnavailable(f"concord serve (pid {client.pid}) exited"))
            if self.disabled:
                return False
            while not self.disabled:
                if self.start():
                    return True
            return False

    def start(self) -> bool:
        """One start attempt; sets `disabled` when no more attempts are allowed."""
        if self.starts > self.max_restarts:
            what = "started" if self.epoch == 0 else "restarted"
            self.give_up(f"concord serve could not be {what} after {self.starts} attempts "
                         f"(last: {self.last_error})")
            return False
        if self.starts > 0:
            time.sleep(RESTART_BACKOFF * (4 ** (self.starts - 1)))
        self.starts += 1
        binary = find_binary(self.binary)
        if binary is None:
            named = self.binary or os.environ.get(ENV_BIN)
            if named:
                where = f"{named!r} is not an executable file"
            else:
                where = (
                    "no `concord` binary; looked at "
                    + ", ".join(binary_candidates())
                    + f" (set ${ENV_BIN}, install it next to the package, or put it on PATH)"
                )
            self.give_up(where)
            return False
        try:
            client = RpcClient([binary, "serve", *self.extra_args], cwd=self.roots[0])
        except ServerUnavailable as exc:
            self.give_up(str(exc))
            return False
        params: wire.InitializeParams = {
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
        cache: wire.CacheParams = {}
        if self.cache_ttl is not None:
            cache["ttlSeconds"] = self.cache_ttl
        if self.cache_price is not None:
            cache["price"] = {"write": self.cache_price[0], "read": self.cache_price[1]}
        if cache:
            params["cache"] = cache
        try:
            result = client.call(wire.METHOD_INITIALIZE, params, timeout=self.init_timeout)
        except (ServerUnavailable, RpcError) as exc:
            client.kill()
            self.last_error = f"initialize failed: {exc}"
            if isinstance(exc, RpcError) and exc.code == UNSUPPORTED_VERSION:
                self.last_error = version_mismatch(binary, (exc.data or {}).get("supported"))
            if isinstance(exc, RpcError):
                self.give_up(self.last_error)  # a refusal will not change on retry
            else:
                log.debug("concord: %s", self.last_error)
            return False
        got = result.get("protocolVersion") if isinstance(result, dict) else None
        if got != PROTOCOL_VERSION:
            client.kill()
            self.give_up(version_mismatch(binary, [got]))
            return False
        self.server_info = result if isinstance(result, dict) else {}
        self.client = client
        self.epoch += 1
        if self.starts > 1:
            self.restarts += 1
            log.info("concord: restarted concord serve (pid %d); re-registering what the model was shown",
                     client.pid)
        return True

    def close(self) -> None:
        with self.lock:
            self.disabled = True
            client, self.client = self.client, None
        if client is not None:
            try:
                client.close(timeout=2.0)
            except Exception:  # noqa: BLE001 (finalizers call this: never raise)
                pass

    def warn(self, why: str) -> None:
        if self.warned:
            log.debug("concord: %s", why)
            return
        self.warned = True
        log.warning("%s: %s", WARNING_PREFIX, why)

    def give_up(self, why: str) -> None:
        """No more attempts: pass-through from now on, said once."""
        self.disabled = True
        if self.passthrough_said:
            log.debug("concord: %s", why)
            return
        self.passthrough_said = self.warned = True
        log.warning(
            "%s: %s. The agent keeps running unchanged (pass-through), but file "
            "contents it was shown may now be stale without notice.",
            WARNING_PREFIX,
            why,
        )

    def fail(self, exc: BaseException) -> None:
        self.last_error = f"concord serve stopped answering ({exc})"
        client, self.client = self.client, None
        if client is not None:
            client.kill()
        self.warn(f"concord serve stopped answering ({exc}); restarting it")

    def call(self, method: str, params: Any, timeout: float) -> Any:
        """Call the server; None when it is unavailable or refused this request."""
        with self.lock:
            if not self.ensure():
                return None
            client = self.client
            assert client is not None
            try:
                return client.call(method, params, timeout=timeout)
            except ServerUnavailable as exc:
                self.fail(exc)
                return None
            except RpcError as exc:
                # One request refused (outside the roots, ...): the session is
                # fine, this observation is just not tracked.
                log.debug("concord: %s refused: %s", method, exc)
                return None


_SERVERS: dict[tuple[Any, ...], _Server] = {}
_SERVERS_LOCK = threading.Lock()


def _acquire(config: dict[str, Any], agent: str) -> tuple[_Server, str]:
    key = (
        config["binary"] or os.environ.get(ENV_BIN) or "",
        tuple(config["roots"]),
        config["watch"],
        json.dumps(config["policy"], sort_keys=True),
        json.dumps(config["locator"], sort_keys=True),
        config["placement"],  # initialize sets placement per server, not per agent
        config["cache_ttl"],
        config["cache_price"],
        tuple(config["extra_args"]),
    )
    with _SERVERS_LOCK:
        server = _SERVERS.get(key)
        if server is None:
            server = _SERVERS[key] = _Server(key, config)
        # Each session is its own agent on a shared server: sync returns
        # per-agent deltas, which two conversations must not consume for each other.
        name, n = agent, 1
        while name in server.agents:
            n += 1
            name = f"{agent}#{n}"
        server.agents[name] = 1
        return server, name


def _release_session(server: _Server, agent: str, anchors: set[str], timeout: float) -> None:
    """A session ended: drop its blocks; the last one out stops the server."""
    try:
        if anchors and server.client is not None and server.client.alive():
            try:
                server.client.call(wire.METHOD_RELEASE, {"agent": agent, "anchors": sorted(anchors)}, timeout=timeout)
            except (ServerUnavailable, RpcError):
                pass
        anchors.clear()
        with _SERVERS_LOCK:
            server.agents.pop(agent, None)
            last = not server.agents
            if last and _SERVERS.get(server.key) is server:
                del _SERVERS[server.key]
        if last:
            server.close()
    except Exception:  # noqa: BLE001 (finalizer: never raise)
        pass


class ConcordSession:
    """The binding's handle on Concord for one conversation (server started lazily)."""

    def __init__(
        self,
        roots: list[str],
        *,
        binary: str | None = None,
        agent: str = "main",
        watch: str = "auto",
        policy: wire.PolicyConfig | None = None,
        locator: wire.LocatorParams | None = None,
        placement: str = DEFAULT_PLACEMENT,
        cache_ttl: float | None = None,
        cache_price: Any = None,
        timeout: float = 5.0,
        init_timeout: float = 10.0,
        max_restarts: int = 3,
        extra_args: list[str] | None = None,
    ) -> None:
        if placement not in PLACEMENTS:
            raise ValueError(f"placement must be one of {', '.join(PLACEMENTS)}, not {placement!r}")
        if cache_ttl is not None and not cache_ttl > 0:
            raise ValueError(f"cache_ttl must be > 0 seconds, not {cache_ttl!r}")
        self.roots = [os.path.abspath(r) for r in roots]
        self.binary = binary
        self.placement = placement
        self.cache_ttl = cache_ttl
        # (write, read) or None; see resolve_cache_price (a bad one is off, not an error).
        self.cache_price = resolve_cache_price(cache_price, placement)
        self.timeout = timeout
        config = {
            "binary": binary,
            "roots": self.roots,
            "watch": watch,
            "policy": policy,
            "locator": locator,
            "placement": placement,
            "cache_ttl": cache_ttl,
            "cache_price": self.cache_price,
            "init_timeout": init_timeout,
            "max_restarts": max_restarts,
            "extra_args": list(extra_args or []),
        }
        self._server, self.agent = _acquire(config, agent)
        self._closed = False
        # Anchors with a live block: released when the session ends.
        self._anchors: set[str] = set()
        # Releases this session's blocks (and stops a server nobody uses) when
        # the session is closed or collected, and at interpreter exit.
        self._finalizer = weakref.finalize(
            self, _release_session, self._server, self.agent, self._anchors, timeout
        )

    # -- lifecycle --------------------------------------------------------

    @property
    def client(self) -> RpcClient | None:
        return self._server.client

    @property
    def epoch(self) -> int:
        return self._server.epoch

    @property
    def server_info(self) -> dict[str, Any]:
        return self._server.server_info

    @property
    def restarts(self) -> int:
        """How many times the server was restarted after dying or hanging."""
        return self._server.restarts

    @property
    def available(self) -> bool:
        return not self._closed and not self._server.disabled

    def ensure(self) -> bool:
        """Start (or restart) the server if needed; False when running without Concord."""
        if self._closed:
            return False
        return self._server.ensure()

    def close(self) -> None:
        """Release this session's blocks; stop the server if no session uses it. Safe twice."""
        self._closed = True
        self._finalizer()

    # -- calls ------------------------------------------------------------

    def _call(self, method: str, params: Any) -> Any:
        if self._closed:
            return None
        return self._server.call(method, params, self.timeout)

    def observe(
        self, anchor: str, sources: list[Source], *, turn: int, kind: wire.Kind = "snapshot"
    ) -> wire.ObserveResult | None:
        params: wire.ObserveParams = {
            "agent": self.agent,
            "turn": turn,
            "anchor": anchor,
            "kind": kind,
            "sources": [s.to_wire() for s in sources],
        }
        result = self._call(wire.METHOD_OBSERVE, params)
        if isinstance(result, dict) and result.get("block"):
            # Any block id is tracked, whatever its status (an invalid block
            # for a file deleted before registration: issue 10 bug 4).
            self._anchors.add(anchor)
        return result

    def recognize(self, anchor: str, call: wire.ToolCall, *, turn: int) -> wire.RecognizeResult | None:
        """Forward one finished tool call; the server decides what it showed,
        reports its writes and registers its block (docs/protocol.md, `recognize`)."""
        params: wire.RecognizeParams = {"agent": self.agent, "turn": turn, "anchor": anchor, "call": call}
        result = self._call(wire.METHOD_RECOGNIZE, params)
        if isinstance(result, dict) and result.get("block"):
            self._anchors.add(anchor)
        return result

    def source_changed(self, path: str, anchor: str | None = None) -> list[str] | None:
        """Report a write by the agent's own tool; `anchor` is that tool call's id
        (a tail erratum then points to the edit instead of repeating its text)."""
        params: wire.SourceChangedParams = {"uri": path_to_uri(path), "agent": self.agent}
        if anchor:
            params["anchor"] = anchor
        result = self._call(wire.METHOD_SOURCE_CHANGED, params)
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

    def sync(
        self, turn: int, full: bool = False, prefix_rebuilt: bool = False, prompt_chars: int = 0
    ) -> SyncResult | None:
        """`prefix_rebuilt`: the runtime condensed or dropped messages since the last sync.
        `prompt_chars`: the size of this call's messages before this sync's views
        and notes are applied (0: not reported); a priced `auto` needs it."""
        params: wire.SyncParams = {"agent": self.agent, "turn": turn}
        if full:
            params["full"] = True
        if prefix_rebuilt:
            params["prefixRebuilt"] = True
        if prompt_chars > 0:
            params["promptChars"] = int(prompt_chars)
        result = self._call(wire.METHOD_SYNC, params)
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
        result = self._call(wire.METHOD_RELEASE, {"agent": self.agent, "anchors": anchors})
        self._anchors.difference_update(anchors)
        if isinstance(result, dict):
            return list(result.get("released") or [])
        return None

    def forget_registrations(self) -> None:
        """The server restarted: nothing of this session is registered any more."""
        self._anchors.clear()

    def stats(self) -> wire.StatsResult | None:
        result = self._call(wire.METHOD_STATS, None)
        return result if isinstance(result, dict) else None
