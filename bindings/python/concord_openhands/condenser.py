"""The OpenHands SDK side: a condenser that keeps the model's file reads current.

    agent = Agent(llm=llm, tools=tools, condenser=ConcordCondenser(roots=[workspace]))

Before every model call it forwards each new tool result (`recognize`), releases results condensed
away, and applies what `sync` returns: a changed result is replaced (same ids) by the server's `show`
(the text it composed: the re-rendered read, a re-read notice, or both), or under tail/auto placement
an erratum follows the newest message (errata.py).
The event log is never modified; replacements are memoized so the prompt prefix stays byte-stable;
on any failure the view passes through (README: "How it works"). Import this module before resuming
a persisted conversation: the SDK resolves the condenser's `kind` while loading the agent.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import threading
from typing import Any, Literal

import httpx
from pydantic import Field, PrivateAttr, field_validator

from openhands.sdk.agent.base import AgentBase
from openhands.sdk.context.condenser.base import CondenserBase
from openhands.sdk.context.view import View
from openhands.sdk.conversation.impl.remote_conversation import RemoteConversation
from openhands.sdk.event import ActionEvent, LLMConvertibleEvent, MessageEvent, ObservationEvent
from openhands.sdk.event.condenser import Condensation, CondensationSummaryEvent
from openhands.sdk.llm import LLM, TextContent

from . import wire
from .errata import Notes, PrefixTracker, join_errata
from .session import DEFAULT_PLACEMENT, ENV_PRICE, BlockView, ConcordSession

log = logging.getLogger("concord_openhands")
# Counters for stats(): tool results seen; registered as a block; acknowledged as an event or query;
# files the agent's tools wrote; results re-rendered; results replaced by a notice; repairs placed at the tail;
# summaries registered as derived blocks (a condenser summarized tracked results); summaries shown corrected.
COUNTS = ("observations", "tracked", "events", "writes", "repaired", "notices", "errata", "summaries", "corrections")


class _State:
    """Per-conversation runtime state; never serialized with the agent."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.session: ConcordSession | None = None
        self.epoch = -1  # the session epoch our registrations belong to
        self.turn = 0
        self.warned = False
        self.counts = dict.fromkeys(COUNTS, 0)
        self.prefix = PrefixTracker()
        self.rebuilt = False  # the prompt was rebuilt since the last sync
        self.reset(-1)

    def reset(self, epoch: int) -> None:
        # A restarted server knows nothing of what was sent: resync in full (a flush: notes go).
        self.full, self.epoch = self.epoch != -1, epoch
        self.seen: set[str] = set()  # observation event ids already forwarded
        self.registered: set[str] = set()  # anchors with a live block
        self.views: dict[str, BlockView] = {}  # anchor -> latest view with a `show`
        self.summaries: set[str] = set()  # anchors (event ids) of summaries the server keeps as derived blocks
        self.cache: dict[str, tuple[str, LLMConvertibleEvent, int]] = {}  # event id -> (shown text, replacement, size)
        self.sizes: dict[str, int] = {}  # event id -> its size in the prompt (promptChars)
        self.notes = Notes()  # tail placement: sticky until a flush

    def __deepcopy__(self, memo: dict[int, Any]) -> _State:
        return _State()  # a copied agent is a new agent, with its own server


