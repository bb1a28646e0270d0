"""Capture real results of the OpenHands tools whose formats the binding once
parsed itself (bindings/python/concord_openhands/fallback.py, now in package
recognize): read_file (whole, paged, offset), write_file, edit, apply_patch,
and file_editor's view past the end of the file and its clipped view.

    /path/to/venv/bin/python testdata/recognize/capture_gemini.py   (from the repo root)

The venv holds the pinned SDK (bindings/python/requirements-test.txt). Writes
testdata/recognize/openhands-gemini.corpus.json: each call as recognize.Call
takes it, the workspace as it is after the calls (the golden test recognizes
against it), the workspace path replaced by {WS}.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")

from openhands.tools.apply_patch.definition import ApplyPatchAction, ApplyPatchExecutor  # noqa: E402
from openhands.tools.file_editor.definition import FileEditorAction  # noqa: E402
from openhands.tools.file_editor.impl import FileEditorExecutor  # noqa: E402
from openhands.tools.gemini.edit.definition import EditAction  # noqa: E402
from openhands.tools.gemini.edit.impl import EditExecutor  # noqa: E402
from openhands.tools.gemini.read_file.definition import ReadFileAction  # noqa: E402
from openhands.tools.gemini.read_file.impl import ReadFileExecutor  # noqa: E402
from openhands.tools.gemini.write_file.definition import WriteFileAction  # noqa: E402
from openhands.tools.gemini.write_file.impl import WriteFileExecutor  # noqa: E402

HERE = Path(__file__).resolve().parent


def numbered(n: int) -> str:
    return "".join(f"line {i}: value {i} of the config\n" for i in range(1, n + 1))


PATCH = "\n".join([
    "*** Begin Patch", "*** Update File: patched.txt", "@@", " line 1: value 1 of the config",
    "-line 2: value 2 of the config", "+line 2: value TWO of the config", "*** Add File: added.txt", "+added",
    "*** End Patch"])

CALLS = [  # (tool, arguments, what it showed); {WS} is the workspace
    ("read_file", {"file_path": "{WS}/config.txt"}, "file-read"),
    ("read_file", {"file_path": "config.txt"}, "file-read"),
    ("read_file", {"file_path": "noeol.txt"}, "file-read"),
    ("read_file", {"file_path": "empty.txt"}, "none"),  # an error: "Offset 0 is beyond file length"
    ("read_file", {"file_path": "config.txt", "offset": 10, "limit": 5}, "file-read"),
    ("read_file", {"file_path": "config.txt", "offset": 25}, "file-read"),
    ("read_file", {"file_path": "long.txt"}, "file-read"),
    ("read_file", {"file_path": "missing.txt"}, "none"),
    ("write_file", {"file_path": "written.txt", "content": "fresh\n"}, "write"),
    ("edit", {"file_path": "{WS}/edited.txt", "old_string": "value 3 of", "new_string": "value THREE of"}, "write"),
    ("apply_patch", {"patch": PATCH}, "write"),
    ("file_editor", {"command": "view", "path": "{WS}/config.txt", "view_range": [25, 40]}, "editor-view"),
    ("file_editor", {"command": "view", "path": "{WS}/long.txt"}, "editor-view"),
]


def main() -> None:
    ws = Path(tempfile.mkdtemp(prefix="concord-capture-")).resolve()
    for name, text in {"config.txt": numbered(30), "noeol.txt": "first\nsecond", "empty.txt": "",
                       "long.txt": numbered(1000), "edited.txt": numbered(5), "patched.txt": numbered(3)}.items():
        (ws / name).write_text(text)
    executors = {"read_file": (ReadFileExecutor(str(ws)), ReadFileAction),
                 "write_file": (WriteFileExecutor(str(ws)), WriteFileAction),
                 "edit": (EditExecutor(str(ws)), EditAction),
                 "apply_patch": (ApplyPatchExecutor(str(ws)), ApplyPatchAction),
                 "file_editor": (FileEditorExecutor(workspace_root=str(ws)), FileEditorAction)}
    cases = []
    for tool, args, shows in CALLS:
        args = json.loads(json.dumps(args).replace("{WS}", str(ws)))
        run, action = executors[tool]
        obs = run(action(**args))
        text = "".join(c.text for c in obs.to_llm_content if hasattr(c, "text"))
        call = {"runtime": "openhands", "tool": tool, "arguments": args, "output": text, "cwd": str(ws),
                "error": bool(getattr(obs, "is_error", False))}
        if getattr(obs, "is_truncated", False):
            call["truncated"] = True
        cases.append({"name": f"{tool} {json.dumps(args)}", "shows": shows, "call": call})
    files = {str(p.relative_to(ws)): p.read_text() for p in sorted(ws.rglob("*")) if p.is_file()}
    corpus = {
        "source": f"captured by testdata/recognize/capture_gemini.py from openhands-tools {version('openhands-tools')} "
                  "(ReadFileExecutor, WriteFileExecutor, EditExecutor, ApplyPatchExecutor, FileEditorExecutor)",
        "license": "Apache-2.0 (this repository)",
        "workspace": files,
        "cases": cases,
    }
    text = json.dumps(corpus, indent=1, ensure_ascii=False).replace(str(ws), "{WS}")
    (HERE / "openhands-gemini.corpus.json").write_text(text + "\n")
    shutil.rmtree(ws, ignore_errors=True)
    print(f"wrote {len(cases)} cases", file=sys.stderr)


if __name__ == "__main__":
    main()
