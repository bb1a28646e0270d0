"""Import the runtime outputs the bindings' tests already captured into the
recognizer's corpus (testdata/recognize/*.corpus.json). Run from the repo root:

    python3 testdata/recognize/import_fixtures.py

Sources (all captured from the pinned runtimes, in this repository, Apache-2.0
like the rest of it):
  bindings/python/tests/testdata/terminal.json   openhands-tools 1.58.2 terminal
      (bindings/python/tests/capture_terminal.py; workspace: its fixture())
  bindings/ts/test/fixtures/opencode-1.18.33-tools.json  opencode-ai 1.18.33
  bindings/ts/test/fixtures/opencode-1.18.33-read.json   opencode-ai 1.18.33

A corpus file holds the workspace ({WS} is its root at test time) and the
calls, each as recognize.Call takes it.
"""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _capture_fixture():
    """capture_terminal.fixture, taken from its source (importing the module needs the SDK)."""
    import ast

    src = (ROOT / "bindings/python/tests/capture_terminal.py").read_text()
    fn = next(n for n in ast.parse(src).body if isinstance(n, ast.FunctionDef) and n.name == "fixture")
    ns = {"Path": Path}
    exec(compile(ast.Module([fn], []), "capture_terminal.py", "exec"), ns)
    return ns["fixture"]


def openhands_terminal():
    import tempfile

    fixture = _capture_fixture()  # the workspace the capture ran in

    ws = Path(tempfile.mkdtemp())
    fixture(ws)
    files = {str(p.relative_to(ws)): p.read_text() for p in sorted(ws.rglob("*")) if p.is_file()}
    cap = json.loads((ROOT / "bindings/python/tests/testdata/terminal.json").read_text())
    cases = []
    for c in cap["cases"]:
        cases.append({
            "name": c["command"],
            "call": {"runtime": "openhands", "tool": "terminal", "arguments": {"command": c["command"]},
                     "output": c["text"], "exitCode": c["exit_code"], "cwd": c["working_dir"]},
        })
    return {
        "source": "bindings/python/tests/testdata/terminal.json (" + cap["sdk"] + ", captured by bindings/python/tests/capture_terminal.py)",
        "license": "Apache-2.0 (this repository)",
        "workspace": files,
        "cases": cases,
    }


def opencode_tools():
    cap = json.loads((ROOT / "bindings/ts/test/fixtures/opencode-1.18.33-tools.json").read_text())
    files = dict(cap["files"])
    # The capture's project also held OpenCode's own files (the glob of **/* and the read of the
    # project list them); their content is not part of the capture, only their names matter.
    for extra in (".opencode/plugins/dump.js", ".opencode/package.json", ".opencode/package-lock.json",
                  ".opencode/.gitignore", "opencode.json", ".git/HEAD"):
        files.setdefault(extra, "")
    cases = []
    for i, t in enumerate(cap["tools"]):
        out = t["output"].replace("/PROJECT", "{WS}")
        meta = json.loads(json.dumps(t.get("metadata", {})).replace("/PROJECT", "{WS}"))
        args = json.loads(json.dumps(t["input"]).replace("/PROJECT", "{WS}"))
        call = {"runtime": "opencode", "tool": t["tool"], "arguments": args, "output": out,
                "cwd": "{WS}", "metadata": meta}
        name = t["tool"] + " " + json.dumps(t["input"], sort_keys=True)
        cases.append({"name": name, "call": call})
    return {
        "source": "bindings/ts/test/fixtures/opencode-1.18.33-tools.json (opencode-ai " + cap["opencode"] + ", captured by bindings/ts/scripts/capture-tools.mjs)",
        "license": "Apache-2.0 (this repository)",
        "note": "the capture's project also held .opencode/, opencode.json and .git/, added here as empty files",
        "workspace": files,
        "cases": cases,
    }


def opencode_reads():
    cap = json.loads((ROOT / "bindings/ts/test/fixtures/opencode-1.18.33-read.json").read_text())
    files = {}
    cases = []
    for r in cap["reads"]:
        d = (r.get("metadata") or {}).get("display") or {}
        p = d.get("path", "")
        if p.startswith("/PROJECT/") and d.get("lineStart") == 1 and not d.get("truncated"):
            files[p[len("/PROJECT/"):]] = d["text"] + ("\n" if d["text"] else "")
        call = {"runtime": "opencode", "tool": "read",
                "arguments": json.loads(json.dumps(r["input"]).replace("/PROJECT", "{WS}")),
                "output": r["output"].replace("/PROJECT", "{WS}"), "cwd": "{WS}",
                "metadata": json.loads(json.dumps(r.get("metadata", {})).replace("/PROJECT", "{WS}"))}
        cases.append({"name": "read " + r["name"], "call": call})
    return {
        "source": "bindings/ts/test/fixtures/opencode-1.18.33-read.json (opencode-ai " + cap["opencode"] + ")",
        "license": "Apache-2.0 (this repository)",
        "note": "workspace files rebuilt from the reads' display metadata",
        "workspace": files,
        "cases": cases,
    }


def shows(call):
    """What a call showed, by kind, for the tracked shares (none: nothing of a file)."""
    tool, args, out = call["tool"], call.get("arguments") or {}, call["output"]
    exit_code = call.get("exitCode", (call.get("metadata") or {}).get("exit", 0))
    if tool == "glob":
        return "listing"  # "No files found" is an empty listing
    if exit_code not in (0, None) or out in ("No files found", ""):
        return "none"
    if tool == "read":
        return "listing" if "<type>directory</type>" in out else "file-read"
    if tool == "glob":
        return "listing"
    if tool == "grep":
        return "grep-numbered"
    if tool in ("edit", "write"):
        return "write"
    if tool == "file_editor":
        cmd = args.get("command")
        if cmd == "view":
            return "listing" if out.startswith("Here's the files and directories") else "editor-view"
        return "write" if cmd == "create" else "edit-snippet"
    cmd = args.get("command", "")
    if "&&" in cmd and cmd.startswith("cd "):
        cmd = cmd.split("&&", 1)[1].strip()
    prog = cmd.split()[0] if cmd.split() else ""
    if prog in ("ls", "find"):
        return "grep-names" if "|" in cmd or "-exec" in cmd else "listing"
    if prog in ("grep", "rg"):
        flags = " ".join(w for w in cmd.split() if w.startswith("-"))
        letters = "".join(w[1:] for w in cmd.split() if w.startswith("-") and not w.startswith("--"))
        if any(c in letters for c in "lcL"):
            return "grep-names"
        if "n" in flags.replace("--no-heading", "").replace("--context", "") or prog == "rg" and call["runtime"] == "openhands":
            return "grep-numbered"
        return "grep-unnumbered"
    if prog in ("cat", "head", "tail", "sed", "nl"):
        return "pipeline-read" if "|" in cmd else "file-read"
    return "none"


def label(corpus):
    for c in corpus["cases"]:
        c["shows"] = shows(c["call"])
    return corpus


def main():
    out = Path(__file__).resolve().parent
    for name, fn in [("openhands-terminal", openhands_terminal), ("opencode-tools", opencode_tools),
                     ("opencode-read", opencode_reads)]:
        (out / f"{name}.corpus.json").write_text(json.dumps(label(fn()), indent=1, ensure_ascii=False) + "\n")
        print("wrote", name)


if __name__ == "__main__":
    main()