class ConcordCondenser(CondenserBase):
    """Replace stale file reads in the prompt with their repaired text. Put it first in a
    PipelineCondenser, so a summarising condenser after it summarises repaired text."""

    roots: list[str] = Field(default_factory=list, description="Workspace roots Concord may watch (absolute). Default: the current directory.")
    agent_name: str = Field(default="main", description="This agent's name in the Concord session.")
    binary: str | None = Field(default=None, description="Path to `concord`; default: $CONCORD_BIN, next to the package, PATH.")
    watch: str = Field(default="auto", description="auto | fsnotify | poll | hooks")
    policy: dict[str, Any] | None = Field(default=None, description="Concord policy (see docs/protocol.md).")
    placement: Literal["inplace", "tail", "auto"] = Field(default=DEFAULT_PLACEMENT, description=(
        "Where a repair of a tool result the model has already seen goes: `inplace` (rewritten), `tail` (kept "
        "byte-identical, an erratum follows the newest message: the prompt cache is kept) or `auto` (default: in "
        "place when that costs no cache, else tail)."))
    cache_ttl: float | None = Field(default=None, gt=0, description=(
        "Seconds the provider keeps the prompt cached (`cache.ttlSeconds`; under `auto`, deferred repairs go in "
        "place after this long without a model call). Default: the server's, 300."))
    cache_price: Any = Field(default=None, description=(
        "Prompt-cache prices (`cache.price`): `anthropic` (write 1.25, read 0.1), `openai` (1, 0.5), `WRITE,READ` "
        "or {write, read} in input prices; `off` for none. With it, `auto` also rewrites in place when that costs "
        f"less than a note. Default: ${ENV_PRICE}, else off. A value the server refuses is warned about and left off."))
    timeout: float = Field(default=wire.BINDING_REQUEST_TIMEOUT_MS / 1000, description="Seconds to wait for any one Concord call.")

    _state: _State = PrivateAttr(default_factory=_State)

    @field_validator("roots", mode="before")
    @classmethod
    def _one_root_is_a_list(cls, v: Any) -> Any:
        if isinstance(v, (str, os.PathLike)):
            return [os.fspath(v)]
        return [os.fspath(r) for r in v] if v is not None else []

    @property
    def session(self) -> ConcordSession:
        with self._state.lock:
            if self._state.session is None:
                self._state.session = ConcordSession(
                    self.roots or [os.getcwd()], binary=self.binary, agent=self.agent_name, watch=self.watch, policy=self.policy,
                    placement=self.placement, cache_ttl=self.cache_ttl, cache_price=self.cache_price, timeout=self.timeout,
                    # Never stop the agent over a root: the server refuses a bad one at start
                    # and the one pass-through warning carries its message.
                    check_roots=False)
            return self._state.session

    def close(self) -> None:
        """Release this conversation's blocks (`Conversation.close()` calls this through
        `Agent.close()`); the server stops when no conversation uses it."""
        st = self._state
        with st.lock:
            if st.session is not None:
                st.session.close()
            st.session = None
            st.reset(-1)

    def stats(self) -> dict[str, Any]:
        """What Concord did for this conversation; `available` False in pass-through; `server`
        the server's `stats` answer (None when unavailable)."""
        st = self._state
        with st.lock:
            s = st.session
            up = bool(s is not None and s.available)
            return {**st.counts, "live": len(st.registered), "available": up,
                    "restarts": s.restarts if s is not None else 0, "server": s.stats() if up else None}

    def condense(self, view: View, agent_llm: LLM | None = None) -> View | Condensation:  # noqa: ARG002
        st = self._state
        try:
            with st.lock:
                return self._condense(st, view)
        except Exception:  # noqa: BLE001 (fail open: the agent must keep running)
            log.log(logging.DEBUG if st.warned else logging.WARNING,
                    "concord: context repair failed; passing the prompt through unchanged", exc_info=True)
            st.warned = True
            return view

    def _condense(self, st: _State, view: View) -> View:
        session = self.session
        # Messages dropped or condensed since the last call: the cached prefix is gone.
        st.rebuilt = st.prefix.rebuilt([ev.id for ev in view.events]) or st.rebuilt
        for _ in range(wire.BINDING_MAX_RESTARTS + 1):  # a restart mid-way means re-registering everything
            if not session.ensure():
                return view
            if st.epoch != session.epoch:
                st.reset(session.epoch)
                session.forget_registrations()
            epoch = session.epoch
            turn = self._ingest(st, session, view)
            if session.epoch != epoch:
                continue
            result = session.sync(turn, full=st.full, prefix_rebuilt=self.placement != "inplace" and st.rebuilt,
                                  prompt_chars=self._prompt_chars(st, view))
            if session.epoch != epoch or result is None:
                continue
            st.full = st.rebuilt = False
            if result.flushed:
                st.notes.drop_all()
            tail = [b for b in result.blocks if b.at_tail]
            target = _note_target(view) if tail else None
            if target is None:
                tail = []  # nothing to attach a note to: all go in place
            st.counts["errata"] += len(tail)
            in_place = [b for b in result.blocks if not (b.at_tail and tail)]  # else: the message stays, see the note
            self._report(st, in_place, tail)
            for b in in_place:
                if b.status == "released":
                    st.registered.discard(b.anchor)
                if b.show is None:  # the original output stands (valid again, released)
                    st.views.pop(b.anchor, None)
                else:
                    st.views[b.anchor] = b
            if target is not None:
                st.notes.attach(target, join_errata(b.erratum for b in tail))
            return self._rewrite(st, view)
        return view

    def _ingest(self, st: _State, session: ConcordSession, view: View) -> int:
        """Forward what is new in the view; return the turn for `sync`."""
        actions: dict[str, ActionEvent] = {}
        responses: set[str] = set()
        present: set[str] = set()
        summaries: list[CondensationSummaryEvent] = []
        root = (self.roots or [os.getcwd()])[0]
        for ev in view.events:
            if isinstance(ev, ActionEvent):
                actions[ev.id] = ev
                responses.add(ev.llm_response_id)
            if isinstance(ev, CondensationSummaryEvent):
                present.add(ev.id)
                if ev.id not in st.seen:
                    st.seen.add(ev.id)
                    summaries.append(ev)
                continue
            if not isinstance(ev, ObservationEvent):
                continue
            present.add(ev.tool_call_id)
            if ev.id in st.seen:
                continue
            st.seen.add(ev.id)
            st.counts["observations"] += 1
            action_ev = actions.get(ev.action_id)
            if action_ev is None:
                continue  # condensed away: what it asked for (a range?) is unknown
            self._forward(st, session, ev, _arguments(action_ev), len(responses), root)
        st.turn = max(st.turn + 1, len(responses) + 1)
        gone = sorted(st.registered - present)
        if summaries and gone:
            gone = self._compacted(st, session, summaries[-1], gone)
        if gone:
            session.release(gone)
            st.registered.difference_update(gone)
            for anchor in gone:
                st.views.pop(anchor, None)
        return st.turn

    def _compacted(self, st: _State, session: ConcordSession, summary: CondensationSummaryEvent,
                   gone: list[str]) -> list[str]:
        """A condenser summarized tracked results into `summary` (the SDK's `Condensation`: its summary
        event, by the id the SDK derives from it, and the forgotten events, which are exactly the tracked
        results that left the view with it). The server keeps the summary as a derived block and releases
        the results itself; returns what is left to release (all of it when the server did not take it)."""
        result = session.compacted(summary.id, summary.summary, gone, turn=st.turn)
        if result is None:
            return gone
        st.registered.difference_update(gone)
        st.summaries.difference_update(gone)  # an earlier summary summarized again
        for anchor in gone:
            st.views.pop(anchor, None)
        if result.get("derived"):
            st.registered.add(summary.id)
            st.summaries.add(summary.id)
            st.counts["summaries"] += 1
        return []

    def _forward(self, st: _State, session: ConcordSession, ev: ObservationEvent,
                 args: dict[str, Any], turn: int, root: str) -> None:
        result = session.recognize(ev.tool_call_id, tool_call(ev, args, root), turn=turn)
        if not isinstance(result, dict):
            return
        st.counts["writes"] += len(result.get("writes") or [])
        # A command that showed nothing tracked (not a think, a finish, ...).
        if result.get("kind") == "event" and str(result.get("format")).startswith("terminal"):
            st.counts["events"] += 1
        if result.get("block"):  # any status: a file gone before registration is an invalid block (bug 4)
            st.registered.add(ev.tool_call_id)
            st.counts["tracked"] += 1

    def _report(self, st: _State, blocks: list[BlockView], tail: list[BlockView]) -> None:
        """One INFO line per sync that changed what the model sees."""
        reads = [b for b in blocks if b.anchor not in st.summaries]
        repaired = sum(1 for b in reads if b.status == "patched")
        notices = sum(1 for b in reads if b.status in ("invalid", "superseded", "stale"))
        # A summary whose sources changed: its text with a correction in place, or an erratum about it.
        corrections = sum(1 for b in blocks if b.anchor in st.summaries and b.show is not None) + sum(
            1 for b in tail if b.anchor in st.summaries and b.erratum)
        st.counts["repaired"] += repaired
        st.counts["notices"] += notices
        st.counts["corrections"] += corrections
        if repaired or notices:
            log.info("concord: %d %s repaired, %d re-read %s", repaired, "read" if repaired == 1 else "reads",
                     notices, "notice" if notices == 1 else "notices")
        if corrections:
            log.info("concord: %d %s corrected", corrections, "summary" if corrections == 1 else "summaries")

    def _prompt_chars(self, st: _State, view: View) -> int:
        """`sync`'s promptChars: the view's messages as the model was last shown them (replacements
        and notes before this sync); each size computed once, so O(view). 0 if not measurable."""
        try:
            sizes: dict[str, int] = {}
            total = 0
            for ev in view.events:
                n = sizes[ev.id] = st.sizes.get(ev.id) or _message_chars(ev)
                bv = _view_of(st, ev)
                if bv is not None and self._replacement(st, ev, bv) is not None:
                    n = st.cache[ev.id][2]
                total += n + sum(len(note) for note in st.notes.of(ev.id))
            st.sizes = sizes
            return total
        except Exception:  # noqa: BLE001 (a size is a hint: never fail the call for it)
            log.debug("concord: could not measure the prompt", exc_info=True)
            return 0

    def _rewrite(self, st: _State, view: View) -> View:
        if not st.views and not st.notes:
            st.cache.clear()
            return view
        present = {ev.id for ev in view.events}
        for ev_id in [k for k in st.cache if k not in present]:
            del st.cache[ev_id]
        out, changed = [], False
        for ev in view.events:
            new = ev
            bv = _view_of(st, ev)
            if bv is not None:
                new = self._replacement(st, ev, bv) or ev
            notes = st.notes.of(ev.id)
            if notes and isinstance(new, (ObservationEvent, MessageEvent)):
                # Each note is its own text part after the content: the same bytes on every later call.
                extra = [TextContent(text=n) for n in notes]
                new = new.model_copy(update={"extended_content": list(new.extended_content) + extra})
            changed = changed or new is not ev
            out.append(new)
        return view.model_copy(update={"events": out}) if changed else view

    def _replacement(self, st: _State, ev: LLMConvertibleEvent, bv: BlockView) -> LLMConvertibleEvent | None:
        text, cached = bv.show, st.cache.get(ev.id)
        if cached is not None and cached[0] == text:
            return cached[1]
        if text is None:
            st.cache.pop(ev.id, None)
            return None
        if isinstance(ev, CondensationSummaryEvent):
            # The summary with the server's correction after it (its text byte-identical, then the correction).
            new: LLMConvertibleEvent = ev.model_copy(update={"summary": text})
        else:
            assert isinstance(ev, ObservationEvent)
            obs = ev.observation.model_copy(update={"content": [TextContent(text=text)], "is_error": False})
            new = ev.model_copy(update={"observation": obs})
        st.cache[ev.id] = (text, new, _message_chars(new))
        return new


