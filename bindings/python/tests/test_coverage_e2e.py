"""End-to-end, real SDK: the reads tracked since issue 14's last gaps: grep
with context lines, cat/head of several files, and file_editor's directory
view. A change after the read; the next model request shows the repair."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

if sys.version_info < (3, 12):
    pytest.skip("the OpenHands SDK needs Python >= 3.12", allow_module_level=True)

from formats import screen_line, simple_argv  # noqa: E402
from fake_llm import FakeLLM, Reply, Request  # noqa: E402
from test_openhands_e2e import (  # noqa: E402,F401 (fixtures)
    _close_conversations,
    make_conversation,
    numbered,
    run,
    write,
)
from concord_openhands import ConcordCondenser  # noqa: E402
from test_openhands_more_e2e import (  # noqa: E402
    body_and_trailer,
    run_terminal,
    server_has,
    tmux_lost_start,
)


@pytest.fixture
def condenser(concord_bin, workspace):
    # In place: these tests check the repaired tool result itself.
    c = ConcordCondenser(roots=[str(workspace)], placement="inplace", binary=concord_bin)
    yield c
    c.close()


def shown(command: str, cwd: Path) -> str:
    """What the terminal tool shows for `command` run now: the pane (tabs
    expanded, trailing blanks dropped), the whole output stripped."""
    out = subprocess.run(simple_argv(command), cwd=cwd, capture_output=True, text=True, check=True).stdout
    return "\n".join(screen_line(ln) for ln in out.split("\n")).strip()


def terminal_repair(workspace: Path, condenser, command: str, change,
                    before: str | None = None, after: str | None = None) -> None:
    """Run `command` in the terminal, apply `change` after the model saw it,
    and check the next request shows the command's output for the files as
    they are now (`after`, else the command run again), trailer untouched
    (skip on the SDK's tmux race)."""
    seen: dict[str, str] = {}

    def after_read(req: Request) -> Reply:
        seen["first"] = req.tool_result("call_1")
        if tmux_lost_start(req, "call_1"):
            return Reply.finish()
        body, seen["trailer"] = body_and_trailer(seen["first"])
        assert body == (before if before is not None else shown(command, workspace)), body
        change()
        return Reply.call("call_2", "think", thought="hm")

    def expect(req: Request) -> Reply:
        body, trailer = body_and_trailer(req.tool_result("call_1"))
        want = after if after is not None else shown(command, workspace)
        assert body == want, (body, want)
        assert trailer == seen["trailer"]
        return Reply.finish()

    conv = run_terminal([lambda r: Reply.call("call_1", "terminal", command=command), after_read, expect], workspace, condenser, seen)
    assert conv.state.execution_status.value == "finished", conv.state.execution_status
    st = condenser.stats()
    assert st["tracked"] == 1 and st["repaired"] == 1 and st["events"] == 0, st


@pytest.mark.parametrize("command", ["grep -n -C1 TODO src/a.py src/b.py", "grep -rn -B2 -A1 TODO src"])
def test_grep_context_lines_are_one_block_and_repaired(workspace, condenser, command):
    src = workspace / "src"
    src.mkdir()
    a, b = src / "a.py", src / "b.py"
    a.write_text("import os\n# TODO: one\nprint(1)\n")
    b.write_text("x = 1\ny = 2\n# TODO: two\nz = 3\n")

    def change() -> None:
        # Lines inserted above: the match and its context move down two lines.
        b.write_text("# header\n\nx = 1\ny = 2\n# TODO: two\nz = 3\n")

    terminal_repair(workspace, condenser, command, change)


def test_rg_context_with_headings_is_repaired(workspace, condenser):
    if shutil.which("rg") is None:
        pytest.skip("no rg on PATH (`make test` puts the pinned @vscode/ripgrep of bindings/ts first)")
    (workspace / "notes.txt").write_text("\n".join(numbered(12)) + "\n")

    def change() -> None:
        write(workspace / "notes.txt", ["# added"] + numbered(12))

    # rg on a terminal (the tmux pane is a tty) prints headings, unlike rg in a pipe.
    before = ("notes.txt\n3:line 3: value 3 of the config\n4-line 4: value 4 of the config\n--\n"
              "9:line 9: value 9 of the config\n10-line 10: value 10 of the config")
    after = ("notes.txt\n4:line 3: value 3 of the config\n5-line 4: value 4 of the config\n--\n"
             "10:line 9: value 9 of the config\n11-line 10: value 10 of the config")
    terminal_repair(workspace, condenser, "rg -n -A1 'value (3|9) '", change, before, after)


@pytest.mark.parametrize(
    "command,insert",
    [("cat -n a.txt b.txt", True), ("cat a.txt b.txt", True),
     # head/tail show ranges, which follow their lines when lines are
     # inserted above (as for one file): only changed lines here.
     ("head -n 4 a.txt b.txt", False), ("tail -n 3 a.txt b.txt", False)],
)
def test_several_files_are_repaired(workspace, condenser, command, insert):
    write(workspace / "a.txt", numbered(6))
    write(workspace / "b.txt", [ln.replace("line", "row") for ln in numbered(8)])

    def change() -> None:
        # One token changed in each file (and, for cat, a line inserted at
        # the top of a.txt: cat -n numbers b.txt's lines on from a.txt's).
        lines = numbered(6)
        lines[1] = "line 2: value TWO of the config"
        write(workspace / "a.txt", (["# top"] if insert else []) + lines)
        rows = [ln.replace("line", "row") for ln in numbered(8)]
        rows[6] = "row 7: value SEVEN of the config"
        write(workspace / "b.txt", rows)

    terminal_repair(workspace, condenser, command, change)


# Kinds the server's recognize tracks that the binding's own parser did not
# (issue 21): a pipeline of line filters, grep without -n (each line placed by
# its text), a `cd DIR &&` prefix. One token of a shown line changes.
NEW_KINDS = [
    ("cat notes.txt | grep 'value 1[01] '", 10),
    ("grep 'value 3 ' notes.txt", 3),
    ("cd {ws} && sed -n '2,3p' notes.txt", 2),
    ("grep -n value notes.txt | head -3", 2),
]


@pytest.mark.parametrize("command,line", NEW_KINDS, ids=[c[0] for c in NEW_KINDS])
def test_newly_tracked_terminal_reads_are_repaired(workspace, condenser, command, line):
    f = workspace / "notes.txt"
    old = numbered(12)
    write(f, old)
    new = list(old)
    new[line - 1] = new[line - 1].replace("of the config", "of the CONFIG")
    command = command.replace("{ws}", str(workspace))

    def change() -> None:
        write(f, new)

    def screen(lines: list[str]) -> str:
        if "sed" in command:
            return "\n".join(lines[1:3])
        if "head" in command:
            return "\n".join(f"{i}:{lines[i - 1]}" for i in range(1, 4))
        return "\n".join(ln for ln in lines if f"value {line} " in ln or
                         ("1[01]" in command and ("value 10 " in ln or "value 11 " in ln)))

    terminal_repair(workspace, condenser, command, change, screen(old), screen(new))


def test_directory_view_goes_out_of_date(workspace, condenser, concord_bin):
    if not server_has(concord_bin, workspace, "listing"):
        pytest.skip("server lacks directory listing sources")
    (workspace / "src").mkdir()
    (workspace / "src" / "main.py").write_text("x = 1\n")
    (workspace / "README.md").write_text("hi\n")
    seen: dict[str, str] = {}

    def change(req: Request) -> Reply:
        seen["first"] = req.tool_result("call_1")
        assert f"{workspace}/src/main.py" in seen["first"], seen["first"]
        (workspace / "src" / "new.py").write_text("y = 2\n")
        (workspace / "README.md").unlink()
        return Reply.call("call_2", "think", thought="hm")

    def expect(req: Request) -> Reply:
        text = req.tool_result("call_1")
        assert text.startswith("[concord]") and f"listing of {workspace}" in text, text
        assert "added src/new.py" in text and "removed README.md" in text, text
        return Reply.finish()

    with FakeLLM(
        [lambda r: Reply.call("call_1", "file_editor", command="view", path=str(workspace)), change, expect]
    ) as fake:
        conv = make_conversation(fake, workspace, condenser)
        run(conv, fake)
    st = condenser.stats()
    assert st["tracked"] == 1 and st["notices"] == 1, st
