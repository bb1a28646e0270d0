"""What the model is shown for each block status (docs/protocol.md table): the
server's `view` in place of the result, a notice, or the original kept."""

from __future__ import annotations

import sys

import pytest

if sys.version_info < (3, 12):
    pytest.skip("the condenser needs the OpenHands SDK (Python >= 3.12)", allow_module_level=True)

from concord_openhands.condenser import _render  # noqa: E402
from concord_openhands.session import BlockView  # noqa: E402
from formats import cat_n  # noqa: E402

URI = "file:///w/a.py"
NOTICE = "[concord] /w/a.py changed since this read; re-read /w/a.py lines 3-4."
VIEW = cat_n("/w/a.py", ["c", "D", "e"], start=5)


@pytest.mark.parametrize(
    "status,sources,notice,view,want",
    [
        ("valid", [{"uri": URI, "range": {"start": 3, "end": 4}, "text": "c\nd"}], "", None, None),
        ("released", [], "", None, None),
        ("patched", [{"uri": URI, "range": {"start": 5, "end": 7}, "text": "c\nD\ne"}], "", VIEW, VIEW),
        ("stale", [{"uri": URI, "range": {"start": 5, "end": 7}, "text": "c\nD\ne"}], NOTICE, VIEW,
         VIEW + NOTICE),
        ("invalid", [], NOTICE, None, NOTICE),
        ("superseded", [], NOTICE, None, NOTICE),
        # A listing comes back without a view: its notice stands in for it.
        ("patched", [{"uri": URI + "?depth=1", "text": "a"}], NOTICE, None, NOTICE),
        ("invalid", [{"uri": URI}], "", None, "[concord] /w/a.py changed since this read; the content "
         "shown earlier is no longer accurate. Re-read it before relying on it."),
    ],
)
def test_render(status, sources, notice, view, want):
    bv = BlockView(block="b1", anchor="call_1", status=status, sources=sources, notice=notice, view=view)
    assert _render(bv) == want


def test_key_tracks_what_the_model_sees():
    a = BlockView("b1", "c", "patched", [{"uri": URI, "range": {"start": 1, "end": 1}, "text": "x"}])
    b = BlockView("b1", "c", "patched", [{"uri": URI, "range": {"start": 1, "end": 1}, "text": "x"}],
                  reason="other")
    c = BlockView("b1", "c", "patched", [{"uri": URI, "range": {"start": 2, "end": 2}, "text": "x"}])
    d = BlockView("b1", "c", "patched", [{"uri": URI, "text": "x", "totalLines": 2}])
    e = BlockView("b1", "c", "patched", [{"uri": URI, "text": "x", "totalLines": 3}])
    f = BlockView("b1", "c", "patched", [{"uri": URI, "text": "x", "totalLines": 3}], view="x")
    assert a.key() == b.key() != c.key()
    assert d.key() != e.key() != f.key()
