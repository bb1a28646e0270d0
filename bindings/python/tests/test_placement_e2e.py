"""Cache-aware repair in the real SDK: placement `tail` and `auto`.

The fake model captures every chat-completions request. Each scenario shows
(a) the old tool message byte-identical across calls, (b) the erratum present
after the change, exactly as the server wrote it, and (c) an unchanged prefix:
every message of request N is byte-identical in request N+1, which only
appends messages (except across a flush, which the runtime asked for by
condensing).
"""

from __future__ import annotations

import json
import os
import sys

import pytest

if sys.version_info < (3, 12):
    pytest.skip("the OpenHands SDK needs Python >= 3.12", allow_module_level=True)

from openhands.sdk import Agent, Conversation, Tool  # noqa: E402
from openhands.sdk.context.condenser import CondenserBase, PipelineCondenser  # noqa: E402
from openhands.sdk.event import ActionEvent, ObservationEvent  # noqa: E402
from openhands.sdk.event.condenser import Condensation  # noqa: E402
from openhands.tools.file_editor import FileEditorTool  # noqa: E402

from concord_openhands import ConcordCondenser  # noqa: E402
from fake_llm import FakeLLM, Reply, Request, content_text  # noqa: E402
from formats import cat_n  # noqa: E402
from test_openhands_e2e import (  # noqa: E402,F401 (the fixture closes conversations)
    _OPEN,
    _close_conversations,
    make_conversation,
    make_llm,
    numbered,
    run,
    write,
)


def view_call(call_id: str, f, **extra) -> Reply:
    return Reply.call(call_id, "file_editor", command="view", path=str(f), **extra)


def think(call_id: str) -> Reply:
    return Reply.call(call_id, "think", thought="thinking it over")


def serialized(req: Request) -> list[str]:
    return [json.dumps(m) for m in req.messages]


def assert_append_only(before: Request, after: Request) -> None:
    """Every message of `before` is byte-identical at the same place in `after`."""
    a, b = serialized(before), serialized(after)
    assert len(b) > len(a)
    for i, (x, y) in enumerate(zip(a, b)):
        assert x == y, f"message {i} changed:\n{x}\n---\n{y}"


def prefix_reuse(reqs: list[Request]) -> tuple[int, int]:
    """Bytes of each request's messages that repeat the previous request's
    (the longest common prefix of the serialized message lists), and the
    bytes sent, summed over requests 2..n."""
    reused = sent = 0
    for prev, cur in zip(reqs, reqs[1:]):
        a, b = json.dumps(prev.messages), json.dumps(cur.messages)
        reused += len(os.path.commonprefix([a, b]))
        sent += len(b)
    return reused, sent


def newest_tool_message(req: Request) -> dict:
    return [m for m in req.messages if m.get("role") == "tool"][-1]


def notes_in(req: Request) -> list[str]:
    """The text parts that are Concord notes, in prompt order."""
    out = []
    for m in req.messages:
        content = m.get("content")
        parts = content if isinstance(content, list) else [{"type": "text", "text": content_text(content)}]
        out += [p["text"] for p in parts if isinstance(p, dict) and str(p.get("text", "")).startswith("[concord]")]
    return out


def server_counts(c: ConcordCondenser) -> dict:
    return (c.session.stats() or {}).get("reconciliations", {})


def concord(workspace, concord_bin, placement: str) -> ConcordCondenser:
    return ConcordCondenser(roots=[str(workspace)], binary=concord_bin, placement=placement)


@pytest.fixture
def close_later():
    opened: list[ConcordCondenser] = []
    yield opened.append
    for c in opened:
        c.close()


# -- scenarios -----------------------------------------------------------------


@pytest.mark.parametrize("placement", ["tail", "auto"])
def test_outside_change_gets_a_hunk_erratum(workspace, concord_bin, close_later, placement):
    f = workspace / "config.txt"
    old = numbered(12)
    write(f, old)
    new = list(old)
    new[4] = "line 5: value FIVE of the config"
    shown = cat_n(str(f), old)
    want = f"[concord] Outdated in {f}: call_1 changed:\n+5: line 5: value FIVE of the config"
    reqs: list[Request] = []

    def change(req: Request) -> Reply:
        reqs.append(req)
        assert req.tool_result("call_1") == shown
        write(f, new)
        return think("call_2")

    def expect_erratum(req: Request) -> Reply:
        reqs.append(req)
        assert req.tool_result("call_1") == shown  # (a) not rewritten
        assert newest_tool_message(req)["tool_call_id"] == "call_2"
        assert notes_in(req) == [want]  # (b) after the newest message
        assert content_text(newest_tool_message(req)["content"]).endswith(want)
        assert_append_only(reqs[-2], req)  # (c)
        return think("call_3")

    def expect_sticky(req: Request) -> Reply:
        reqs.append(req)
        assert_append_only(reqs[-2], req)  # the note stayed where it was, same bytes
        assert notes_in(req) == [want]  # delivered once, not repeated
        return Reply.finish()

    c = concord(workspace, concord_bin, placement)
    close_later(c)
    with FakeLLM([lambda r: view_call("call_1", f), change, expect_erratum, expect_sticky]) as fake:
        run(make_conversation(fake, workspace, c), fake)
    counts = server_counts(c)
    assert counts.get("errata") == 1 and not counts.get("flushes"), counts
    assert c.stats()["errata"] == 1 and c.stats()["repaired"] == 0


