"""How the OpenHands tools print what they show: test support only.

The binding no longer parses these formats (the server's `recognize` does);
the tests still write the outputs they expect the model to be shown.
"""

from __future__ import annotations

import re
import shlex


def cat_n(path: str, lines: list[str], start: int = 1) -> str:
    """file_editor's view output (editor.py _make_output)."""
    body = "\n".join(f"{start + i:6}\t{ln}" for i, ln in enumerate(lines))
    out = f"Here's the result of running `cat -n` on {path}:\n"
    return out + (body + "\n" if body else "")


def read_file_out(path: str, lines: list[str], start: int = 1, final_newline: bool = True) -> str:
    """The Gemini read_file tool's output (read_file/impl.py)."""
    raw = [ln + "\n" for ln in lines]
    if raw and not final_newline:
        raw[-1] = raw[-1][:-1]
    return f"Read file: {path}\n\n" + "".join(f"{start + i:6d}  {ln}" for i, ln in enumerate(raw))


def cat_n_head(text: str) -> tuple[int, int, bool]:
    """(first line number, complete numbered lines, clipped) of a file_editor view."""
    body = text.split("\n", 1)[1] if "\n" in text else ""
    nums = []
    for ln in body.split("\n"):
        m = re.match(r" *(\d+)\t(.*)\Z", ln, re.S)
        if m is None or "<response clipped>" in m.group(2):
            break
        nums.append(int(m.group(1)))
    return (nums[0] if nums else 1), len(nums), "<response clipped>" in text


def screen_line(line: str) -> str:
    """A line as the terminal pane shows it: tabs expanded, trailing blanks dropped."""
    return line.expandtabs(8).rstrip()


def simple_argv(command: str) -> list[str]:
    return shlex.split(command)


def with_texts(s, res: dict) -> dict:
    """recognize names the sources it registered without their text (the call
    carries what was shown); a full sync's view of the block gives the text
    the server holds for each, which is what these tests compare."""
    if not res.get("block"):
        return res
    r = s.sync(1, full=True)
    assert r is not None, "sync failed"
    (view,) = [b for b in r.blocks if b.block == res["block"]]
    for src, held in zip(res.get("sources") or [], view.sources):
        src["text"] = held.get("text")
    return res
