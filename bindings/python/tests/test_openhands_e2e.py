"""The acceptance test: the real OpenHands SDK (Conversation, Agent, LLM and the
real file_editor / read_file tools) talks through litellm to a scripted fake
model on 127.0.0.1, with ConcordCondenser wired in and the real `concord serve`
behind it. Between two model calls a file changes; the next request the model
receives must carry the repaired text in place of the stale tool result, and
nothing stale.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import uuid
from pathlib import Path

import pytest

if sys.version_info < (3, 12):
    pytest.skip(
        f"the OpenHands SDK needs Python >= 3.12 (this is {sys.version.split()[0]}); "
        "see bindings/python/README.md for getting 3.12 (pyenv install 3.12, or python3.12 on PATH)",
        allow_module_level=True,
    )

from pydantic import SecretStr  # noqa: E402

from openhands.sdk import LLM, Agent, Conversation, Tool  # noqa: E402
from openhands.sdk.context.condenser import LLMSummarizingCondenser, PipelineCondenser  # noqa: E402
from openhands.sdk.event import ObservationEvent  # noqa: E402
from openhands.tools.file_editor import FileEditorTool  # noqa: E402
from openhands.tools.gemini.read_file.definition import ReadFileTool  # noqa: E402

from concord_openhands import ConcordCondenser  # noqa: E402
from concord_openhands.session import WARNING_PREFIX  # noqa: E402
from fake_llm import FakeLLM, Reply, Request  # noqa: E402
from formats import cat_n, read_file_out  # noqa: E402


# -- helpers -------------------------------------------------------------------


def numbered(n: int) -> list[str]:
    return [f"line {i}: value {i} of the config" for i in range(1, n + 1)]


def write(path: Path, lines: list[str]) -> None:
    path.write_text("\n".join(lines) + "\n")


def make_llm(fake: FakeLLM, usage_id: str = "agent") -> LLM:
    return LLM(
        usage_id=usage_id,
        model="openai/fake",
        base_url=fake.base_url,
        api_key=SecretStr("sk-fake"),
        api_mode="chat",
        num_retries=0,
        timeout=30,
    )


def make_conversation(
    fake: FakeLLM,
    workspace: Path,
    condenser,
    *,
    tools: tuple[str, ...] = (FileEditorTool.name,),
    persistence_dir: Path | None = None,
    conversation_id: uuid.UUID | None = None,
):
    agent = Agent(llm=make_llm(fake), tools=[Tool(name=t) for t in tools], condenser=condenser)
    conv = Conversation(
        agent=agent,
        workspace=str(workspace),
        visualizer=None,
        persistence_dir=str(persistence_dir) if persistence_dir else None,
        conversation_id=conversation_id,
    )
    _OPEN.append(conv)
    return conv


_OPEN: list = []


@pytest.fixture(autouse=True)
def _close_conversations():
    """Close every conversation a test opened (terminal sessions, executors)."""
    yield
    while _OPEN:
        _OPEN.pop().close()


def run(conv, fake: FakeLLM, message: str = "Please look at the config.") -> None:
    conv.send_message(message)
    conv.run()
    fake.check()
    assert conv.state.execution_status.value == "finished", conv.state.execution_status


def tool_texts(req: Request) -> str:
    return "\n".join(req.tool_results().values())


def logged_observation(conv, call_id: str) -> str:
    events = [
        e for e in conv.state.events if isinstance(e, ObservationEvent) and e.tool_call_id == call_id
    ]
    assert len(events) == 1
    return events[0].observation.text


def concord_warnings(caplog) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno >= logging.WARNING and WARNING_PREFIX in r.getMessage()
    ]


@pytest.fixture
def condenser(concord_bin, workspace):
    c = ConcordCondenser(roots=[str(workspace)], placement="inplace", binary=concord_bin)
    yield c
    c.close()


# -- scenarios -----------------------------------------------------------------


@pytest.mark.parametrize("view_range", [None, [10, 14]], ids=["whole-file", "range"])
def test_local_edit_is_patched(workspace, condenser, view_range):
    f = workspace / "config.txt"
    old = numbered(30)
    write(f, old)
    if view_range:
        # Out of band: two lines inserted above the range, one word changed in it.
        new = ["# generated", "# do not edit"] + old
        new[2 + 11] = "line 12: value TWELVE of the config"
    else:
        new = list(old)
        new[11] = "line 12: value TWELVE of the config"
    if view_range:
        shown, want = cat_n(str(f), old[9:14], 10), cat_n(str(f), new[11:16], 12)
        args = {"command": "view", "path": str(f), "view_range": view_range}
    else:
        shown, want = cat_n(str(f), old), cat_n(str(f), new)
        args = {"command": "view", "path": str(f)}
    seen: dict[str, Request] = {}

    def change_file(req: Request) -> Reply:
        assert req.tool_result("call_1") == shown  # the real tool's output, as shown
        write(f, new)
        return Reply.call("call_2", "think", thought="let me think about the config")

    def expect_repaired(req: Request) -> Reply:
        seen["3"] = req
        assert req.tool_result("call_1") == want
        assert "value 12 of" not in tool_texts(req)
        return Reply.call("call_3", "think", thought="still thinking")

    def expect_stable(req: Request) -> Reply:
        # The repaired prompt prefix is byte-identical one call later.
        assert req.messages[: len(seen["3"].messages)] == seen["3"].messages
        return Reply.finish()

    with FakeLLM(
        [lambda r: Reply.call("call_1", "file_editor", **args), change_file, expect_repaired, expect_stable]
    ) as fake:
        conv = make_conversation(fake, workspace, condenser)
        run(conv, fake)
    # The event log itself still holds what the tool returned.
    assert logged_observation(conv, "call_1") == shown


def test_rewrite_gets_the_reread_notice(workspace, condenser):
    f = workspace / "main.go"
    old = ["package main", "", "import \"fmt\"", "", "func main() {", '\tfmt.Println("hello")', "}"]
    write(f, old)

    def rewrite(req: Request) -> Reply:
        f.write_text("# notes\n\nThis file is now a markdown document about something else.\n")
        return Reply.call("call_2", "think", thought="ok")

    def expect_notice(req: Request) -> Reply:
        got = req.tool_result("call_1")
        assert got.startswith("[concord]") and str(f) in got and "Re-read" in got, got
        assert "fmt.Println" not in tool_texts(req)
        return Reply.finish()

    with FakeLLM(
        [lambda r: Reply.call("call_1", "file_editor", command="view", path=str(f), view_range=[5, 7]), rewrite, expect_notice]
    ) as fake:
        conv = make_conversation(fake, workspace, condenser)
        run(conv, fake)


def test_rewrite_of_a_whole_file_view_is_refreshed(workspace, condenser):
    # A whole-file view: the re-read a notice would ask for returns exactly the current file.
    f = workspace / "main.go"
    old = ["package main", "", "import \"fmt\"", "", "func main() {", '\tfmt.Println("hello")', "}"]
    new = ["# notes", "", "This file is now a markdown document about something else."]
    write(f, old)

    def rewrite(req: Request) -> Reply:
        write(f, new)
        return Reply.call("call_2", "think", thought="ok")

    def expect_refreshed(req: Request) -> Reply:
        assert req.tool_result("call_1") == cat_n(str(f), new)
        assert "fmt.Println" not in tool_texts(req)
        return Reply.finish()

    with FakeLLM(
        [lambda r: Reply.call("call_1", "file_editor", command="view", path=str(f)), rewrite, expect_refreshed]
    ) as fake:
        conv = make_conversation(fake, workspace, condenser)
        run(conv, fake)


def test_agents_own_edit_updates_its_earlier_read(workspace, condenser):
    f = workspace / "config.txt"
    old = numbered(12)
    write(f, old)
    new = list(old)
    new[4] = "line 5: value FIVE of the config"

    def expect_repaired(req: Request) -> Reply:
        assert req.tool_result("call_1") == cat_n(str(f), new)
        snippet = req.tool_result("call_2")
        assert snippet.startswith(f"The file {f} has been edited.") and "value FIVE" in snippet
        assert "value 5 of" not in tool_texts(req)
        return Reply.finish()

    with FakeLLM(
        [
            lambda r: Reply.call("call_1", "file_editor", command="view", path=str(f)),
            lambda r: Reply.call(
                "call_2", "file_editor", command="str_replace", path=str(f),
                old_str="line 5: value 5 of", new_str="line 5: value FIVE of",
            ),
            expect_repaired,
        ]
    ) as fake:
        conv = make_conversation(fake, workspace, condenser)
        run(conv, fake)
    assert f.read_text() == "\n".join(new) + "\n"


def test_read_file_tool_is_repaired_in_its_own_format(workspace, condenser):
    f = workspace / "notes.txt"
    old = numbered(8)
    write(f, old)
    new = list(old)
    new[2] = "line 3: value THREE of the config"

    def change(req: Request) -> Reply:
        assert req.tool_result("call_1") == read_file_out(str(f), old)
        write(f, new)
        return Reply.call("call_2", "think", thought="hm")

    def expect(req: Request) -> Reply:
        assert req.tool_result("call_1") == read_file_out(str(f), new)
        return Reply.finish()

    with FakeLLM(
        [lambda r: Reply.call("call_1", "read_file", file_path=str(f)), change, expect]
    ) as fake:
        conv = make_conversation(fake, workspace, condenser, tools=(ReadFileTool.name,))
        run(conv, fake)


def test_resumed_conversation_catches_changes_made_while_away(workspace, concord_bin, tmp_path):
    f = workspace / "config.txt"
    old = numbered(10)
    write(f, old)
    persist = tmp_path / "conversations"
    conv_id = uuid.uuid4()

    first = ConcordCondenser(roots=[str(workspace)], placement="inplace", binary=concord_bin)
    with FakeLLM(
        [lambda r: Reply.call("call_1", "file_editor", command="view", path=str(f)), lambda r: Reply.finish()]
    ) as fake:
        conv = make_conversation(fake, workspace, first, persistence_dir=persist, conversation_id=conv_id)
        run(conv, fake)
        conv.close()
    first.close()

    # While the agent is away, the file changes.
    new = list(old)
    new[6] = "line 7: value SEVEN of the config"
    write(f, new)

    def expect_repaired_on_first_call(req: Request) -> Reply:
        assert req.tool_result("call_1") == cat_n(str(f), new)
        assert "value 7 of" not in tool_texts(req)
        return Reply.finish()

    second = ConcordCondenser(roots=[str(workspace)], placement="inplace", binary=concord_bin)
    try:
        with FakeLLM([expect_repaired_on_first_call]) as fake:
            conv = make_conversation(
                fake, workspace, second, persistence_dir=persist, conversation_id=conv_id
            )
            assert logged_observation(conv, "call_1") == cat_n(str(f), old)  # really resumed
            run(conv, fake, "Please continue.")
    finally:
        second.close()


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSTOP], ids=["crash", "hang"])
def test_killed_binary_agent_finishes_with_one_warning(workspace, concord_bin, caplog, sig):
    # SIGSTOP: the server still exists but answers nothing; the call times out.
    condenser = ConcordCondenser(roots=[str(workspace)], placement="inplace", binary=concord_bin, timeout=1.0)
    f = workspace / "config.txt"
    old = numbered(10)
    write(f, old)
    new = list(old)
    new[1] = "line 2: value TWO of the config"

    live: dict[str, object] = {}

    def kill_and_change(req: Request) -> Reply:
        pid = live["conv"].agent.condenser.session.client.pid
        os.kill(pid, sig)
        write(f, new)
        return Reply.call("call_2", "think", thought="hm")

    def after_restart(req: Request) -> Reply:
        # The binding restarted Concord and re-registered what the model was
        # shown; registration verification caught the change.
        assert req.tool_result("call_1") == cat_n(str(f), new)
        return Reply.call("call_3", "think", thought="more")

    with caplog.at_level(logging.INFO):
        with FakeLLM(
            [
                lambda r: Reply.call("call_1", "file_editor", command="view", path=str(f)),
                kill_and_change,
                after_restart,
                lambda r: Reply.finish(),
            ]
        ) as fake:
            conv = live["conv"] = make_conversation(fake, workspace, condenser)
            run(conv, fake)
    condenser.close()
    warnings = concord_warnings(caplog)
    assert len(warnings) == 1, warnings
    assert "stopped answering" in warnings[0]


def test_missing_binary_passes_through(workspace, caplog):
    f = workspace / "config.txt"
    old = numbered(5)
    write(f, old)
    c = ConcordCondenser(roots=[str(workspace)], placement="inplace", binary=str(workspace / "no-such-concord"))

    def change(req: Request) -> Reply:
        write(f, ["something else"])
        return Reply.call("call_2", "think", thought="hm")

    def unchanged(req: Request) -> Reply:
        assert req.tool_result("call_1") == cat_n(str(f), old)  # as without Concord
        return Reply.finish()

    with caplog.at_level(logging.WARNING):
        with FakeLLM(
            [lambda r: Reply.call("call_1", "file_editor", command="view", path=str(f)), change, unchanged]
        ) as fake:
            conv = make_conversation(fake, workspace, c)
            run(conv, fake)
    warnings = concord_warnings(caplog)
    assert len(warnings) == 1 and "no-such-concord" in warnings[0], warnings


def test_composes_in_a_pipeline_before_a_summarizer(workspace, concord_bin):
    f = workspace / "config.txt"
    old = numbered(6)
    write(f, old)
    new = list(old)
    new[0] = "line 1: value ONE of the config"

    def change(req: Request) -> Reply:
        write(f, new)
        return Reply.call("call_2", "think", thought="hm")

    def expect(req: Request) -> Reply:
        assert req.tool_result("call_1") == cat_n(str(f), new)
        return Reply.finish()

    with FakeLLM(
        [lambda r: Reply.call("call_1", "file_editor", command="view", path=str(f)), change, expect]
    ) as fake:
        concord = ConcordCondenser(roots=[str(workspace)], placement="inplace", binary=concord_bin)
        summarizer = LLMSummarizingCondenser(llm=make_llm(fake, "condenser"), max_size=80, keep_first=2)
        try:
            conv = make_conversation(
                fake, workspace, PipelineCondenser(condensers=[concord, summarizer])
            )
            run(conv, fake)
        finally:
            concord.close()


def test_condense_is_memoized_read_only_and_releases(workspace, condenser):
    f = workspace / "config.txt"
    old = numbered(8)
    write(f, old)
    with FakeLLM(
        [lambda r: Reply.call("call_1", "file_editor", command="view", path=str(f)), lambda r: Reply.finish()]
    ) as fake:
        conv = make_conversation(fake, workspace, condenser)
        run(conv, fake)
    view = conv.state.view
    original = list(view.events)
    new = list(old)
    new[3] = "line 4: value FOUR of the config"
    write(f, new)
    first = condenser.condense(view)
    second = condenser.condense(view)
    assert view.events == original  # the SDK's cached view was not touched

    def obs(v):
        return next(e for e in v.events if isinstance(e, ObservationEvent) and e.tool_call_id == "call_1")

    assert obs(first).observation.text == cat_n(str(f), new)
    assert obs(first).id == obs(view).id and obs(first).tool_call_id == "call_1"
    assert obs(second) is obs(first)  # memoized: a byte-stable prompt
    assert condenser.session.stats()["blocks"].get("patched") == 1
    # The tool result leaves the view (a summariser forgot it): its block is released.
    pruned = view.model_copy(update={"events": [e for e in view.events if e is not obs(view)]})
    assert condenser.condense(pruned).events == pruned.events
    blocks = condenser.session.stats()["blocks"]
    assert not blocks.get("patched") and not blocks.get("valid"), blocks


def test_condenser_serializes_with_the_agent():
    from openhands.sdk.context.condenser import CondenserBase

    c = ConcordCondenser(roots="/w", agent_name="main", watch="poll")
    dumped = c.model_dump()
    assert dumped["kind"] == "ConcordCondenser" and dumped["roots"] == ["/w"]
    back = CondenserBase.model_validate(dumped)
    assert isinstance(back, ConcordCondenser) and back.watch == "poll"
    import copy

    assert copy.deepcopy(c).roots == ["/w"]  # runtime state is not copied, config is


def test_newer_read_supersedes_the_older_one(workspace, condenser):
    f = workspace / "config.txt"
    old = numbered(6)
    write(f, old)
    view = {"command": "view", "path": str(f)}

    def expect(req: Request) -> Reply:
        assert req.tool_result("call_2") == cat_n(str(f), old)
        first = req.tool_result("call_1")
        assert first.startswith("[concord]") and "newer read" in first, first
        return Reply.finish()

    with FakeLLM(
        [lambda r: Reply.call("call_1", "file_editor", **view),
         lambda r: Reply.call("call_2", "file_editor", **view), expect]
    ) as fake:
        conv = make_conversation(fake, workspace, condenser)
        run(conv, fake)


def test_terminal_write_is_caught_and_the_command_left_alone(workspace, condenser):
    from openhands.tools.terminal import TerminalTool

    f = workspace / "config.txt"
    old = numbered(10)
    write(f, old)
    new = list(old)
    new[7] = "line 8: value EIGHT of the config"

    seen: dict[str, str] = {}

    def expect(req: Request) -> Reply:
        assert req.tool_result("call_1") == cat_n(str(f), new)
        seen["command"] = req.tool_result("call_2")
        return Reply.finish()

    with FakeLLM(
        [
            lambda r: Reply.call("call_1", "file_editor", command="view", path=str(f)),
            lambda r: Reply.call(
                "call_2", "terminal", command=f"sed -i 's/value 8 of/value EIGHT of/' {f}"
            ),
            expect,
        ]
    ) as fake:
        conv = make_conversation(
            fake, workspace, condenser, tools=(FileEditorTool.name, TerminalTool.name)
        )
        run(conv, fake)
    assert f.read_text() == "\n".join(new) + "\n"
    # The command's result is an event: what the tool logged reaches the model
    # untouched (the pane may echo the command itself, so no content check).
    assert "[concord]" not in seen["command"], seen["command"]
    assert logged_observation(conv, "call_2") in seen["command"]


def test_gemini_and_patch_writes_are_reported(workspace, condenser):
    from openhands.sdk.event import ActionEvent
    from openhands.tools.apply_patch.definition import ApplyPatchTool
    from openhands.tools.gemini.edit.definition import EditTool
    from openhands.tools.gemini.write_file.definition import WriteFileTool

    from concord_openhands.condenser import tool_call
    from concord_openhands.session import ConcordSession

    f = workspace / "config.txt"
    old = numbered(10)
    write(f, old)
    new = list(old)
    new[2] = "line 3: value THREE of the config"
    new[5] = "line 6: value SIX of the config"
    patch = "\n".join([
        "*** Begin Patch",
        "*** Update File: config.txt",
        "@@",
        " line 5: value 5 of the config",
        "-line 6: value 6 of the config",
        "+line 6: value SIX of the config",
        " line 7: value 7 of the config",
        "*** End Patch",
    ])

    def expect(req: Request) -> Reply:
        assert req.tool_result("call_1") == cat_n(str(f), new)
        return Reply.finish()

    with FakeLLM(
        [
            lambda r: Reply.call("call_1", "file_editor", command="view", path=str(f)),
            lambda r: Reply.call("call_2", "edit", file_path=str(f),
                                 old_string="value 3 of", new_string="value THREE of"),
            lambda r: Reply.call("call_3", "write_file", file_path=str(workspace / "new.txt"),
                                 content="fresh\n"),
            lambda r: Reply.call("call_4", "apply_patch", patch=patch),
            expect,
        ]
    ) as fake:
        conv = make_conversation(
            fake, workspace, condenser,
            tools=(FileEditorTool.name, EditTool.name, WriteFileTool.name, ApplyPatchTool.name),
        )
        run(conv, fake)
    assert f.read_text() == "\n".join(new) + "\n"
    # The server's recognizer names, for each real observation, the files it wrote.
    actions = {e.id: e for e in conv.state.events if isinstance(e, ActionEvent)}
    writes = {}
    probe = ConcordSession([str(workspace)], binary=condenser.binary, agent="probe")
    for e in conv.state.events:
        if isinstance(e, ObservationEvent) and e.tool_call_id in ("call_2", "call_3", "call_4"):
            assert not e.observation.is_error, e.observation.text
            args = json.loads(actions[e.action_id].tool_call.arguments)
            res = probe.recognize(e.tool_call_id, tool_call(e, args, str(workspace)), turn=9)
            assert res is not None and res["kind"] == "write", res
            writes[e.tool_call_id] = res["writes"]
    probe.close()
    uri = lambda p: p.as_uri()  # noqa: E731
    assert writes == {"call_2": [uri(f)], "call_3": [uri(workspace / "new.txt")], "call_4": [uri(f)]}
    assert condenser.stats()["writes"] == 3


def test_clipped_view_repairs_its_head_and_keeps_the_clip_notice(workspace, condenser):
    from openhands.tools.file_editor.utils.constants import TEXT_FILE_CONTENT_TRUNCATED_NOTICE

    from formats import cat_n_head

    f = workspace / "big.txt"
    old = numbered(1000)  # ~32 KB: the tool clips its output at 16,000 characters
    write(f, old)
    new = list(old)
    new[9] = "line 10: value TEN of the config"
    head: dict[str, int] = {}

    def change(req: Request) -> Reply:
        start, k, clipped = cat_n_head(req.tool_result("call_1"))
        assert clipped and start == 1
        head["k"] = k
        write(f, new)
        return Reply.call("call_2", "think", thought="hm")

    def expect(req: Request) -> Reply:
        k = head["k"]
        body = "".join(f"{i:6}\t{new[i - 1]}\n" for i in range(1, k + 1))
        want = f"Here's the result of running `cat -n` on {f}:\n{body}{TEXT_FILE_CONTENT_TRUNCATED_NOTICE}\n"
        got = req.tool_result("call_1")
        assert got == want
        assert "value 10 of" not in got and "line 999:" not in got
        return Reply.finish()

    with FakeLLM(
        [lambda r: Reply.call("call_1", "file_editor", command="view", path=str(f)), change, expect]
    ) as fake:
        conv = make_conversation(fake, workspace, condenser)
        run(conv, fake)