def _view_of(st: _State, ev: LLMConvertibleEvent) -> BlockView | None:
    """The latest in-place view of a message Concord tracks: a tool result by its call id, a
    summary by its event id."""
    if isinstance(ev, ObservationEvent):
        return st.views.get(ev.tool_call_id)
    if isinstance(ev, CondensationSummaryEvent) and ev.id in st.summaries:
        return st.views.get(ev.id)
    return None


def _arguments(action_ev: ActionEvent) -> dict[str, Any]:
    """The call's arguments as the model sent them (the action's fields if unparsable)."""
    try:
        args = json.loads(action_ev.tool_call.arguments)
        if isinstance(args, dict):
            return args
    except (AttributeError, TypeError, ValueError):
        pass
    action = action_ev.action
    return action.model_dump(mode="json", exclude={"kind"}) if action is not None else {}


def tool_call(ev: ObservationEvent, args: dict[str, Any], root: str) -> wire.ToolCall:
    """One tool result as `recognize` takes it: the runtime's view of the call, no format knowledge.
    Relative paths resolve against the working directory the runtime reported, else the workspace."""
    obs, meta = ev.observation, getattr(ev.observation, "metadata", None)
    call: wire.ToolCall = {"runtime": "openhands", "tool": ev.tool_name, "arguments": args, "output": obs.text,
                           "error": bool(obs.is_error), "cwd": str(getattr(meta, "working_dir", None) or root)}
    exit_code = next((c for c in (getattr(obs, "exit_code", None), getattr(meta, "exit_code", None)) if c is not None), None)
    if isinstance(exit_code, int) and not getattr(obs, "timeout", False):
        call["exitCode"] = exit_code
    # "[Previous command outputs are truncated ...]" (the start is lost), or a read that stopped early.
    if getattr(meta, "prefix", None) or getattr(obs, "is_truncated", False):
        call["truncated"] = True
    return call


