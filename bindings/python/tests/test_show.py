"""What the model is shown instead of a tool result is the server's `show`,
applied as given (docs/protocol.md, "How a binding renders a block view"):
the re-rendered read (patched), the read then the notice (stale), the notice
(invalid), and no `show` once the original output stands again (valid). The
texts come from the real `concord serve`; the binding composes none of them."""

from __future__ import annotations

import pytest

from concord_openhands.session import BlockView, ConcordSession
from formats import cat_n

LINES = [f"value_{i} = {i}  # a setting that is long enough" for i in range(1, 21)]


def test_show_is_taken_from_the_wire_as_is():
    raw = {"block": "b1", "anchor": "c1", "agent": "main", "turn": 1, "status": "stale", "view": "v\n", "show": "v\n\nN",
           "notice": "N"}
    assert BlockView.from_wire(raw).show == "v\n\nN"
    assert BlockView.from_wire({**raw, "status": "valid", "show": None}).show is None
    assert BlockView.from_wire({k: v for k, v in raw.items() if k != "show"}).show is None


def shown(s: ConcordSession, turn: int) -> BlockView:
    res = s.sync(turn)
    assert res is not None and len(res.blocks) == 1, res
    return res.blocks[0]


@pytest.mark.parametrize("policy,edited", [
    (None, "patched"),  # a small local edit is re-rendered at the new line numbers
    ({"global": {"local": "annotate", "drift": "annotate"}}, "stale"),  # annotate: the read, then the notice
])
def test_show_for_each_status(concord_bin, workspace, policy, edited):
    f = workspace / "a.py"
    f.write_text("\n".join(LINES) + "\n")
    s = ConcordSession([str(workspace)], binary=concord_bin, watch="hooks", placement="inplace", policy=policy)
    try:
        call = {"runtime": "openhands", "tool": "file_editor", "output": cat_n(str(f), LINES[4:9], 5),
                "arguments": {"command": "view", "path": str(f), "view_range": [5, 9]}}
        res = s.recognize("c1", call, turn=1)
        assert res is not None and res["status"] == "valid", res
        assert s.sync(1).blocks == []

        new = ["# header"] + LINES
        new[6] = "value_6 = 60  # a setting that is long enough"
        f.write_text("\n".join(new) + "\n")
        b = shown(s, 2)
        assert b.status == edited and b.view is not None, b
        if edited == "patched":
            assert b.show == b.view == cat_n(str(f), new[5:10], 6)
        else:  # the view's trailing newline trimmed, a blank line, the notice
            assert b.notice and b.show == cat_n(str(f), LINES[4:9], 5).rstrip("\n") + "\n\n" + b.notice

        f.write_text("\n".join(LINES) + "\n")
        b = shown(s, 3)
        if edited == "patched":  # its lines moved back: re-rendered as first read
            assert b.status == "patched" and b.show == call["output"], b
        else:  # the original output stands again
            assert b.status == "valid" and b.show is None, b

        f.write_text("totally\ndifferent\n")
        b = shown(s, 4)
        if edited == "patched":
            assert b.status == "invalid" and b.view is None and b.show == b.notice and "removed" in b.notice, b
        else:
            assert b.status == "stale" and b.show == b.view.rstrip("\n") + "\n\n" + b.notice, b

        assert s.release(["c1"]) == ["b1"]
    finally:
        s.close()
