#!/usr/bin/env python3
"""Builds codex-capture.corpus.json from the Codex CLI captures in ../codex/exec.

Each tool call appears twice: as the model saw it (the last request's function_call /
custom_tool_call and its output: tool exec_command with Codex's header, apply_patch with
arguments {"input": PATCH}) and as the PostToolUse hook had it (tool Bash with the raw
output, apply_patch with {"command": PATCH}); the hook's case gets the exit code from the
rollout, as the Codex binding does. Usage: python3 import_codex.py
"""
import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
CAP = os.path.join(HERE, "..", "codex", "exec")


def load_jsonl(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


def output_text(out):
    if isinstance(out, str):
        return out
    return "".join(p.get("text") or ("[image]" if "image" in p.get("type", "") else "") for p in out)


def shows(tool, args, out, exit_code):
    """What a call showed, for the tracked shares (none: nothing of a file)."""
    if tool in ("apply_patch",):
        return "write" if "Success. Updated" in out else "none"
    if tool not in ("exec_command", "Bash") or exit_code != 0:
        return "none"
    cmd = args.get("cmd") or args.get("command") or ""
    if "Warning: truncated output" in out or "Process running" in out:
        return "none"
    prog = cmd.split()[0]
    if prog in ("cat", "sed", "nl", "head", "tail"):
        return "pipeline-read" if "|" in cmd else "file-read"
    if prog in ("rg", "grep"):
        return "grep-numbered" if " -n" in cmd else "grep-unnumbered"
    if prog in ("ls", "find"):
        return "listing"
    return "none"


def main():
    with open(os.path.join(CAP, "workspace.json")) as f:
        workspace = json.load(f)
    with open(os.path.join(CAP, "model-input.json")) as f:
        items = json.load(f)
    calls, outputs = {}, {}
    for it in items:
        if it["type"] in ("function_call", "custom_tool_call"):
            calls[it["call_id"]] = it
        elif it["type"] in ("function_call_output", "custom_tool_call_output"):
            outputs[it["call_id"]] = output_text(it["output"])
    exits = {}
    for line in load_jsonl(os.path.join(CAP, "rollout.jsonl")):
        p = line.get("payload") or {}
        if line["type"] == "event_msg" and p.get("type") == "item_completed":
            item = p["item"]
            if item["type"] == "CommandExecution":
                exits[item["id"]] = item["exit_code"]
    cases = []
    for cid, it in calls.items():
        if it["type"] == "custom_tool_call":
            tool, args = it["name"], {"input": it["input"]}
        else:
            tool, args = it["name"], json.loads(it["arguments"])
        out = outputs.get(cid, "")
        m = re.search(r"^Process exited with code (\d+)$", out, re.M)
        code = int(m.group(1)) if m else (0 if out.startswith("Exit code: 0") else None)
        call = {"runtime": "codex", "tool": tool, "arguments": args, "output": out, "cwd": "{WS}"}
        cases.append({"name": f"model/{cid}/{tool}", "shows": shows(tool, args, out, code), "call": call})
    for h in load_jsonl(os.path.join(CAP, "hooks.jsonl")):
        if h["hook_event_name"] != "PostToolUse":
            continue
        cid, tool, args = h["tool_use_id"], h["tool_name"], dict(h["tool_input"])
        out = h["tool_response"] if isinstance(h["tool_response"], str) else output_text(h["tool_response"])
        call = {"runtime": "codex", "tool": tool, "arguments": args, "output": out, "cwd": h["cwd"]}
        code = 0
        if tool == "Bash":  # the hook's cwd is the command's (its workdir resolved)
            code = exits.get(cid)
            call["exitCode"] = code
        cases.append({"name": f"hook/{cid}/{tool}", "shows": shows(tool, args, out, code), "call": call})
    corpus = {
        "source": "testdata/codex/exec (@openai/codex 0.169.0, captured by internal/codexrun TestCapture -capture; imported by import_codex.py)",
        "license": "Apache-2.0 (this repository)",
        "note": "each call twice: as the model saw it (model/) and as the PostToolUse hook had it (hook/, exit code from the rollout); files are the project before the session (the patches touch other files than the reads)",
        "workspace": workspace,
        "cases": cases,
    }
    with open(os.path.join(HERE, "codex-capture.corpus.json"), "w") as f:
        json.dump(corpus, f, indent=1, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main()
