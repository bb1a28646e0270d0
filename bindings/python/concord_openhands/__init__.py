"""Concord for OpenHands: the model never again sees a stale file read.

    from concord_openhands import ConcordCondenser
    agent = Agent(llm=llm, tools=tools, condenser=ConcordCondenser(roots=[workspace]))

The core (JSON-RPC client, session, listing parser) is stdlib-only and imports
no SDK; `ConcordCondenser` is loaded from the SDK side on first access.
"""

from __future__ import annotations

from typing import Any

from .rpc import RpcClient, RpcError, ServerUnavailable
from .session import ConcordSession, Source, find_binary

__version__ = "0.1.0"

__all__ = [
    "ConcordCondenser",
    "ConcordSession",
    "RpcClient",
    "RpcError",
    "ServerUnavailable",
    "Source",
    "find_binary",
]


def __getattr__(name: str) -> Any:
    if name == "ConcordCondenser":
        from .condenser import ConcordCondenser

        return ConcordCondenser
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
