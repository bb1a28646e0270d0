"""Capture real terminal-tool output from the pinned SDK for the parser tests.

    .venv/bin/python tests/capture_terminal.py   (from bindings/python)

Runs each command of CASES through the SDK's own TerminalExecutor (tmux when
installed, as in a real session) in a fresh fixture workspace, and writes
tests/testdata/terminal.json: the command, the observation's text (what the
binding parses), its exit code and working dir, and the full text the model
is shown (to_llm_content, trailer lines included). The workspace path is
replaced by "{WS}" so the file is stable.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")

from openhands.tools.terminal.definition import TerminalAction  # noqa: E402
from openhands.tools.terminal.impl import TerminalExecutor  # noqa: E402

HERE = Path(__file__).resolve().parent


def fixture(ws: Path) -> None:
    (ws / "src").mkdir()
    (ws / "src" / "pkg").mkdir()
    (ws / ".hidden").write_text("secret\n")
    lines = [f"line {i}: value {i} of the config" for i in range(1, 31)]
    (ws / "config.txt").write_text("\n".join(lines) + "\n")
    (ws / "noeol.txt").write_text("first\nsecond\nno newline at the end")
    (ws / "src" / "main.py").write_text(
        "import os\n\n\ndef main():\n    # TODO: config\n    print(os.getcwd())\n\n\nmain()\n"
    )
    (ws / "src" / "pkg" / "util.py").write_text("def helper():\n    return 'config'  # TODO\n")
    (ws / "blank.txt").write_text("a\n\n\tb\n\nc\n")


CASES = [
    "cat config.txt",
    "cat -n src/main.py",
    "cat noeol.txt",
    "head -n 5 config.txt",
    "head -3 src/main.py",
    "head -n 100 src/pkg/util.py",
    "tail -n 4 config.txt",
    "tail -n +27 config.txt",
    "sed -n '10,14p' config.txt",
    "sed -n '28,40p' config.txt",
    "sed -n 5p config.txt",
    "nl -ba blank.txt",
    "cat -n blank.txt",
    "grep -n TODO src/main.py",
    "grep -rn TODO src",
    "grep -rn 'value 1[0-2] ' .",
    "grep -n config src/main.py src/pkg/util.py",
    "rg -n TODO",
    "rg -n TODO src/main.py",
    "ls",
    "ls -a",
    "ls -la src",
    "ls -1 src",
    "find . -not -path '*/.git/*'",
    "find src -name '*.py'",
    "find . -type f",
    "find . -maxdepth 1",
    # Context lines (`path-N-text`), group separators (`--`), several operands.
    "grep -n -C 1 TODO src/main.py",
    "grep -n -B 2 'value 1[05] ' config.txt",
    "grep -rn -A1 TODO src",
    "grep -rn -C1 'value 1[05] ' config.txt src",
    "grep -rn TODO src config.txt",
    "grep -n --context=1 TODO src/main.py src/pkg/util.py",
    "rg -n -C 1 TODO",
    "rg -n -C1 'value 1[05] '",
    "rg -n -A 1 'value 1[05] ' config.txt",
    "rg -n -B1 --no-heading TODO src",
    # Several files: cat concatenates, head/tail print `==> path <==` headers.
    "cat src/main.py src/pkg/util.py",
    "cat -n src/pkg/util.py config.txt",
    "cat noeol.txt config.txt",
    "head -n 3 config.txt src/main.py",
    "tail -n 2 config.txt src/pkg/util.py",
    "cat config.txt | head -3",
    "cd src && cat main.py",
    "cat *.txt",
    "grep -n nothing-matches config.txt",
    "cat missing.txt",
]


def main() -> None:
    ws = Path(tempfile.mkdtemp(prefix="concord-capture-")).resolve()
    fixture(ws)
    ex = TerminalExecutor(working_dir=str(ws))
    out = []
    try:
        for cmd in CASES:
            obs = ex(TerminalAction(command=cmd))
            shown = "".join(c.text for c in obs.to_llm_content if hasattr(c, "text"))
            rec = {
                "command": cmd,
                "text": obs.text,
                "exit_code": obs.exit_code,
                "working_dir": obs.metadata.working_dir,
                "shown": shown,
            }
            out.append(json.loads(json.dumps(rec).replace(str(ws), "{WS}")))
            ex(TerminalAction(command=f"cd {ws}"))
    finally:
        ex.close()
        shutil.rmtree(ws, ignore_errors=True)
    dest = HERE / "testdata" / "terminal.json"
    dest.write_text(json.dumps({"sdk": _version(), "fixture": "capture_terminal.fixture", "cases": out}, indent=1) + "\n")
    print(f"wrote {len(out)} cases to {dest}", file=sys.stderr)


def _version() -> str:
    from importlib.metadata import version

    return f"openhands-tools {version('openhands-tools')}"


if __name__ == "__main__":
    main()