def _message_chars(ev: Any) -> int:
    """The characters an event puts in the prompt: its LLM message's text parts and tool call
    (images and reasoning count nothing: the SDK sends reasoning back to some models only)."""
    msg = ev.to_llm_message()
    return (sum(len(c.text) for c in msg.content if isinstance(c, TextContent))
            + sum(len(call.name) + len(call.arguments) for call in msg.tool_calls or ()))


def _note_target(view: View) -> str | None:
    """The newest tool result or message: a note goes in its `extended_content` (a newer error
    or rejection has none and is passed over)."""
    return next((ev.id for ev in reversed(view.events) if isinstance(ev, (ObservationEvent, MessageEvent))), None)


# No close hook for a condenser, but `LocalConversation.close()` calls `agent.close()` (a no-op):
# chained onto it, `concord serve` stops with the conversation, not at garbage collection.
def _close_concord(condenser: Any) -> None:
    if isinstance(condenser, ConcordCondenser):
        condenser.close()
    for inner in getattr(condenser, "condensers", None) or ():  # PipelineCondenser
        _close_concord(inner)


def _chain_agent_close(close: Any) -> Any:
    @functools.wraps(close)
    def agent_close(self: AgentBase) -> None:
        try:
            close(self)
        finally:
            _close_concord(getattr(self, "condenser", None))

    agent_close.concord = True  # type: ignore[attr-defined]
    return agent_close


