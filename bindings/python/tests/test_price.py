"""Priced rewrites without the SDK: the cache price option (forms, presets,
$CONCORD_CACHE_PRICE, bad values off with a warning) and what the session
puts on the wire, read from a tap between the session and the real
`concord serve`; then the server's two outcomes through the session."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from concord_openhands import session as S
from concord_openhands.rpc import read_frame
from concord_openhands.session import ConcordSession, Source, parse_cache_price, resolve_cache_price


@pytest.fixture(autouse=True)
def _fresh_price_warnings(monkeypatch):
    # Each bad price is said once per process; every test starts from none said.
    monkeypatch.setattr(S, "_PRICE_WARNED", set())
    monkeypatch.delenv(S.ENV_PRICE, raising=False)


def price_warnings(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.levelno >= logging.WARNING and "price" in r.getMessage()]


@pytest.mark.parametrize(
    "value,want",
    [
        (None, None),
        ("", None),
        ("off", None),
        (" OFF ", None),
        ("anthropic", (1.25, 0.1)),
        ("Anthropic", (1.25, 0.1)),
        ("openai", (1.0, 0.5)),
        ("1.25,0.1", (1.25, 0.1)),
        (" 2 , 0 ", (2.0, 0.0)),
        ("1,1", (1.0, 1.0)),
        ({"write": 1.25, "read": 0.1}, (1.25, 0.1)),
        ({"write": 1, "read": 0}, (1.0, 0.0)),
    ],
)
def test_price_forms(value, want):
    assert parse_cache_price(value) == want


@pytest.mark.parametrize(
    "value,why",
    [
        ("cheap", "is not 'anthropic', 'openai', 'off' or 'WRITE,READ'"),
        ("1.25", "is not 'anthropic'"),
        ("1,2,3", "is not 'anthropic'"),
        ("a,b", "must be two numbers"),
        ("0.5,1", "write 0.5, read 1: must have write > 0 and 0 <= read <= write"),
        ("0,0", "must have write > 0"),
        ("1,-0.1", "must have write > 0 and 0 <= read"),
        ("nan,0", "must have write > 0"),
        ("inf,1", "must have write > 0"),
        ({"write": 1.25}, "exactly the keys 'write' and 'read'"),
        ({"write": 1.25, "read": 0.1, "ttl": 3}, "exactly the keys"),
        ({"write": "1.25", "read": 0.1}, "must be numbers"),
        ({"write": True, "read": 0}, "must be numbers"),
        (1.25, "is not a preset name"),
        ([1.25, 0.1], "is not a preset name"),
    ],
)
def test_bad_prices_say_why(value, why):
    with pytest.raises(ValueError, match=None) as err:
        parse_cache_price(value)
    assert why in str(err.value)


def test_env_var_when_the_option_is_unset(monkeypatch, caplog):
    monkeypatch.setenv(S.ENV_PRICE, "openai")
    assert resolve_cache_price(None) == (1.0, 0.5)
    monkeypatch.setenv(S.ENV_PRICE, "1.5,0.25")
    assert resolve_cache_price(None) == (1.5, 0.25)
    # The option wins over the variable, "off" included.
    assert resolve_cache_price("anthropic") == (1.25, 0.1)
    assert resolve_cache_price("off") is None
    with caplog.at_level(logging.WARNING):
        monkeypatch.setenv(S.ENV_PRICE, "1,2")
        assert resolve_cache_price(None) is None
        assert resolve_cache_price(None) is None
    got = price_warnings(caplog)
    assert got == ["concord: ignoring $CONCORD_CACHE_PRICE: write 1, read 2: must have write > 0 and "
                   "0 <= read <= write (multiples of the input price); the cache price stays off"], got


def test_bad_option_and_other_placements_are_off_with_one_warning(caplog):
    with caplog.at_level(logging.WARNING):
        assert resolve_cache_price({"write": 0, "read": 0}) is None
        assert resolve_cache_price("anthropic", "tail") is None
        assert resolve_cache_price("anthropic", "tail") is None
        assert resolve_cache_price("anthropic", "inplace") is None
    got = price_warnings(caplog)
    assert len(got) == 3, got
    assert got[0].startswith("concord: ignoring cache_price: write 0, read 0: must have write > 0")
    assert got[1] == ("concord: ignoring cache_price: a cache price applies to placement 'auto' "
                      "only, not 'tail'")


def tapped(tmp_path: Path, concord_bin: str) -> tuple[Path, Path]:
    """A `concord` that is the real one with its input copied to a log: what
    the session sends, byte for byte."""
    log = tmp_path / "wire.log"
    tap = tmp_path / "tapped-concord"
    tap.write_text(f'#!/bin/sh\ntee {str(log)!r} | {concord_bin!r} "$@"\n')
    tap.chmod(0o755)
    return tap, log


def sent(log: Path, method: str) -> list[dict]:
    """The params of every `method` request in the log."""
    out = []
    with log.open("rb") as f:
        while (body := read_frame(f)) is not None:
            msg = json.loads(body)
            if msg.get("method") == method:
                out.append(msg.get("params"))
    return out


@pytest.mark.parametrize(
    "price,env,want",
    [
        ("anthropic", None, {"write": 1.25, "read": 0.1}),
        ({"write": 2, "read": 0.5}, None, {"write": 2.0, "read": 0.5}),
        (None, "openai", {"write": 1.0, "read": 0.5}),
        (None, None, None),
        ("0.5,1", None, None),  # refused by the server: never sent
    ],
)
def test_initialize_carries_the_price_and_sync_the_prompt_size(
    concord_bin, workspace, tmp_path, monkeypatch, price, env, want
):
    if env:
        monkeypatch.setenv(S.ENV_PRICE, env)
    tap, log = tapped(tmp_path, concord_bin)
    s = ConcordSession([str(workspace)], binary=str(tap), watch="hooks", cache_price=price, cache_ttl=60)
    try:
        assert s.ensure() and s.available  # a bad price leaves Concord on, without the price
        assert s.sync(1, prompt_chars=2345) is not None
        assert s.sync(2) is not None  # 0: not reported
    finally:
        s.close()
    init = sent(log, "initialize")
    assert len(init) == 1
    cache = init[0]["cache"]
    assert cache.get("price") == want and cache["ttlSeconds"] == 60
    assert [p.get("promptChars") for p in sent(log, "sync")] == [2345, None]


def test_price_is_part_of_the_shared_servers_configuration(concord_bin, workspace):
    a = ConcordSession([str(workspace)], binary=concord_bin, cache_price="anthropic")
    b = ConcordSession([str(workspace)], binary=concord_bin)
    c = ConcordSession([str(workspace)], binary=concord_bin, cache_price="1.25,0.1")
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
