"""Priced rewrites in the real SDK (docs/protocol.md, "Priced rewrites").

With `cache_price="anthropic"` and placement `auto`, a large ranged view the
model has seen, which then drifts (an outside write replaces the file), is
rewritten in place to the re-read notice at the next call: the short notice
replaces the whole copy on every later call, which costs less than keeping
the copy and carrying an erratum after it. Without a price the same run keeps
the old message byte-identical and adds the erratum at the tail. The
condenser's `promptChars` are read from a tap between it and the real server.
"""

from __future__ import annotations

import json
import logging
import sys

import pytest

if sys.version_info < (3, 12):
    pytest.skip("the OpenHands SDK needs Python >= 3.12", allow_module_level=True)

from openhands.sdk.context.condenser import CondenserBase  # noqa: E402

from concord_openhands import ConcordCondenser  # noqa: E402
from concord_openhands import session as S  # noqa: E402
from fake_llm import FakeLLM, Reply, Request, content_text  # noqa: E402
from formats import cat_n  # noqa: E402
from test_openhands_e2e import _close_conversations, make_conversation, run, write  # noqa: E402,F401
from test_placement_e2e import assert_append_only, notes_in, server_counts, think, view_call  # noqa: E402
from test_price import sent, tapped  # noqa: E402


@pytest.fixture(autouse=True)
def _no_price_from_the_environment(monkeypatch):
    monkeypatch.delenv(S.ENV_PRICE, raising=False)


def long_lines(n: int) -> list[str]:
    return [f"    setting_{i:02d} = load_setting('section_{i:02d}', default={i}, "
            f"fallback='value number {i:02d} of the config')" for i in range(1, n + 1)]


def concord_texts(req: Request) -> list[tuple[str, str]]:
    """(tool_call_id or role, text part) of every part that is Concord's, in prompt order."""
    out = []
    for m in req.messages:
        content = m.get("content")
        parts = content if isinstance(content, list) else [{"type": "text", "text": content_text(content)}]
        for p in parts:
            if isinstance(p, dict) and "[concord]" in str(p.get("text", "")):
                out.append((m.get("tool_call_id") or m.get("role"), p["text"]))
    return out


def step(reqs: list[Request], reply: Reply):
    """A script step that records the request and answers with reply."""
    def s(req: Request) -> Reply:
        reqs.append(req)
        return reply
    return s


@pytest.mark.parametrize("price", ["anthropic", None])
def test_drifted_large_read_is_rewritten_in_place_when_priced(workspace, concord_bin, tmp_path, price):
    f = workspace / "settings.py"
    old = long_lines(40)
    write(f, old)
    shown = cat_n(str(f), old[:38])
    notice = (f"[concord] {f} changed since this read; the content shown earlier (lines 1-38) is no "
              f"longer accurate. Re-read {f} lines 1-38 before relying on it.")
    erratum = (f"[concord] About the output of call_1: {f} changed since that read; the content shown "
               f"earlier (lines 1-38) is no longer accurate. Re-read {f} lines 1-38 before relying on it.")
    reqs: list[Request] = []

    def rewrite(req: Request) -> Reply:
        reqs.append(req)
        assert req.tool_result("call_1") == shown and concord_texts(req) == []
        # An outside write replaces the whole file: the read drifted.
        write(f, [f"# rewritten line {i}" for i in range(1, 41)])
        return think("call_2")

    def expect(req: Request) -> Reply:
        reqs.append(req)
        if price:
            # In place: the old message is now the notice, and no note follows.
            assert req.tool_result("call_1") == notice
            assert concord_texts(req) == [("call_1", notice)]
        else:
            assert req.tool_result("call_1") == shown  # byte-identical...
            assert concord_texts(req) == [("call_2", erratum)]  # ...and the erratum at the tail
            assert notes_in(req) == [erratum]
            assert_append_only(reqs[-2], req)
        return think("call_3")

    def expect_stable(req: Request) -> Reply:
        reqs.append(req)
        assert_append_only(reqs[-2], req)  # either way the prompt then only grows
        return Reply.finish()

    tap, log = tapped(tmp_path, concord_bin)
    c = ConcordCondenser(roots=[str(workspace)], binary=str(tap), placement="auto", cache_price=price)
    try:
        # The first sync, before any read, tells the server where call_1's message starts.
        script = [step(reqs, view_call("call_1", f, view_range=[1, 38])), rewrite, expect, expect_stable]
        with FakeLLM(script) as fake:
            run(make_conversation(fake, workspace, c), fake)
        counts = server_counts(c)
    finally:
        c.close()
    if price:
        assert counts.get("pricedRewrites") == 1 and not counts.get("errata"), counts
        assert c.stats()["notices"] == 1 and c.stats()["errata"] == 0
    else:
        assert counts.get("errata") == 1 and not counts.get("pricedRewrites"), counts
        assert c.stats()["errata"] == 1

    init = sent(log, "initialize")
    assert init[0].get("cache", {}).get("price") == price
    # One sync per model call, each with the prompt's size. It grows by what
    # each call appends; a rewrite in place shrinks what call_1 counts.
    chars = [p.get("promptChars") for p in sent(log, "sync")]
    assert len(chars) == len(reqs) and all(isinstance(n, int) and n > 0 for n in chars), chars
    assert chars[0] < chars[1] < chars[2]
    grown = chars[3] - chars[2]
    if price:
        assert grown < 0  # the 38-line copy became the notice
    else:
        assert grown > len(erratum)  # the erratum, and call_3's messages


