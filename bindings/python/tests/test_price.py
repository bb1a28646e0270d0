"""Priced rewrites without the SDK: the cache price option ($CONCORD_CACHE_PRICE,
"off", placements; a price the server refuses is said once and initialize
starts again without it, so the session runs) and what the session
puts on the wire, read from a tap between the session and the real
`concord serve`; then the server's two outcomes through the session."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from concord_openhands import session as S
from concord_openhands.session import ConcordSession, Source, cache_price_option


@pytest.fixture(autouse=True)
def _fresh_price_warnings(monkeypatch):
    # Each bad price is said once per process; every test starts from none said.
    S._warn_price_once.cache_clear()
    monkeypatch.delenv(S.ENV_PRICE, raising=False)


def price_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno >= logging.WARNING and "price" in r.getMessage()]


# The forms of a price and why a bad one is refused are the server's
# (protocol/protocol_test.go TestCachePriceForms, testdata/rpc/priced-string.jsonl):
# the session passes the option through.


def test_env_var_when_the_option_is_unset(monkeypatch):
    monkeypatch.setenv(S.ENV_PRICE, "openai")
    assert cache_price_option(None) == "openai"
    # The option wins over the variable, "off" included; "" and "off" are none.
    assert cache_price_option({"write": 2, "read": 1}) == {"write": 2, "read": 1}
    assert cache_price_option(" OFF ") is None
    monkeypatch.setenv(S.ENV_PRICE, "")
    assert cache_price_option(None) is None


def test_other_placements_are_off_with_one_warning(caplog):
    with caplog.at_level(logging.WARNING):
        assert cache_price_option("anthropic", "tail") is None
        assert cache_price_option("anthropic", "tail") is None
        assert cache_price_option("anthropic", "inplace") is None
        assert cache_price_option("anthropic", "auto") == "anthropic"
    got = price_warnings(caplog)
    assert got == ["concord: ignoring cache_price: a cache price applies to placement 'auto' only, not 'tail'",
                   "concord: ignoring cache_price: a cache price applies to placement 'auto' only, not 'inplace'"], got


def test_a_price_json_cannot_carry_is_off_with_one_warning(caplog):
    with caplog.at_level(logging.WARNING):
        assert cache_price_option({"write": float("nan"), "read": 0}) is None
        assert cache_price_option({"write": {1.25}, "read": 0}) is None
    got = price_warnings(caplog)
    assert got == ["concord: ignoring cache_price: Out of range float values are not JSON compliant: nan; "
                   "the cache price stays off",
                   "concord: ignoring cache_price: Object of type set is not JSON serializable; the cache price "
                   "stays off"], got


def tapped(tmp_path: Path, concord_bin: str) -> tuple[Path, Path]:
    """A `concord` that is the real one with its input copied to a log: what
    the session sends, byte for byte (every start appends)."""
    log = tmp_path / "wire.log"
    tap = tmp_path / "tapped-concord"
    tap.write_text(f'#!/bin/sh\ntee -a {str(log)!r} | {concord_bin!r} "$@"\n')
    tap.chmod(0o755)
    return tap, log


def sent(log: Path, method: str) -> list[dict]:
    """The params of every `method` request in the log."""
    out = []
    with log.open("rb") as f:
        for line in f:  # one message per line (--framing=newline)
            msg = json.loads(line)
            if msg.get("method") == method:
                out.append(msg.get("params"))
    return out


@pytest.mark.parametrize(
    "price,env,want",
    [
        ("anthropic", None, ["anthropic"]),
        ({"write": 2, "read": 0.5}, None, [{"write": 2, "read": 0.5}]),
        (None, "openai", ["openai"]),
        (None, None, [None]),
        # Refused by the server: said once, and initialize again without it.
        ("0.5,1", None, ["0.5,1", None]),
        (None, "cheap", ["cheap", None]),
    ],
)
def test_initialize_carries_the_price_and_sync_the_prompt_size(
    concord_bin, workspace, tmp_path, monkeypatch, caplog, price, env, want
):
    if env:
        monkeypatch.setenv(S.ENV_PRICE, env)
    tap, log = tapped(tmp_path, concord_bin)
    s = ConcordSession([str(workspace)], binary=str(tap), watch="hooks", cache_price=price, cache_ttl=60)
    try:
        with caplog.at_level(logging.WARNING):
            assert s.ensure() and s.available  # a bad price leaves Concord on, without the price
        assert s.sync(1, prompt_chars=2345) is not None
        assert s.sync(2) is not None  # 0: not reported
        assert s.restarts == 0
    finally:
        s.close()
    init = [p["cache"] for p in sent(log, "initialize")]
    assert [c.get("price") for c in init] == want and all(c["ttlSeconds"] == 60 for c in init)
    assert [p.get("promptChars") for p in sent(log, "sync")] == [2345, None]
    refused = price or env
    assert price_warnings(caplog) == ([] if len(want) == 1 else [
        f"concord: ignoring cache_price {refused!r}: invalid params: cache.price: "
        + ("must have write > 0 and 0 <= read <= write (multiples of the input price), not write 0.5, read 1"
           if refused == "0.5,1" else '"cheap" is not anthropic, openai or "WRITE,READ"')
        + "; the cache price stays off"])


def test_price_is_part_of_the_shared_servers_configuration(concord_bin, workspace):
    a = ConcordSession([str(workspace)], binary=concord_bin, cache_price="anthropic")
    b = ConcordSession([str(workspace)], binary=concord_bin)
    c = ConcordSession([str(workspace)], binary=concord_bin, cache_price="anthropic")
    try:
        assert a.ensure() and b.ensure() and c.ensure()
        assert a.client.pid != b.client.pid and a.client.pid == c.client.pid
    finally:
        for s in (a, b, c):
            s.close()


def long_lines(tag: str) -> list[str]:
    return [f"    setting_{i:02d} = load_setting('section_{i:02d}', default={i})  # {tag}" for i in range(1, 41)]


@pytest.mark.parametrize("price", ["anthropic", None])
def test_a_drifted_read_at_the_end_of_the_prompt(concord_bin, workspace, price):
    """As testdata/rpc/priced.jsonl: a 38-line read that drifts while it sits
    at the end of the prompt goes in place (the notice) when priced, and to
    the tail (an erratum) when not."""
    f = workspace / "near.py"
    old = long_lines("first")
    f.write_text("\n".join(old) + "\n")
    s = ConcordSession([str(workspace)], binary=concord_bin, watch="hooks", placement="auto", cache_price=price)
    try:
        assert s.ensure()
        # The sync before the agent's first read tells where that read starts.
        assert s.sync(1, prompt_chars=3000).blocks == []
        shown = "\n".join(old[:38])
        assert s.observe("call_1", [Source(str(f), shown, (1, 38))], turn=1)["status"] == "valid"
        assert s.sync(2, prompt_chars=3000 + len(shown) + 200).blocks == []
        f.write_text("".join(f"# rewritten line {i}\n" for i in range(1, 41)))
        res = s.sync(3, prompt_chars=3000 + len(shown) + 400)
        assert [(b.anchor, b.status) for b in res.blocks] == [("call_1", "invalid")]
        b = res.blocks[0]
        notice = (f"[concord] {f} changed since this read; the content shown earlier (lines 1-38) "
                  f"is no longer accurate. Re-read {f} lines 1-38 before relying on it.")
        assert b.notice == notice
        counts = (s.stats() or {}).get("reconciliations", {})
        if price:
            assert not b.at_tail and not b.erratum  # in place: the message becomes the notice
            assert counts.get("pricedRewrites") == 1 and not counts.get("errata"), counts
        else:
            assert b.at_tail and b.erratum == (
                f"[concord] About the output of call_1: {f} changed since that read; the content "
                f"shown earlier (lines 1-38) is no longer accurate. Re-read {f} lines 1-38 before "
                "relying on it.")
            assert counts.get("errata") == 1 and not counts.get("pricedRewrites"), counts
    finally:
        s.close()