if not getattr(AgentBase.close, "concord", False):
    AgentBase.close = _chain_agent_close(AgentBase.close)  # type: ignore[method-assign]


SERVER_HINT = (
    "the agent server at {host} has not imported concord_openhands, so it cannot build an agent with "
    "ConcordCondenser. Start it with `--import-modules concord_openhands`, with the package on its path "
    "(`--extra-python-path DIR` or OH_EXTRA_PYTHON_PATH=DIR) and the concord binary next to the package or in "
    "$CONCORD_BIN; or run the image of bindings/python/docker (README: 'Using it with OpenHands')")


class ConcordNotOnServer(httpx.HTTPStatusError):
    """The agent server refused ConcordCondenser (an HTTPStatusError, as before)."""


def _explain_refusal(init: Any) -> Any:
    # The server's "Unknown kind 'ConcordCondenser'" reaches the caller as a bare 422: say what to do.
    @functools.wraps(init)
    def remote_init(self: RemoteConversation, agent: Any, *args: Any, **kwargs: Any) -> None:
        try:
            init(self, agent, *args, **kwargs)
        except httpx.HTTPStatusError as exc:
            body = exc.response.text
            if "Unknown kind" not in body or "ConcordCondenser" not in body:
                raise
            host = getattr(kwargs.get("workspace"), "host", None) or str(exc.request.url)
            raise ConcordNotOnServer(SERVER_HINT.format(host=host), request=exc.request, response=exc.response) from exc

    remote_init.concord = True  # type: ignore[attr-defined]
    return remote_init


if not getattr(RemoteConversation.__init__, "concord", False):
    RemoteConversation.__init__ = _explain_refusal(RemoteConversation.__init__)  # type: ignore[method-assign]
