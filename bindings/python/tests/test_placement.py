"""Placement without the SDK: the note and prefix rules (errata.py), and the
session against the real `concord serve` (initialize's placement, tail views,
prefixRebuilt -> flushed, sourceChanged's anchor)."""

from __future__ import annotations

import pytest

from concord_openhands.errata import Notes, PrefixTracker, join_errata
from concord_openhands.session import ConcordSession, Source


@pytest.mark.parametrize(
    "calls,want",
    [
        ([["s", "u"], ["s", "u", "a", "t"]], [False, False]),  # append-only
        ([["s", "u", "a"], ["s", "u", "a"]], [False, False]),  # same call again (a retry)
        ([["s", "u", "a", "t"], ["s", "x", "a", "t", "b"]], [False, True]),  # condensed
        ([["s", "u", "a", "t"], ["s", "u"]], [False, True]),  # dropped at the end
        ([["s", "u", "a"], ["s", "a", "u"]], [False, True]),  # reordered
    ],
)
def test_prefix_tracker(calls, want):
    p = PrefixTracker()
    assert [p.rebuilt(ids) for ids in calls] == want


def test_notes_are_sticky_until_dropped():
    n = Notes()
    n.attach("e1", join_errata(["[concord] a", "", "[concord] b"]))
    n.attach("e1", "[concord] c")
    n.attach("e2", "")
    assert list(n.of("e1")) == ["[concord] a\n[concord] b", "[concord] c"]
    assert list(n.of("e2")) == [] and len(n) == 2 and n.events() == ["e1"]
    assert n.drop_all() == 2 and len(n) == 0 and list(n.of("e1")) == []


def test_bad_placement_is_refused_before_starting():
    with pytest.raises(ValueError, match="placement"):
        ConcordSession(["/"], placement="sideways")
    with pytest.raises(ValueError, match="cache_ttl"):
        ConcordSession(["/"], placement="tail", cache_ttl=0)


def test_tail_views_then_flush(concord_bin, workspace):
    f = workspace / "store.py"
    lines = [f"value_{i} = {i}  # setting" for i in range(1, 13)]
    f.write_text("\n".join(lines) + "\n")
    s = ConcordSession([str(workspace)], binary=concord_bin, watch="hooks", placement="tail", cache_ttl=60)
    try:
        assert s.ensure() and s.server_info["capabilities"]["placement"] == "tail"
        assert s.observe("call_1", [Source(str(f), "\n".join(lines))], turn=1)["status"] == "valid"
        assert s.sync(1).blocks == []
        lines[3] = "value_4 = 40  # setting"
        f.write_text("\n".join(lines) + "\n")
        assert s.source_changed(str(f), anchor="call_2") == ["b1"]
        res = s.sync(2)
        assert not res.flushed and len(res.blocks) == 1
        b = res.blocks[0]
        assert b.at_tail and b.anchor == "call_1" and b.status == "patched"
        assert b.erratum == f"[concord] Outdated in {f}: call_1 changed by your edit in call_2."
        assert s.sync(3).blocks == []  # delivered once
        res = s.sync(4, prefix_rebuilt=True)
        assert res.flushed and [(v.anchor, v.at_tail, v.status) for v in res.blocks] == [
            ("call_1", False, "patched")
        ]
        assert res.blocks[0].sources[0]["text"] == "\n".join(lines)
    finally:
        s.close()


def test_auto_is_the_default_and_sent(concord_bin, workspace):
    s = ConcordSession([str(workspace)], binary=concord_bin)
    try:
        assert s.ensure() and s.placement == "auto" and s.server_info["capabilities"]["placement"] == "auto"
    finally:
        s.close()


def test_placement_is_part_of_the_shared_servers_configuration(concord_bin, workspace):
    # initialize sets placement per server: sessions that differ in it must not share one.
    a = ConcordSession([str(workspace)], binary=concord_bin, placement="tail")
    b = ConcordSession([str(workspace)], binary=concord_bin, placement="inplace")
    c = ConcordSession([str(workspace)], binary=concord_bin, placement="tail")
    try:
        assert a.ensure() and b.ensure() and c.ensure()
        assert a.client.pid != b.client.pid and a.client.pid == c.client.pid
        assert [s.server_info["capabilities"]["placement"] for s in (a, b)] == ["tail", "inplace"]
    finally:
        for s in (a, b, c):
            s.close()