@pytest.mark.parametrize("placement", ["tail", "auto"])
def test_agents_own_edit_gets_a_pointer(workspace, concord_bin, close_later, placement):
    f = workspace / "config.txt"
    old = numbered(12)
    write(f, old)
    shown = cat_n(str(f), old)
    want = f"[concord] Outdated in {f}: call_1 changed by your edit in call_2."
    reqs: list[Request] = []

    def expect_pointer(req: Request) -> Reply:
        reqs.append(req)
        assert req.tool_result("call_1") == shown
        edit = newest_tool_message(req)
        assert edit["tool_call_id"] == "call_2"
        text = content_text(edit["content"])
        assert text.startswith(f"The file {f} has been edited.") and "value FIVE" in text
        assert text.endswith(want) and notes_in(req) == [want]
        return think("call_3")

    def expect_sticky(req: Request) -> Reply:
        assert_append_only(reqs[-1], req)
        assert notes_in(req) == [want]
        return Reply.finish()

    def edit(req: Request) -> Reply:
        reqs.append(req)
        return Reply.call("call_2", "file_editor", command="str_replace", path=str(f),
                          old_str="line 5: value 5 of", new_str="line 5: value FIVE of")

    c = concord(workspace, concord_bin, placement)
    close_later(c)
    with FakeLLM([lambda r: view_call("call_1", f), edit, expect_pointer, expect_sticky]) as fake:
        run(make_conversation(fake, workspace, c), fake)
    assert_append_only(reqs[0], reqs[1])


def test_shift_only_gets_one_line(workspace, concord_bin, close_later):
    f = workspace / "config.txt"
    old = numbered(30)
    write(f, old)
    shown = cat_n(str(f), old[9:14], 10)
    want = f"[concord] Outdated in {f}: call_1 (lines 10-14) is now at lines 12-16."
    reqs: list[Request] = []

    def shift(req: Request) -> Reply:
        reqs.append(req)
        assert req.tool_result("call_1") == shown
        write(f, ["# generated", "# do not edit"] + old)
        return think("call_2")

    def expect(req: Request) -> Reply:
        reqs.append(req)
        assert req.tool_result("call_1") == shown
        assert notes_in(req) == [want]
        assert_append_only(reqs[-2], req)
        return Reply.finish()

    c = concord(workspace, concord_bin, "tail")
    close_later(c)
    with FakeLLM([lambda r: view_call("call_1", f, view_range=[10, 14]), shift, expect]) as fake:
        run(make_conversation(fake, workspace, c), fake)


class ForgetCall2(CondenserBase):
    """Condenses once, as a summariser would: when call_3's result arrives,
    forget call_2 (the message that carries Concord's note)."""

    def condense(self, view, agent_llm=None):  # noqa: ARG002
        ids = {getattr(e, "tool_call_id", None): e for e in view.events if isinstance(e, ObservationEvent)}
        if "call_3" not in ids or "call_2" not in ids:
            return view
        obs = ids["call_2"]
        return Condensation(forgotten_event_ids={obs.id, obs.action_id}, llm_response_id="forget-call-2")


