"""End-to-end, real SDK: query sources (issue 21). A terminal result that is
a function of many files (grep -rl, find | grep, ls of files) is registered
as a query; a file is created or changed under its scope after the model saw
it; the next model request shows the command's output as it is now."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

if sys.version_info < (3, 12):
    pytest.skip("the OpenHands SDK needs Python >= 3.12", allow_module_level=True)

from concord_openhands import ConcordCondenser  # noqa: E402
from fake_llm import Reply, Request  # noqa: E402
from test_openhands_e2e import _close_conversations  # noqa: E402,F401 (fixture)
from test_openhands_more_e2e import body_and_trailer, run_terminal, tmux_lost_start  # noqa: E402


@pytest.fixture
def condenser(concord_bin, workspace):
    c = ConcordCondenser(roots=[str(workspace)], placement="inplace", binary=concord_bin)
    yield c
    c.close()


def query_repair(workspace: Path, condenser: ConcordCondenser, command: str, before: str, change, after: str) -> None:
    """Run `command` in the terminal; check the model saw `before`; apply
    `change`; check the next request shows `after` with the trailer as the
    tool wrote it (skip on the SDK's tmux race)."""
    seen: dict[str, str] = {}

    def after_run(req: Request) -> Reply:
        seen["first"] = req.tool_result("call_1")
        if tmux_lost_start(req, "call_1"):
            return Reply.finish()
        body, seen["trailer"] = body_and_trailer(seen["first"])
        assert body == before, body
        change()
        return Reply.call("call_2", "think", thought="hm")

    def expect(req: Request) -> Reply:
        body, trailer = body_and_trailer(req.tool_result("call_1"))
        assert body == after, (body, after)
        assert trailer == seen["trailer"]
        return Reply.finish()

    conv = run_terminal([lambda r: Reply.call("call_1", "terminal", command=command), after_run, expect],
                        workspace, condenser, seen)
    assert conv.state.execution_status.value == "finished", conv.state.execution_status
    st = condenser.stats()
    assert st["tracked"] == 1 and st["repaired"] == 1 and st["events"] == 0, st


def tree(workspace: Path) -> None:
    (workspace / "src" / "pkg").mkdir(parents=True)
    (workspace / "src" / "app.py").write_text("# TODO: flags\nimport sys\n")
    (workspace / "src" / "pkg" / "util.py").write_text("def f():\n    pass  # TODO\n")
    (workspace / "src" / "done.py").write_text("print('done')\n")


def test_grep_rl_sees_a_new_file(workspace, condenser):
    tree(workspace)

    def change() -> None:
        (workspace / "src" / "pkg" / "new").mkdir()
        (workspace / "src" / "pkg" / "new" / "todo.py").write_text("# TODO: more\n")
        (workspace / "src" / "app.py").write_text("import sys\n")  # its TODO done

    query_repair(workspace, condenser, "grep -rl TODO src | sort",
                 "src/app.py\nsrc/pkg/util.py", change, "src/pkg/new/todo.py\nsrc/pkg/util.py")


def test_find_piped_to_grep_sees_a_new_file(workspace, condenser):
    tree(workspace)

    def change() -> None:
        (workspace / "src" / "pkg" / "extra.py").write_text("x = 1\n")

    query_repair(workspace, condenser, "find src -name '*.py' | grep pkg | sort",
                 "src/pkg/util.py", change, "src/pkg/extra.py\nsrc/pkg/util.py")


def test_grep_c_counts_again(workspace, condenser):
    tree(workspace)

    def change() -> None:
        (workspace / "src" / "app.py").write_text("# TODO: flags\n# TODO: docs\nimport sys\n")

    query_repair(workspace, condenser, "grep -c TODO src/app.py src/done.py",
                 "src/app.py:1\nsrc/done.py:0", change, "src/app.py:2\nsrc/done.py:0")
