"""The agent-server setup, for real: `openhands-agent-server` 1.58.2 runs as a
subprocess on 127.0.0.1, started as the sandbox image starts it (the image's
context, ENV and ENTRYPOINT; see agent_server.py), and rebuilds the agent, its
ConcordCondenser included, from what the client's RemoteConversation sends.
The condenser and `concord serve` run in the server; the model is the scripted
fake on 127.0.0.1, whose captured requests show the repairs. Files change
mid-session: the agent's own edit, an outside write, a deletion."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

if sys.version_info < (3, 12):
    pytest.skip("the OpenHands SDK needs Python >= 3.12", allow_module_level=True)

from openhands.sdk import Agent, Conversation, Tool  # noqa: E402
from openhands.sdk.workspace import RemoteWorkspace  # noqa: E402

from concord_openhands import ConcordCondenser, ConcordNotOnServer  # noqa: E402
from agent_server import DOCKER, AgentServer, build_context, concord_serve_descendants, dockerfile, wait_for_none  # noqa: E402
from fake_llm import FakeLLM, Reply, Request  # noqa: E402
from formats import cat_n  # noqa: E402
from test_openhands_e2e import make_llm, numbered, tool_texts, write  # noqa: E402


@pytest.fixture
def context(tmp_path, concord_bin) -> Path:
    return build_context(tmp_path / "image", concord_bin)


def remote_conversation(server: AgentServer, fake: FakeLLM, workspace: Path):
    agent = Agent(
        llm=make_llm(fake),
        tools=[Tool(name="file_editor")],
        # binary=None: the server finds it next to the package, as in the image.
        condenser=ConcordCondenser(roots=[str(workspace)], placement="inplace"),
    )
    ws = RemoteWorkspace(host=server.url, working_dir=str(workspace))
    return Conversation(agent=agent, workspace=ws, visualizer=None)


def test_image_layout_and_entrypoint(context):
    """What the Dockerfile relies on, checked without Docker."""
    env, entrypoint = dockerfile()
    assert entrypoint[-2:] == ["--import-modules", "concord_openhands"]
    assert env["OH_EXTRA_PYTHON_PATH"] == "/opt/concord/python"
    text = (DOCKER / "Dockerfile").read_text()
    assert "FROM ghcr.io/openhands/agent-server:${OPENHANDS_VERSION}-python" in text
    pins = dict(ln.split("==") for ln in (DOCKER.parent / "requirements-test.txt").read_text().splitlines()
                if "==" in ln)
    # The image validates what this SDK serializes: the same release.
    assert pins["openhands-agent-server"] == pins["openhands-sdk"]
    assert f"ARG OPENHANDS_VERSION={pins['openhands-sdk']}" in text
    assert "COPY build/python /opt/concord/python" in text
    pkg = context / "python" / "concord_openhands"
    assert (pkg / "__init__.py").is_file() and (pkg / "condenser.py").is_file()
    assert (pkg / "bin" / "concord").stat().st_mode & 0o111


def test_agent_server_repairs_edits_outside_writes_and_deletions(tmp_path, workspace, context):
    a, b, c = workspace / "a.txt", workspace / "b.txt", workspace / "c.txt"
    for f in (a, b, c):
        write(f, numbered(6))
    a_new = numbered(6)
    a_new[1] = "line 2: edited by the agent"
    b_new = numbered(6)
    b_new[3] = "line 4: written outside the agent"
    live: dict[str, list[int]] = {}

    def view_three(req: Request) -> Reply:
        return Reply(tool_calls=[(f"call_{n}", "file_editor", {"command": "view", "path": str(f)})
                                 for n, f in ((1, a), (2, b), (3, c))])

    def agent_edits(req: Request) -> Reply:
        assert req.tool_result("call_1") == cat_n(str(a), numbered(6))
        return Reply.call("call_4", "file_editor", command="str_replace", path=str(a),
                          old_str="line 2: value 2 of the config", new_str="line 2: edited by the agent")

    def outside_changes(req: Request) -> Reply:
        # The agent's own edit: its earlier view of a.txt now shows the edit.
        assert req.tool_result("call_1") == cat_n(str(a), a_new)
        write(b, b_new)
        c.unlink()
        live["during"] = concord_serve_descendants(server.proc.pid)
        return Reply.call("call_5", "think", thought="the files may have changed")

    def expect_repairs(req: Request) -> Reply:
        assert req.tool_result("call_2") == cat_n(str(b), b_new)
        gone = req.tool_result("call_3")
        assert gone.startswith("[concord]") and str(c) in gone, gone
        assert "value 4 of" not in req.tool_result("call_2")
        assert "value 2 of" not in req.tool_result("call_1")
        assert "value" not in gone, tool_texts(req)
        return Reply.finish()

    with AgentServer(tmp_path, context=context, log=tmp_path / "server.log") as server:
        with FakeLLM([view_three, agent_edits, outside_changes, expect_repairs], untooled="Files") as fake:
            conv = remote_conversation(server, fake, workspace)
            try:
                conv.send_message("Please look at the files.")
                conv.run(poll_interval=0.2, timeout=120)
                fake.check()
                assert conv.state.execution_status.value == "finished", conv.state.execution_status
            finally:
                conv.close()
        assert len(live["during"]) == 1, live  # the condenser ran in the server, with one concord
        assert wait_for_none(server.proc.pid) == [], "concord serve left after conversation.close()"
        assert server.proc.poll() is None  # the server itself runs on
    assert a.read_text() == "\n".join(a_new) + "\n"  # the edit happened, in the server


def test_server_without_the_module_refuses_clearly(tmp_path, workspace):
    with AgentServer(tmp_path, context=None, log=tmp_path / "server.log") as server:
        with FakeLLM([]) as fake:
            with pytest.raises(ConcordNotOnServer) as err:
                remote_conversation(server, fake, workspace)
    msg = str(err.value)
    assert server.url in msg and "--import-modules concord_openhands" in msg, msg
    assert "OH_EXTRA_PYTHON_PATH" in msg and "bindings/python/docker" in msg, msg
    assert err.value.response.status_code == 422
    assert "Unknown kind 'ConcordCondenser'" in err.value.response.text
