"""Capture real OpenHands terminal results of the shell shapes issue 34 adds.

    /path/to/venv/bin/python testdata/recognize/capture_shapes.py   (from the repo root)

The venv holds the pinned SDK (bindings/python/requirements-test.txt), as for
capture_openhands.py, whose workspace this reuses plus a tree (big/) whose
`ls -R` passes the terminal's 30,000-character limit, so the SDK cuts it in the
middle. Each command runs through the SDK's TerminalExecutor (tmux, as in a
real session); writes testdata/recognize/openhands-shapes.corpus.json (the
workspace path replaced by {WS}): find -exec grep {} ; and {} +, find | xargs
[-0] grep, and the cut ls -R.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from capture_openhands import TerminalAction, TerminalExecutor, fixture  # noqa: E402
from import_fixtures import shows  # noqa: E402

TERMINAL = [
    "find . -name '*.py' -exec grep -l TODO {} +",
    "find src -type f -exec grep -c def {} \\;",
    "find src -type f -exec grep -c def {} +",
    "find . -name '*.py' -type f -exec grep -l 'TODO\\|run' {} \\; | head -5",
    "find src -name '*.py' | xargs grep -l def",
    "find src -name '*.py' -print0 | xargs -0 grep -l TODO",
    "find . -type f -name '*.py' | xargs grep -L TODO | sort",
    "grep -rl def src | xargs grep -l TODO",
    "find . -name '*.py' -exec grep -l def {} \\; | xargs grep -c run",
    "find . -name '*.py' -type f -exec grep -l 'TODO\\|run' {} ';' | head -5",
    "find . -name '*.py' -exec grep -l def {} ';' | xargs grep -c run",
    "ls -R",
    "ls -R big",
    "ls -R big/d03",
]


def big(ws: Path) -> None:
    """20 directories of 25 files with 60-character names: about 31,000 characters of ls -R."""
    for d in range(20):
        sub = ws / "big" / f"d{d:02d}"
        sub.mkdir(parents=True)
        for f in range(25):
            (sub / (f"f{f:02d}_" + "x" * 56)).write_text("")


def main() -> None:
    ws = Path(tempfile.mkdtemp(prefix="concord-capture-")).resolve()
    fixture(ws)
    big(ws)
    files = {str(p.relative_to(ws)): p.read_text() for p in sorted(ws.rglob("*")) if p.is_file()}
    term = TerminalExecutor(working_dir=str(ws))
    cases = []
    try:
        for cmd in TERMINAL:
            obs = term(TerminalAction(command=cmd))
            call = {"runtime": "openhands", "tool": "terminal", "arguments": {"command": cmd},
                    "output": obs.text, "exitCode": obs.exit_code, "cwd": obs.metadata.working_dir}
            if obs.metadata.prefix:
                call["truncated"] = True  # "[Previous command outputs are truncated …]", as the binding says

            cases.append({"name": cmd, "call": call})
            term(TerminalAction(command=f"cd {ws}"))
    finally:
        term.close()
    for c in cases:
        c["shows"] = shows(c["call"])
    from importlib.metadata import version

    corpus = {
        "source": f"captured by testdata/recognize/capture_shapes.py from openhands-tools {version('openhands-tools')} (TerminalExecutor on tmux)",
        "license": "Apache-2.0 (this repository)",
        "workspace": files,
        "cases": cases,
    }
    text = json.dumps(corpus, indent=1, ensure_ascii=False).replace(str(ws), "{WS}")
    (HERE / "openhands-shapes.corpus.json").write_text(text + "\n")
    shutil.rmtree(ws, ignore_errors=True)
    print(f"wrote {len(cases)} cases", file=sys.stderr)


if __name__ == "__main__":
    main()