def test_prompt_chars_match_what_the_model_is_sent(workspace, concord_bin, tmp_path):
    """promptChars counts the messages' text: each sync's figure equals the text
    of the request that follows it (no repair here, so nothing is applied after
    the sync), counted as the text parts plus the tool calls' names and arguments."""
    f = workspace / "a.txt"
    write(f, long_lines(10))
    reqs: list[Request] = []

    tap, log = tapped(tmp_path, concord_bin)
    c = ConcordCondenser(roots=[str(workspace)], binary=str(tap))
    try:
        script = [step(reqs, view_call("call_1", f)), step(reqs, think("call_2")),
                  step(reqs, view_call("call_3", f, view_range=[2, 4])), step(reqs, Reply.finish())]
        with FakeLLM(script) as fake:
            run(make_conversation(fake, workspace, c), fake)
    finally:
        c.close()

    def size(req: Request) -> int:
        n = 0
        for m in req.messages:
            n += len(content_text(m.get("content")))
            for call in m.get("tool_calls") or ():
                n += len(call["function"]["name"]) + len(call["function"]["arguments"])
        return n

    chars = [p.get("promptChars") for p in sent(log, "sync")]
    assert chars == [size(r) for r in reqs]


def test_price_serializes_with_the_agent(monkeypatch, caplog, concord_bin, workspace):
    S._warn_price_once.cache_clear()
    for given in ["Anthropic", "1.25,0.1", {"write": 2, "read": 1}, None, "off"]:
        c = ConcordCondenser(roots="/w", cache_price=given)
        dumped = c.model_dump()
        assert dumped["cache_price"] == given
        back = CondenserBase.model_validate(json.loads(json.dumps(dumped)))
        assert isinstance(back, ConcordCondenser) and back.cache_price == given
    # A bad price never fails the agent's construction nor its session: the
    # server's reason is said, and the price is off.
    monkeypatch.setenv(S.ENV_PRICE, "anthropic")
    c = ConcordCondenser(roots=[str(workspace)], binary=concord_bin, cache_price={"write": 0.5, "read": 1})
    try:
        with caplog.at_level(logging.WARNING):
            assert c.session.ensure() and c.session.available
    finally:
        c.close()
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == [
        "concord: ignoring cache_price {'write': 0.5, 'read': 1}: invalid params: cache.price: must have "
        "write > 0 and 0 <= read <= write (multiples of the input price), not write 0.5, read 1; the cache "
        "price stays off"]
    # "off" keeps $CONCORD_CACHE_PRICE from stepping in; None lets it.
    assert S.cache_price_option(ConcordCondenser(roots="/w", cache_price="off").cache_price) is None
    assert S.cache_price_option(ConcordCondenser(roots="/w").cache_price) == "anthropic"
