"""Start a real `openhands-agent-server` on 127.0.0.1 the way the sandbox image
(docker/Dockerfile) starts it, with the host standing in for the container:
the image's build context made by docker/context.sh, its ENV lines with
/opt/concord mapped to that context, and its ENTRYPOINT with the PyInstaller
binary replaced by `python -m openhands.agent_server`. Shared by the e2e test
and bench/agent_server_overhead.py."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

PKG = Path(__file__).resolve().parents[1]
DOCKER = PKG / "docker"
BASE_ENTRYPOINT = ["tini", "--", "/usr/local/bin/openhands-agent-server"]
IMAGE_ROOT = "/opt/concord"


def dockerfile() -> tuple[dict[str, str], list[str]]:
    """The Dockerfile's ENV settings and its ENTRYPOINT (exec form)."""
    env: dict[str, str] = {}
    entrypoint: list[str] = []
    for line in (DOCKER / "Dockerfile").read_text().splitlines():
        if line.startswith("ENV "):
            key, _, value = line[4:].strip().partition("=")
            env[key] = value
        elif line.startswith("ENTRYPOINT "):
            entrypoint = json.loads(line[len("ENTRYPOINT "):])
    return env, entrypoint


def build_context(out: Path, concord_bin: str) -> Path:
    """Run docker/context.sh (as `make docker-context` does) into `out`."""
    subprocess.run([str(DOCKER / "context.sh"), str(out), concord_bin], check=True, capture_output=True)
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]



STARTUP_S = 240  # the longest wait for the agent server to answer /health

class AgentServer:
    """One agent-server subprocess; `with` starts it and waits for /health."""

    def __init__(self, cwd: Path, *, context: Path | None, log: Path, probe: Path | None = None) -> None:
        self.port = free_port()
        env = dict(os.environ)
        env.pop("CONCORD_BIN", None)  # the image has none: the binary is found next to the package
        # No VSCode and no tool preload (a Chromium check): seconds off each start.
        env.update(OH_ENABLE_VSCODE="false", OH_PRELOAD_TOOLS="false")
        argv = [sys.executable, "-m", "openhands.agent_server"]
        if context is not None:
            image_env, entrypoint = dockerfile()
            assert entrypoint[: len(BASE_ENTRYPOINT)] == BASE_ENTRYPOINT, entrypoint
            argv += entrypoint[len(BASE_ENTRYPOINT):]
            for key, value in image_env.items():
                env[key] = value.replace(IMAGE_ROOT, str(context))
            if probe is not None:  # a benchmark's module, imported after concord_openhands
                i = argv.index("--import-modules") + 1
                argv[i] += "," + probe.stem
                argv += ["--extra-python-path", str(probe.parent)]
        argv += ["--host", "127.0.0.1", "--port", str(self.port)]  # DockerWorkspace adds these
        self.argv = argv
        self.log = log
        self._out = open(log, "wb")
        self.proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=self._out, stderr=subprocess.STDOUT)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> AgentServer:
        # Its start imports the whole SDK; on a loaded 2-core machine that
        # was seen to take just over 60 s. A wait on a condition, not a timing.
        deadline = time.monotonic() + STARTUP_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"agent server exited {self.proc.returncode}: {self.log.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=1) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.2)
        self.__exit__()
        raise RuntimeError(f"agent server not healthy in {STARTUP_S} s: {self.log.read_text()[-2000:]}")

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(5)
        self._out.close()


def concord_serve_descendants(root: int) -> list[int]:
    """Pids of live `concord serve` processes below `root` (any depth)."""
    children: dict[int, list[int]] = {}
    cmd: dict[int, list[bytes]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()
            argv = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if stat[0] == "Z":
            continue
        children.setdefault(int(stat[1]), []).append(int(name))
        cmd[int(name)] = argv
    out, todo = [], [root]
    while todo:
        for pid in children.get(todo.pop(), []):
            todo.append(pid)
            argv = cmd.get(pid, [])
            if len(argv) > 1 and argv[0].endswith(b"concord") and argv[1] == b"serve":
                out.append(pid)
    return out


def wait_for_none(root: int, timeout: float = 10.0) -> list[int]:
    """Wait until no `concord serve` is left below `root`; what is left."""
    deadline = time.monotonic() + timeout
    left = concord_serve_descendants(root)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = concord_serve_descendants(root)
    return left
