"""Turn a block's state (from `sync`) into the text the model is shown instead."""

from __future__ import annotations

from .listing import Listing
from .session import BlockView, uri_to_path


def render_block(listing: Listing | None, view: BlockView) -> str | None:
    """The replacement text for a tool result, or None to keep the original.

    See docs/protocol.md, "How a binding renders a block view".
    """
    status = view.status
    if status in ("valid", "released", ""):
        return None
    if status in ("patched", "stale") and view.sources and listing is not None:
        src = view.sources[0]
        rng = src.get("range") or None
        text = str(src.get("text") or "")
        if rng:
            start = int(rng.get("start", 1))
            lines = text.split("\n")
        else:
            start = 1
            lines = text.split("\n") if text else []
        out = listing.render(start, lines)
        if status == "stale" and view.notice:
            if not out.endswith("\n"):
                out += "\n"
            out += view.notice
        return out
    if view.notice:
        return view.notice
    # A state we cannot show faithfully: say so rather than show stale text.
    paths = ", ".join(uri_to_path(str(s.get("uri", ""))) for s in view.sources) or "the file"
    return (
        f"[concord] {paths} changed since this read; the content shown earlier is "
        "no longer accurate. Re-read it before relying on it."
    )
