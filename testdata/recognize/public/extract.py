#!/usr/bin/env python3
"""Regenerate commands.json from the fetched public repositories.

Usage: extract.py MIRROR_DIR > commands.json
MIRROR_DIR holds the bare clones the fetch tool makes
(MIRROR_DIR/SWE-agent+mini-swe-agent/repo, MIRROR_DIR/SWE-agent+SWE-agent/repo).
Stdlib only; reads blobs with `git show COMMIT:PATH`, so the result is the
same whatever the clones' checked-out state.
"""
import json
import subprocess
import sys

# Each source: repository, commit, path prefix, license (read from the
# repository's LICENSE file at that commit), how many commands to keep.
SOURCES = [
    {
        "repo": "SWE-agent/mini-swe-agent",
        "dir": "SWE-agent+mini-swe-agent/repo",
        # refs/pull/816/head: DeepSeek evaluation trajectories contributed to
        # the repository (mini-swe-agent-1.1 format, bash tool calls).
        "commit": "ec0e8e849fea5b1619deb1753007201000904672",
        "prefix": "output/",
        "suffix": ".traj.json",
        "license": "MIT",
        "kind": "mini",
        "limit": 400,
    },
    {
        "repo": "SWE-agent/SWE-agent",
        "dir": "SWE-agent+SWE-agent/repo",
        "commit": "3ea751c087f32b16e039a2233dd6eefecef325d5",
        "prefix": "trajectories/demonstrations/",
        "suffix": ".traj",
        "license": "MIT",
        "kind": "swe",
        "limit": 100,
    },
]


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True).stdout


def mini_commands(traj):
    for m in traj.get("messages", []):
        for tc in m.get("tool_calls") or []:
            fn = tc.get("function") or {}
            try:
                args = json.loads(fn.get("arguments") or "{}")
            except ValueError:
                continue
            if isinstance(args, dict) and isinstance(args.get("command"), str):
                yield args["command"]


def swe_commands(traj):
    for step in traj.get("trajectory", []):
        a = step.get("action")
        if isinstance(a, str):
            yield a


def main():
    root = sys.argv[1]
    out, seen = [], set()
    for s in SOURCES:
        repo = f"{root}/{s['dir']}"
        names = git(repo, "ls-tree", "-r", "--name-only", s["commit"]).decode().splitlines()
        files = sorted(n for n in names if n.startswith(s["prefix"]) and n.endswith(s["suffix"]))
        # Round-robin over the trajectories so that no single run dominates.
        per_file, missing = [], 0
        for f in files:
            try:
                traj = json.loads(git(repo, "show", f"{s['commit']}:{f}"))
            except subprocess.CalledProcessError:
                # The snapshot leaves its largest blobs out: skipped, and
                # counted on stderr so a regeneration shows what it lacked.
                missing += 1
                continue
            except ValueError:
                continue
            cmds = mini_commands(traj) if s["kind"] == "mini" else swe_commands(traj)
            per_file.append((f, [c.strip() for c in cmds if c.strip()]))
        print(f"{s['repo']}: {len(files)} files, {missing} absent", file=sys.stderr)
        # Every unique command in file order, then an evenly spaced sample
        # of them: every phase of a run (exploring, reading, editing,
        # testing) keeps its share, and no single run dominates.
        pool = []
        for f, cmds in per_file:
            for c in cmds:
                if c not in seen:
                    seen.add(c)
                    pool.append((f, c))
        step = max(len(pool) / s["limit"], 1.0)
        picked = sorted({int(k * step) for k in range(min(s["limit"], len(pool)))})
        print(f"{s['repo']}: {len(pool)} unique commands, {len(picked)} kept", file=sys.stderr)
        for k in picked:
            f, c = pool[k]
            out.append({"command": c, "source": f"{s['repo']}@{s['commit']}:{f}", "license": s["license"]})
    json.dump(out, sys.stdout, indent=1, ensure_ascii=False)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
