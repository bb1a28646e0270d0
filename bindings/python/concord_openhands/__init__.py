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

# The OpenHands SDK this binding is tested with (requirements-test.txt), for the hint below.
SDK_PINS = "openhands-sdk==1.58.2 openhands-tools==1.58.2"
_SDK_MODULES = ("openhands", "httpx", "pydantic")  # what the condenser imports of the SDK's


def _condenser() -> Any:
    """The condenser module; an ImportError that says what to install when the SDK or the
    Python it needs is missing (it surfaced as `No module named 'httpx'`)."""
    if sys.version_info < (3, 12):
        raise ImportError(
            f"concord_openhands.ConcordCondenser needs Python 3.12 or newer (the OpenHands SDK does); "
            f"this is Python {sys.version_info.major}.{sys.version_info.minor} ({sys.executable}). "
            f"In a Python 3.12+ environment: pip install <the concord_openhands wheel> {SDK_PINS}")
    try:
        from . import condenser
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in _SDK_MODULES:
            raise
        raise ImportError(
            f"concord_openhands.ConcordCondenser needs the OpenHands SDK ({exc}): pip install {SDK_PINS}",
            name=exc.name) from exc
    return condenser


if "openhands.sdk" in sys.modules:
    # An agent server run with `--import-modules concord_openhands`: define the condenser now,
    # so its `kind` resolves when the server validates an agent that names it.
    ConcordCondenser = _condenser().ConcordCondenser
    ConcordNotOnServer = _condenser().ConcordNotOnServer


def __getattr__(name: str) -> Any:
    if name in ("ConcordCondenser", "ConcordNotOnServer"):
        return getattr(_condenser(), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
