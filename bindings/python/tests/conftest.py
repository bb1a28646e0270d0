"""Shared fixtures. The environment is set before anything imports litellm:
LITELLM_LOCAL_MODEL_COST_MAP keeps litellm from fetching its cost map, and a
socket guard fails any connection that is not to this machine."""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")

sys.path.insert(0, str(Path(__file__).resolve().parent))

_LOCAL = ("127.0.0.1", "::1", "localhost")
NETWORK_ATTEMPTS: list[object] = []
_connect = socket.socket.connect
_connect_ex = socket.socket.connect_ex


def _guard(addr: object) -> None:
    if isinstance(addr, tuple) and addr and addr[0] not in _LOCAL:
        NETWORK_ATTEMPTS.append(addr)
        raise OSError(f"tests must not reach the network (tried {addr!r})")


def _guarded_connect(self: socket.socket, addr: object) -> None:
    _guard(addr)
    return _connect(self, addr)


def _guarded_connect_ex(self: socket.socket, addr: object) -> int:
    _guard(addr)
    return _connect_ex(self, addr)


socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
socket.socket.connect_ex = _guarded_connect_ex  # type: ignore[method-assign]


def _concord_bin() -> str | None:
    env = os.environ.get("CONCORD_BIN")
    if env:
        return env
    guess = Path(__file__).resolve().parents[3] / "bin" / "concord"
    return str(guess)


@pytest.fixture(scope="session")
def concord_bin() -> str:
    """The real `concord` binary; tests that need a server skip without it."""
    path = _concord_bin()
    if not path or not (os.path.isfile(path) and os.access(path, os.X_OK)):
        pytest.skip(
            f"concord binary not built at {path!r}: run `make build` in the repo root "
            "or set CONCORD_BIN=/abs/path/to/concord"
        )
    return path


@pytest.fixture(scope="session", autouse=True)
def _shell_home(tmp_path_factory: pytest.TempPathFactory):
    """The SDK's terminal tool runs an interactive bash in tmux, which reads
    ~/.bashrc. Point HOME at an empty directory so the machine's startup files
    cannot decide the terminal tests: a `pyenv init` there waited a minute on
    a stale rehash lock, past the tool's 30 s, and failed every terminal test."""
    home = tmp_path_factory.mktemp("home")
    (home / ".bashrc").write_text("# concord tests: no user startup files\n")
    old = os.environ.get("HOME")
    os.environ["HOME"] = str(home)
    yield home
    if old is None:
        os.environ.pop("HOME", None)
    else:
        os.environ["HOME"] = old


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    # Resolve symlinks (/tmp may be one) so the paths tools report match the roots.
    return ws.resolve()


@pytest.fixture(autouse=True)
def _no_network() -> None:
    before = len(NETWORK_ATTEMPTS)
    yield
    assert len(NETWORK_ATTEMPTS) == before, f"network reached: {NETWORK_ATTEMPTS[before:]}"