def test_condensation_flushes_the_notes_into_place(workspace, concord_bin, close_later):
    f = workspace / "config.txt"
    old = numbered(12)
    write(f, old)
    new = list(old)
    new[6] = "line 7: value SEVEN of the config"
    shown = cat_n(str(f), old)
    reqs: list[Request] = []

    def change(req: Request) -> Reply:
        reqs.append(req)
        write(f, new)
        return think("call_2")

    def expect_note(req: Request) -> Reply:
        reqs.append(req)
        assert req.tool_result("call_1") == shown and len(notes_in(req)) == 1
        return think("call_3")

    def expect_flushed(req: Request) -> Reply:
        reqs.append(req)
        # call_2 (with the note) was condensed away: prefixRebuilt -> flushed,
        # every repair in place, no note left.
        assert "call_2" not in req.tool_results()
        assert req.tool_result("call_1") == cat_n(str(f), new)
        assert notes_in(req) == [] and "value 7 of" not in req.all_text()
        return think("call_4")

    def expect_stable(req: Request) -> Reply:
        assert_append_only(reqs[-1], req)
        return Reply.finish()

    c = concord(workspace, concord_bin, "auto")
    close_later(c)
    with FakeLLM([lambda r: view_call("call_1", f), change, expect_note, expect_flushed, expect_stable]) as fake:
        run(make_conversation(fake, workspace, PipelineCondenser(condensers=[c, ForgetCall2()])), fake)
    counts = server_counts(c)
    assert counts.get("errata") == 1 and counts.get("flushes") == 1, counts


@pytest.mark.parametrize("placement", ["tail", "auto"])
def test_change_before_first_send(workspace, concord_bin, close_later, placement):
    """The file changes after the tool ran and before the model saw the result:
    `auto` rewrites it in place (free), `tail` keeps it and adds the note."""
    f = workspace / "config.txt"
    old = numbered(8)
    write(f, old)
    new = list(old)
    new[1] = "line 2: value TWO of the config"

    def on_event(ev) -> None:
        if isinstance(ev, ObservationEvent) and ev.tool_call_id == "call_1":
            write(f, new)

    def expect(req: Request) -> Reply:
        if placement == "auto":
            assert req.tool_result("call_1") == cat_n(str(f), new) and notes_in(req) == []
        else:
            assert req.tool_result("call_1").startswith(cat_n(str(f), old))
            assert notes_in(req) == [
                f"[concord] Outdated in {f}: call_1 changed:\n+2: line 2: value TWO of the config"]
        return Reply.finish()

    c = concord(workspace, concord_bin, placement)
    close_later(c)
    with FakeLLM([lambda r: view_call("call_1", f), expect]) as fake:
        agent = Agent(llm=make_llm(fake), tools=[Tool(name=FileEditorTool.name)], condenser=c)
        conv = Conversation(agent=agent, workspace=str(workspace), visualizer=None, callbacks=[on_event])
        _OPEN.append(conv)
        run(conv, fake)


def _reuse_run(workspace, concord_bin, placement: str) -> tuple[list[Request], ConcordCondenser]:
    """Two reads, an outside change to the first, then three more calls."""
    a, b = workspace / "a.txt", workspace / "b.txt"
    write(a, numbered(40))
    write(b, numbered(40))
    new = numbered(40)
    new[19] = "line 20: value TWENTY of the config"
    reqs: list[Request] = []

    def step(reply, action=None):
        def s(req: Request) -> Reply:
            reqs.append(req)
            if action:
                action()
            return reply
        return s

    script = [
        step(view_call("call_1", a)),
        step(view_call("call_2", b)),
        step(think("call_3"), lambda: write(a, new)),
        step(think("call_4")),
        step(think("call_5")),
        step(Reply.finish()),
    ]
    c = concord(workspace, concord_bin, placement)
    with FakeLLM(script) as fake:
        run(make_conversation(fake, workspace, c), fake)
    c.close()
    return reqs, c


def test_prefix_reuse_tail_against_inplace(workspace, concord_bin, capsys):
    """The same run under `inplace` and `tail`: tail keeps every request an
    append-only extension of the previous one; inplace rewrites call_1."""
    results = {}
    for placement in ("inplace", "tail"):
        ws = workspace / placement
        ws.mkdir()
        reqs, _ = _reuse_run(ws, concord_bin, placement)
        results[placement] = (reqs, prefix_reuse(reqs))
    tail_reqs, (t_reused, t_sent) = results["tail"]
    for prev, cur in zip(tail_reqs, tail_reqs[1:]):
        assert_append_only(prev, cur)
    in_reqs, (i_reused, i_sent) = results["inplace"]
    assert "TWENTY" in in_reqs[3].tool_result("call_1")  # repaired in place...
    with pytest.raises(AssertionError, match="changed"):
        assert_append_only(in_reqs[2], in_reqs[3])  # ...which broke the prefix
    assert "TWENTY" in "\n".join(notes_in(tail_reqs[3]))
    assert t_reused / t_sent > i_reused / i_sent
    with capsys.disabled():
        print(f"\nprefix reuse over requests 2-{len(tail_reqs)}: "
              f"tail {t_reused}/{t_sent} bytes ({100 * t_reused / t_sent:.1f}%), "
              f"inplace {i_reused}/{i_sent} bytes ({100 * i_reused / i_sent:.1f}%)")
