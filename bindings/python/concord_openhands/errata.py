"""Erratum notes and prefix tracking for tail placement (SDK-free; docs/protocol.md, "Placement").

The errata of one `sync` are joined into one note after the newest message of that call; a note
stays on the same message with the same bytes on every later call until a flush drops them all;
the first `sync` after the runtime dropped or condensed messages says `prefixRebuilt`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def join_errata(errata: Iterable[str]) -> str:
    """One note from the errata of one `sync`, in the order given."""
    return "\n".join(e for e in errata if e)


class Notes:
    """The notes attached so far, by the id of the message (event) they follow."""

    def __init__(self) -> None:
        self._by_event: dict[str, list[str]] = {}

    def attach(self, event_id: str, note: str) -> None:
        """Attach a note after `event_id`; notes already there stay before it."""
        if note:
            self._by_event.setdefault(event_id, []).append(note)

    def of(self, event_id: str) -> Sequence[str]:
        return self._by_event.get(event_id, ())

    def drop_all(self) -> int:
        """A flush: every repair is now in place. Returns how many notes went."""
        n = len(self)
        self._by_event.clear()
        return n

    def events(self) -> list[str]:
        return list(self._by_event)

    def __len__(self) -> int:
        return sum(len(v) for v in self._by_event.values())


class PrefixTracker:
    """Tells whether the prompt grew append-only since the previous call."""

    def __init__(self) -> None:
        self._previous: list[str] | None = None

    def rebuilt(self, ids: Sequence[str]) -> bool:
        """Record this call's message ids; True when the previous call's are not a prefix of them."""
        prev, self._previous = self._previous, list(ids)
        return prev is not None and (len(prev) > len(ids) or list(ids[: len(prev)]) != prev)
