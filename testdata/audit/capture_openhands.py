"""Capture real OpenHands SDK session stores for `concord audit`'s tests.

The pinned SDK (bindings/python) runs plain agents (no Concord) with the real
file_editor and terminal tools against the scripted fake model of the binding
tests (bindings/python/tests/fake_llm.py, 127.0.0.1), each conversation
persisted with persistence_dir. The stores land in
testdata/audit/sessions/openhands/<conversation id>/ (base_state.json, events/).

    cd bindings/python && .venv/bin/python ../../testdata/audit/capture_openhands.py

The first two scenarios are also saved as the model received them, an
OpenAI-format message list (the fake model's last request and its answer),
in testdata/audit/sessions/openai/openhands-<scenario>.json.

The workspace is /tmp/concord-audit/openhands (removed first), so the paths
in the stores are the same on every run.
"""

from __future__ import annotations

import json
import shutil
import sys
import uuid
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "bindings/python/tests"))

from pydantic import SecretStr  # noqa: E402

from openhands.sdk import LLM, Agent, Conversation, Tool  # noqa: E402
from openhands.sdk.context.condenser import LLMSummarizingCondenser  # noqa: E402
from openhands.tools.file_editor import FileEditorTool  # noqa: E402
from openhands.tools.terminal import TerminalTool  # noqa: E402

from fake_llm import FakeLLM, Reply  # noqa: E402

WS = Path("/tmp/concord-audit/openhands")
OUT = HERE / "sessions" / "openhands"
OPENAI = HERE / "sessions" / "openai"


def config(n: int = 20) -> str:
    return "".join(f"setting_{i} = {i}\n" for i in range(1, n + 1))


def run(name: str, files: dict[str, str], script, condense: int = 0, openai: bool = False) -> None:
    ws = WS / name
    ws.mkdir(parents=True)
    for rel, text in files.items():
        (ws / rel).write_text(text)
    # untooled: the condenser's summary requests (no tools) get this text.
    with FakeLLM(script(ws), untooled="Summary: the agent viewed and edited the config.") as fake:
        def llm(usage_id: str) -> LLM:
            return LLM(usage_id=usage_id, model="openai/fake", base_url=fake.base_url, api_key=SecretStr("sk-fake"),
                       api_mode="chat", num_retries=0, timeout=30)
        condenser = None
        if condense:
            # Past `condense` events the SDK's own summarizing condenser forgets the older half.
            condenser = LLMSummarizingCondenser(llm=llm("condenser"), max_size=condense, keep_first=2)
        agent = Agent(llm=llm("agent"), tools=[Tool(name=FileEditorTool.name), Tool(name=TerminalTool.name)],
                      condenser=condenser)
        cid = uuid.uuid5(uuid.NAMESPACE_URL, "concord-audit/" + name)
        conv = Conversation(agent=agent, workspace=str(ws), visualizer=None, persistence_dir=str(OUT),
                            conversation_id=cid)
        try:
            conv.send_message("Please fix the config.")
            conv.run()
            fake.check()
        finally:
            conv.close()
        if openai:
            # The same session as the model received it: the last request's messages (OpenAI
            # chat format, through litellm) and the model's last answer.
            last = fake.requests[-1]
            answer = fake._completion(Reply.finish(), "fake")["choices"][0]["message"]
            OPENAI.mkdir(parents=True, exist_ok=True)
            (OPENAI / f"openhands-{name}.json").write_text(
                json.dumps({"id": f"openhands-{name}", "messages": last.messages + [answer]}, indent=1) + "\n")
    print(name, cid)


def read_edit_read(ws: Path):
    f = str(ws / "config.py")
    return [
        lambda r: Reply.call("call_1", "file_editor", command="view", path=f),
        lambda r: Reply.call("call_2", "file_editor", command="str_replace", path=f,
                             old_str="setting_5 = 5\n", new_str="setting_5 = 50\nsetting_5b = 51\n"),
        lambda r: Reply.call("call_3", "file_editor", command="view", path=f, view_range=[1, 10]),
        lambda r: Reply.call("call_4", "file_editor", command="insert", path=f, insert_line=0,
                             new_str="# tuned\n"),
        lambda r: Reply.call("call_5", "terminal", command=f"grep -n setting_1 {f}"),
        lambda r: Reply.finish(),
    ]


def changed_outside(ws: Path):
    f = ws / "app.py"

    def change(r):
        # Out of band, between two model calls: a line changed, one added above.
        f.write_text("import os\n" + config(12).replace("setting_8 = 8", "setting_8 = 'eight'"))
        return Reply.call("call_2", "terminal", command=f"cat -n {f}")

    return [
        lambda r: Reply.call("call_1", "file_editor", command="view", path=str(f), view_range=[6, 10]),
        change,
        lambda r: Reply.call("call_3", "file_editor", command="str_replace", path=str(f),
                             old_str="setting_3 = 3", new_str="setting_3 = 'three'"),
        lambda r: Reply.finish(),
    ]


def condensed(ws: Path):
    f = str(ws / "config.py")
    return [
        lambda r: Reply.call("call_1", "file_editor", command="view", path=f),
        lambda r: Reply.call("call_2", "file_editor", command="str_replace", path=f,
                             old_str="setting_2 = 2\n", new_str="setting_2 = 20\n"),
        lambda r: Reply.call("call_3", "file_editor", command="view", path=f, view_range=[10, 14]),
        lambda r: Reply.call("call_4", "file_editor", command="str_replace", path=f,
                             old_str="setting_12 = 12\n", new_str="setting_12 = 120\n"),
        lambda r: Reply.call("call_5", "file_editor", command="view", path=f, view_range=[1, 4]),
        lambda r: Reply.call("call_6", "file_editor", command="view", path=f, view_range=[15, 18]),
        lambda r: Reply.call("call_7", "file_editor", command="view", path=f, view_range=[5, 8]),
        lambda r: Reply.finish(),
    ]


def main() -> None:
    shutil.rmtree(WS, ignore_errors=True)
    shutil.rmtree(OUT, ignore_errors=True)
    shutil.rmtree(OPENAI, ignore_errors=True)
    run("read-edit-read", {"config.py": config()}, read_edit_read, openai=True)
    run("changed-outside", {"app.py": config(12)}, changed_outside, openai=True)
    run("condensed", {"config.py": config()}, condensed, condense=8)


if __name__ == "__main__":
    main()
