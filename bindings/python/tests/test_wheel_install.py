"""The wheel as a user gets it: `make dist-test` creates a fresh venv, pip-installs the wheel
from `make dist` (plus the pinned SDK), and runs this file with CONCORD_WHEEL set to that
wheel. A user's program with the two documented lines (the import and the condenser on the
Agent), run as its own process with no CONCORD_BIN and no concord on PATH, must get a repaired
read: the binary comes from inside the wheel.

The normal test run (the editable install of `make test`) skips this file.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

WHEEL = os.environ.get("CONCORD_WHEEL", "")
if not WHEEL:
    pytest.skip(
        "CONCORD_WHEEL is not set: this tests an installed wheel (run `make dist-test` in the repo root)",
        allow_module_level=True,
    )
if sys.version_info < (3, 12):
    pytest.skip(
        f"the OpenHands SDK needs Python >= 3.12 (this is {sys.version.split()[0]})",
        allow_module_level=True,
    )

from fake_llm import FakeLLM, Reply, Request  # noqa: E402
from formats import cat_n  # noqa: E402

SOURCE = Path(__file__).resolve().parents[1]  # bindings/python: what the wheel must not come from

# What a user writes: their LLM and tools, then the two lines of the README.
USER_PROGRAM = """\
import os, sys
from pydantic import SecretStr
from openhands.sdk import LLM, Agent, Conversation, Tool
from openhands.tools.file_editor import FileEditorTool

from concord_openhands import ConcordCondenser

workspace = sys.argv[1]
llm = LLM(usage_id="agent", model="openai/fake", base_url=os.environ["FAKE_LLM_URL"],
          api_key=SecretStr("sk-fake"), api_mode="chat", num_retries=0, timeout=30)
tools = [Tool(name=FileEditorTool.name)]
agent = Agent(llm=llm, tools=tools, condenser=ConcordCondenser(roots=[workspace]))

conversation = Conversation(agent=agent, workspace=workspace, visualizer=None)
conversation.send_message("Please look at the config.")
conversation.run()

import concord_openhands
print(json.dumps({"status": conversation.state.execution_status.value,
                  "package": concord_openhands.__file__,
                  "binary": concord_openhands.find_binary()}))
""".replace("import os, sys", "import json, os, sys")


def user_env() -> dict[str, str]:
    """This environment as a fresh user's: no CONCORD_BIN, no concord on PATH, no PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("CONCORD_BIN", "PYTHONPATH")}
    keep = []
    for d in env.get("PATH", "").split(os.pathsep):
        c = Path(d or ".") / "concord"
        if not (c.is_file() and os.access(c, os.X_OK)):
            keep.append(d)
    env["PATH"] = os.pathsep.join(keep)
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    env["OPENHANDS_SUPPRESS_BANNER"] = "1"
    return env


def installed_binary() -> Path:
    dist = metadata.distribution("concord-openhands")
    files = [f for f in dist.files or [] if str(f).replace("\\", "/") == "concord_openhands/bin/concord"]
    assert files, f"concord_openhands/bin/concord is not among the installed files of {dist._path}"  # noqa: SLF001
    return Path(dist.locate_file(files[0])).resolve()


def test_the_wheel_carries_the_binary_and_the_licence():
    with zipfile.ZipFile(WHEEL) as whl:
        names = whl.namelist()
        info = whl.getinfo("concord_openhands/bin/concord")
        assert (info.external_attr >> 16) & 0o111, "the binary is stored executable"
        meta = next(n for n in names if n.endswith(".dist-info/METADATA"))
        text = whl.read(meta).decode()
        wheel_file = whl.read(meta.replace("METADATA", "WHEEL")).decode()
    assert "License-Expression: Apache-2.0" in text, text[:600]
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), names
    assert "Root-Is-Purelib: false" in wheel_file, wheel_file
    assert "Tag: py3-none-any" not in wheel_file, "a wheel with a binary is platform-tagged"

    binary = installed_binary()
    assert sys.prefix in str(binary), f"{binary} is not inside this venv ({sys.prefix})"
    assert SOURCE not in binary.parents, f"{binary} comes from the source tree, not the wheel"
    out = subprocess.run([str(binary), "version"], capture_output=True, text=True, timeout=30, check=True)
    version = metadata.version("concord-openhands")
    assert out.stdout.startswith(f"concord {version} "), out.stdout


def test_two_lines_give_a_repaired_read(tmp_path):
    workspace = (tmp_path / "project").resolve()
    workspace.mkdir()
    f = workspace / "config.txt"
    old = [f"line {i}: value {i} of the config" for i in range(1, 21)]
    new = list(old)
    new[6] = "line 7: value SEVEN of the config"
    f.write_text("\n".join(old) + "\n")

    def change_file(req: Request) -> Reply:
        assert req.tool_result("call_1") == cat_n(str(f), old)
        f.write_text("\n".join(new) + "\n")  # out of band, between two model calls
        return Reply.call("call_2", "think", thought="let me think about the config")

    def expect_repaired(req: Request) -> Reply:
        # The default placement, auto: the read the model saw stays byte-identical (the
        # provider's cache holds), and the erratum after the newest message carries the change.
        assert req.tool_result("call_1") == cat_n(str(f), old)
        note = req.tool_result("call_2").split("[concord] ", 1)
        assert len(note) == 2 and "call_1" in note[1], req.tool_result("call_2")
        assert "+7: line 7: value SEVEN of the config" in note[1], note[1]
        return Reply.finish()

    program = tmp_path / "agent.py"
    program.write_text(USER_PROGRAM)
    with FakeLLM(
        [lambda r: Reply.call("call_1", "file_editor", command="view", path=str(f)), change_file, expect_repaired]
    ) as fake:
        env = user_env()
        env["FAKE_LLM_URL"] = fake.base_url
        # Its own directory as cwd: nothing of the source tree is importable.
        proc = subprocess.run(
            [sys.executable, str(program), str(workspace)],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        fake.check()
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["status"] == "finished", result
    assert Path(result["binary"]).resolve() == installed_binary(), result
    assert Path(sys.prefix).resolve() in Path(result["package"]).resolve().parents, result
    assert "context repair unavailable" not in proc.stderr, proc.stderr[-3000:]
