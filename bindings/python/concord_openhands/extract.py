"""What a tool call means to Concord: which file parts it showed, which files it wrote.

SDK-free: actions and observations are read by attribute or key, so this works
on the SDK's pydantic models, on their `model_dump()` dicts and on plain test
doubles alike.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from . import listing as _listing
from . import terminal as _terminal

# Tools with file_editor's action/observation shape.
FILE_EDITOR_TOOLS = frozenset({"file_editor", "planning_file_editor"})
FILE_EDITOR_WRITES = frozenset({"create", "str_replace", "insert", "undo_edit"})
TERMINAL_TOOLS = frozenset({"terminal", "bash", "execute_bash"})
# openhands-tools' MAX_CMD_OUTPUT_SIZE (30,000): longer output is cut in the middle.
_TERMINAL_MAX = 30000 - 500


@dataclass
class Read:
    """A part of a file the model was shown."""

    path: str
    range: tuple[int, int] | None  # None: the whole file
    text: str  # raw lines joined by "\n"
    # How the tool rendered it, to re-render: a numbered Listing (file_editor,
    # read_file) or a TerminalRead (a terminal command's output).
    listing: _listing.Listing | _terminal.TerminalRead
    uri: str | None = None  # a listing source's URI (directory + query); None: the file's


@dataclass
class Effects:
    """Everything one observation tells Concord."""

    writes: list[str] = field(default_factory=list)  # files the agent's own tool wrote
    reads: list[Read] = field(default_factory=list)  # what the model was shown
    event: str | None = None  # an action result (a command), never rewritten


def get(obj: Any, name: str, default: Any = None) -> Any:
    if obj is None:
        return default
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def extract(
    tool_name: str,
    action: Any,
    observation: Any,
    text: str,
    *,
    root: str | None = None,
) -> Effects:
    """The effects of one tool result.

    `action` is the tool call's arguments (None when unknown), `observation`
    the tool's observation, `text` exactly what the model was shown, `root`
    the directory relative paths are resolved against.
    """
    if get(observation, "is_error", False):
        return Effects()
    if tool_name in FILE_EDITOR_TOOLS:
        return _file_editor(action, observation, text)
    if tool_name == "read_file":
        return _read_file(action, observation, text, root)
    if tool_name in ("write_file", "edit"):
        path = get(observation, "file_path") or get(action, "file_path")
        return Effects(writes=[_abs(path, root)] if path else [])
    if tool_name == "apply_patch":
        return _apply_patch(observation, root)
    if tool_name in TERMINAL_TOOLS:
        return _terminal_effects(action, observation, text)
    return Effects()


def _terminal_effects(action: Any, observation: Any, text: str) -> Effects:
    command = str(get(observation, "command") or get(action, "command") or "")
    metadata = get(observation, "metadata")
    exit_code = get(observation, "exit_code")
    if exit_code is None:
        exit_code = get(metadata, "exit_code")
    cwd = get(metadata, "working_dir")
    if exit_code != 0 or get(observation, "timeout", False) or not cwd or get(action, "is_input", False):
        return Effects(event=command)
    if get(metadata, "prefix") or len(text) >= _TERMINAL_MAX:
        # "[Previous command outputs are truncated ...]": the tool lost the
        # start of the output; or the output was cut in the middle. Either
        # way it is not plainly the file's content.
        return Effects(event=command)
    read = _terminal.parse_command(command, text, str(cwd))
    if read is None:
        return Effects(event=command)
    if read.kind == "hits":
        return Effects(reads=[Read(h.path, (h.line, h.line), h.text, read) for h in read.hits])
    if read.kind == "listing":
        return Effects(reads=[Read(read.path, None, read.text, read, uri=read.uri)])
    if read.kind == "files":
        return Effects(reads=[
            Read(p.path, None if p.whole else (p.start, p.start + len(p.lines) - 1), "\n".join(p.lines), read)
            for p in read.parts])
    return Effects(reads=[Read(read.path, read.range, read.text, read)])


def _file_editor(action: Any, observation: Any, text: str) -> Effects:
    command = get(observation, "command") or get(action, "command")
    path = get(observation, "path") or get(action, "path")
    if not path:
        return Effects()
    effects = Effects()
    if command in FILE_EDITOR_WRITES:
        effects.writes.append(path)
    if command == "create":
        return effects  # the output shows no file content
    if command == "view" and text.startswith(DIR_VIEW_HEADER):
        read = _dir_view(str(path), text)
        if read is not None:
            effects.reads.append(read)
        return effects
    found = _listing.parse(text, _listing.CAT_N)
    if found is None:
        return effects  # a directory listing, an image
    whole = False
    if command == "view":
        # Without the action (condensed away) the range is unknown: a ranged
        # block is the safe reading.
        whole = action is not None and not get(action, "view_range")
    elif command == "undo_edit":
        whole = True  # undo shows the whole restored file
    whole = whole and not found.clipped and found.start == 1
    if not whole and not found.lines:
        return effects
    rng = None if whole else (found.start, found.end)
    view_range = get(action, "view_range") if command == "view" else None
    if view_range and len(view_range) == 2 and isinstance(view_range[1], int) and view_range[1] > 0:
        found.requested_end = view_range[1]
    effects.reads.append(Read(path, rng, found.text, found))
    return effects


# file_editor's view of a directory (openhands-tools 1.58.2, editor.py `view`):
# this header, then the directory itself and each entry not starting with "."
# two levels deep, one absolute path a line, directories ending in "/", then
# optionally "\n{N} hidden files/directories in this directory are excluded. ...".
DIR_VIEW_HEADER = "Here's the files and directories up to 2 levels deep in "
_DIR_VIEW_CLIPPED = "<response clipped>"


def _dir_view(path: str, text: str) -> Read | None:
    """A file_editor directory view as a listing source (`depth=2`, no hidden
    entries), or None when it cannot be told exactly what it listed."""
    head, sep, body = text.partition(":\n")
    if not sep or head != f"{DIR_VIEW_HEADER}{path}, excluding hidden items" or _DIR_VIEW_CLIPPED in text:
        return None  # another path spelling, or the tool cut the listing
    root = path.rstrip("/")
    if not root or not os.path.isdir(root) or os.path.islink(root):
        return None
    entries = body.split("\n\n", 1)[0].split("\n")
    if not entries or entries[0] != root + "/":
        return None
    out: list[str] = []
    for ln in entries[1:]:
        if not ln.startswith(root + "/") or ln == root + "/":
            return None
        rel = ln[len(root) + 1 :]
        is_dir = rel.endswith("/")
        rel = rel.rstrip("/")
        parts = rel.split("/")
        if not rel or len(parts) > 2 or any(not p or p.startswith(".") for p in parts):
            return None
        full = os.path.join(root, rel)
        if os.path.islink(full):
            if is_dir and len(parts) == 1:
                # The tool follows a symlink to a directory and lists its
                # entries; Concord's listing never enters a symlink, so it
                # could not tell when they change.
                return None
            is_dir = False  # Concord lists a symlink as a plain entry
        elif os.path.lexists(full):
            is_dir = os.path.isdir(full)
        # else: gone since the view; keep what the tool showed (the server says so)
        out.append(rel + "/" if is_dir else rel)
    listing = "\n".join(sorted(set(out), key=lambda s: s.encode()))
    uri = _terminal.listing_uri(root, depth=2, hidden=False)
    marker = _terminal.TerminalRead("listing", root, text=listing, uri=uri, screen=False)
    return Read(root, None, listing, marker, uri=uri)


def _read_file(action: Any, observation: Any, text: str, root: str | None) -> Effects:
    path = get(observation, "file_path") or get(action, "file_path")
    if not path:
        return Effects()
    found = _listing.parse(text, _listing.READ_FILE)
    if found is None:
        return Effects()
    whole = (
        found.start == 1
        and not get(observation, "is_truncated", False)
        and not (get(action, "offset") or 0)
    )
    if not whole and not found.lines:
        return Effects()
    rng = None if whole else (found.start, found.end)
    return Effects(reads=[Read(_abs(path, root), rng, found.text, found)])


def _apply_patch(observation: Any, root: str | None) -> Effects:
    commit = get(observation, "commit")
    changes = get(commit, "changes") or {}
    writes: list[str] = []
    for path, change in dict(changes).items():
        for p in (path, get(change, "move_path")):
            if p:
                ap = _abs(p, root)
                if ap not in writes:
                    writes.append(ap)
    return Effects(writes=writes)


def _abs(path: str, root: str | None) -> str:
    if os.path.isabs(path) or not root:
        return path
    return os.path.normpath(os.path.join(root, path))
