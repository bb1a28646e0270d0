"""What the model is shown for each block status (docs/protocol.md table)."""

from __future__ import annotations

import pytest

from concord_openhands.listing import parse
from concord_openhands.render import render_block
from concord_openhands.session import BlockView
from test_listing import cat_n

URI = "file:///w/a.py"
NOTICE = "[concord] /w/a.py changed since this read; re-read /w/a.py lines 3-4."
ORIG = cat_n("/w/a.py", ["c", "d"], start=3)


@pytest.mark.parametrize(
    "status,sources,notice,want",
    [
        ("valid", [{"uri": URI, "range": {"start": 3, "end": 4}, "text": "c\nd"}], "", None),
        ("released", [], "", None),
        ("patched", [{"uri": URI, "range": {"start": 5, "end": 7}, "text": "c\nD\ne"}], "",
         cat_n("/w/a.py", ["c", "D", "e"], start=5)),
        ("patched", [{"uri": URI, "text": "whole\nfile"}], "", cat_n("/w/a.py", ["whole", "file"])),
        ("patched", [{"uri": URI, "text": ""}], "", cat_n("/w/a.py", [])),
        ("stale", [{"uri": URI, "range": {"start": 3, "end": 4}, "text": "c\nd"}], NOTICE,
         ORIG + NOTICE),
        ("invalid", [], NOTICE, NOTICE),
        ("superseded", [], NOTICE, NOTICE),
        ("invalid", [{"uri": URI}], "", "[concord] /w/a.py changed since this read; the content "
         "shown earlier is no longer accurate. Re-read it before relying on it."),
    ],
)
def test_render_block(status, sources, notice, want):
    bv = BlockView(block="b1", anchor="call_1", status=status, sources=sources, notice=notice)
    assert render_block(parse(ORIG), bv) == want


def test_key_tracks_what_the_model_sees():
    a = BlockView("b1", "c", "patched", [{"uri": URI, "range": {"start": 1, "end": 1}, "text": "x"}])
    b = BlockView("b1", "c", "patched", [{"uri": URI, "range": {"start": 1, "end": 1}, "text": "x"}],
                  reason="other")
    c = BlockView("b1", "c", "patched", [{"uri": URI, "range": {"start": 2, "end": 2}, "text": "x"}])
    assert a.key() == b.key() != c.key()
