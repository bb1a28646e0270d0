"""Concord for OpenHands: the model never again sees a stale file read.

    from concord_openhands import ConcordCondenser
    agent = Agent(llm=llm, tools=tools, condenser=ConcordCondenser(roots=[workspace]))

The core (JSON-RPC client, session) is stdlib-only; `ConcordCondenser` loads the SDK on first
access. What each tool result showed is decided by the server (`recognize`), not here.
"""

from __future__ import annotations

import sys
from typing import Any

from .rpc import RpcClient, RpcError, ServerUnavailable
from .session import ConcordSession, Source, find_binary

__version__ = "0.1.0"
__all__ = ["ConcordCondenser", "ConcordNotOnServer", "ConcordSession", "RpcClient", "RpcError",
           "ServerUnavailable", "Source", "find_binary"]

if "openhands.sdk" in sys.modules:
    # An agent server run with `--import-modules concord_openhands`: define the condenser now,
    # so its `kind` resolves when the server validates an agent that names it.
    from .condenser import ConcordCondenser, ConcordNotOnServer  # noqa: E402


def __getattr__(name: str) -> Any:
    if name in ("ConcordCondenser", "ConcordNotOnServer"):
        from . import condenser

        return getattr(condenser, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
