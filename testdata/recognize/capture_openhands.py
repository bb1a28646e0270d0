"""Capture real OpenHands tool results for the recognizer's corpus.

    /path/to/venv/bin/python testdata/recognize/capture_openhands.py   (from the repo root)

The venv holds the pinned SDK (bindings/python/requirements-test.txt). Runs each
terminal command of TERMINAL through the SDK's own TerminalExecutor (tmux, as in
a real session) and each file_editor call of EDITOR through its FileEditorExecutor,
in a fresh workspace (the fixture of bindings/python/tests/capture_terminal.py
plus a few files), and writes testdata/recognize/openhands-capture.corpus.json:
each call as recognize.Call takes it, the text the model was shown as its output,
the workspace path replaced by {WS}. The commands are the shapes issue 21 counts
as missed today (cd prefixes, \\| in double quotes, grep without -n, -r, context
without -n, pipelines of one file, ls -R, find | grep, grep -l) and ones that must
stay events.
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

from openhands.tools.file_editor.definition import FileEditorAction  # noqa: E402
from openhands.tools.file_editor.impl import FileEditorExecutor  # noqa: E402
from openhands.tools.terminal.definition import TerminalAction  # noqa: E402
from openhands.tools.terminal.impl import TerminalExecutor  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from import_fixtures import _capture_fixture, shows  # noqa: E402


def fixture(ws: Path) -> None:
    _capture_fixture()(ws)
    (ws / "src" / "app.py").write_text(
        "import sys\n\n\ndef run(args):\n    if not args:\n        return 1\n    print('run', args)\n    return 0\n\n\n"
        "def main():\n    return run(sys.argv[1:])\n\n\nif __name__ == '__main__':\n    sys.exit(main())\n"
    )
    (ws / "docs").mkdir()
    (ws / "docs" / "notes.md").write_text("# Notes\n\nThe run function returns 0 on success.\n")


TERMINAL = [
    "cd src && grep -n TODO main.py",
    "cd {WS}/src && cat -n app.py",
    "cd {WS} && sed -n '4,8p' src/app.py",
    'grep -n "TODO\\|config" src/main.py',
    'grep -rn "return\\|print" src/app.py',
    "grep TODO src/main.py",
    "grep -r TODO src",
    "grep -r 'def ' src",
    "grep -A 2 'def run' src/app.py",
    "grep -B 1 -A 1 'sys.exit' src/app.py",
    "grep -rn -A1 TODO src | head -3",
    "grep -n value config.txt | head -5",
    "grep -rn def src | grep app",
    "cat config.txt | grep 'value 2'",
    "cat src/app.py | grep -A 2 'def main'",
    "cat -n src/app.py | grep return",
    "cat -n config.txt | sed -n '3,6p'",
    "sed -n '5,20p' config.txt | head -4",
    "head -20 config.txt | tail -5",
    "tail -n 12 src/app.py | head -3",
    "grep -n run src/app.py 2>/dev/null",
    "ls -R src",
    "ls -R",
    "ls -la",
    "find src -name '*.py' | grep pkg",
    "grep -rl TODO src",
    "find . -name '*.py' -exec grep -l TODO {} \\;",
    "tail -n 5 config.txt | grep -n value",
    "cat config.txt src/main.py | grep TODO",
    "git status",
    "echo hi > out.txt",
    "python3 -c 'print(1)'",
    "wc -l config.txt",
    "ls src/*.py",
]

EDITOR = [
    {"command": "view", "path": "{WS}/src/app.py"},
    {"command": "view", "path": "{WS}/config.txt", "view_range": [5, 9]},
    {"command": "view", "path": "{WS}/src"},
    {"command": "str_replace", "path": "{WS}/src/app.py", "old_str": "        return 1", "new_str": "        return 2"},
    {"command": "insert", "path": "{WS}/docs/notes.md", "insert_line": 1, "new_str": "Added line."},
    {"command": "create", "path": "{WS}/docs/new.md", "file_text": "new file\n"},
    {"command": "undo_edit", "path": "{WS}/docs/notes.md"},
    {"command": "view", "path": "{WS}/missing.txt"},
]


def main() -> None:
    ws = Path(tempfile.mkdtemp(prefix="concord-capture-")).resolve()
    fixture(ws)
    files = {str(p.relative_to(ws)): p.read_text() for p in sorted(ws.rglob("*")) if p.is_file()}
    term = TerminalExecutor(working_dir=str(ws))
    editor = FileEditorExecutor(workspace_root=str(ws))
    cases = []
    try:
        for cmd in TERMINAL:
            cmd = cmd.replace("{WS}", str(ws))
            obs = term(TerminalAction(command=cmd))
            call = {"runtime": "openhands", "tool": "terminal", "arguments": {"command": cmd},
                    "output": obs.text, "exitCode": obs.exit_code, "cwd": obs.metadata.working_dir}
            cases.append({"name": cmd, "call": call})
            term(TerminalAction(command=f"cd {ws}"))
        for args in EDITOR:
            args = json.loads(json.dumps(args).replace("{WS}", str(ws)))
            obs = editor(FileEditorAction(**args))
            text = "".join(c.text for c in obs.to_llm_content if hasattr(c, "text"))
            call = {"runtime": "openhands", "tool": "file_editor", "arguments": args, "output": text,
                    "error": bool(getattr(obs, "is_error", False))}
            cases.append({"name": "file_editor " + json.dumps({k: v for k, v in args.items() if k != "path"}) + " " + args["path"], "call": call})
    finally:
        term.close()
    for c in cases:
        c["shows"] = "none" if c["call"].get("error") else shows(c["call"])
    from importlib.metadata import version

    corpus = {
        "source": f"captured by testdata/recognize/capture_openhands.py from openhands-tools {version('openhands-tools')} (TerminalExecutor on tmux, FileEditorExecutor)",
        "license": "Apache-2.0 (this repository)",
        "workspace": files,
        "cases": cases,
    }
    text = json.dumps(corpus, indent=1, ensure_ascii=False).replace(str(ws), "{WS}")
    (HERE / "openhands-capture.corpus.json").write_text(text + "\n")
    shutil.rmtree(ws, ignore_errors=True)
    print(f"wrote {len(cases)} cases", file=sys.stderr)


if __name__ == "__main__":
    main()
