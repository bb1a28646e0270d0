"""What Concord adds to each model call in the agent-server setup.

A benchmark, not a test: it prints figures and asserts nothing about time.
One real `openhands-agent-server` (started as the sandbox image starts it,
tests/agent_server.py) runs the same scripted session, alternately with
ConcordCondenser and with no condenser, against the fake model on 127.0.0.1.
The session: the agent views FILES files one per call, edits some, the test
writes others from outside, then the agent thinks for the remaining calls.

Two figures per model call:
- end to end: the gap from the fake model's answer to the agent's next
  request (the server's tool run, its event handling and, with Concord,
  condense() with its `observe`/`sync` calls), with minus without Concord;
  on a shared machine this difference is within the noise;
- direct: the time spent in ConcordCondenser.condense() inside the server
  (bench/concord_bench_probe.py wraps it), which is all Concord adds before
  a model call. A session's first condense() also starts `concord serve`,
  so it is reported apart.

    make -C bindings/python bench CONCORD_BIN=$PWD/bin/concord
    .venv/bin/python bench/agent_server_overhead.py --sessions 5 --calls 30
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENHANDS_SUPPRESS_BANNER", "1")
os.environ.setdefault("LOG_LEVEL", "WARNING")  # the figures, not the SDK's INFO lines
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from pydantic import SecretStr  # noqa: E402

from openhands.sdk import LLM, Agent, Conversation, Tool  # noqa: E402
from openhands.sdk.workspace import RemoteWorkspace  # noqa: E402
from openhands.tools.file_editor import FileEditorTool  # noqa: E402,F401 (its events validate here too)

from agent_server import AgentServer, build_context  # noqa: E402
from concord_openhands import ConcordCondenser  # noqa: E402
from fake_llm import FakeLLM, Reply, Request  # noqa: E402


def lines(name: str, n: int, tag: str = "") -> str:
    return "".join(f"{name} line {i}: value {i}{tag}\n" for i in range(1, n + 1))


def session(server: AgentServer, ws: Path, *, concord: bool, files: int, calls: int) -> list[float]:
    """One conversation; the gaps (seconds) before model calls 2..calls."""
    names = [f"f{i:02d}.txt" for i in range(files)]
    for n in names:
        (ws / n).write_text(lines(n, 200))
    arrivals: list[float] = []
    answered: list[float] = []

    def step(k: int):
        def run(req: Request) -> Reply:
            arrivals.append(time.perf_counter())
            if k < files:
                reply = Reply.call(f"view_{k}", "file_editor", command="view", path=str(ws / names[k]))
            elif k < files + files // 2 and k % 2 == 0:
                n = names[k - files]
                reply = Reply.call(f"edit_{k}", "file_editor", command="str_replace", path=str(ws / n),
                                   old_str=f"{n} line 7: value 7\n", new_str=f"{n} line 7: value 7 edited\n")
            elif k == calls - 1:
                reply = Reply.finish()
            else:
                if k < files + files // 2:  # an outside write to a file the agent read
                    n = names[k - files]
                    (ws / n).write_text(lines(n, 200, " outside"))
                reply = Reply.call(f"think_{k}", "think", thought=f"step {k}")
            answered.append(time.perf_counter())
            return reply
        return run

    with FakeLLM([step(k) for k in range(calls)], untooled="Bench") as fake:
        llm = LLM(usage_id="agent", model="openai/fake", base_url=fake.base_url, api_key=SecretStr("x"),
                  api_mode="chat", num_retries=0, timeout=30)
        condenser = ConcordCondenser(roots=[str(ws)], placement="inplace") if concord else None
        agent = Agent(llm=llm, tools=[Tool(name="file_editor")], condenser=condenser)
        conv = Conversation(agent=agent, workspace=RemoteWorkspace(host=server.url, working_dir=str(ws)),
                            visualizer=None)
        try:
            conv.send_message("Work through the files.")
            conv.run(poll_interval=0.1, timeout=300)
            fake.check()
            if concord:  # the repairs happened: the benchmark measured real work
                assert any("outside" in t for t in fake.requests[-1].tool_results().values())
        finally:
            conv.close()
    return [arrivals[i + 1] - answered[i] for i in range(len(arrivals) - 1)]


def ms(xs: list[float]) -> str:
    return f"{statistics.median(xs) * 1e3:7.1f} ms median, {statistics.mean(xs) * 1e3:7.1f} ms mean"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sessions", type=int, default=4, help="sessions per setup (alternating)")
    ap.add_argument("--calls", type=int, default=24, help="model calls per session")
    ap.add_argument("--files", type=int, default=8, help="files viewed per session (200 lines each)")
    ap.add_argument("--concord-bin", default=os.environ.get("CONCORD_BIN")
                    or str(Path(__file__).resolve().parents[3] / "bin" / "concord"))
    args = ap.parse_args()
    assert args.calls > args.files + args.files // 2 + 1, "--calls must exceed 1.5 x --files + 1"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        context = build_context(root / "image", args.concord_bin)
        probe = root / "condense.txt"
        os.environ["CONCORD_BENCH_PROBE"] = str(probe)
        with AgentServer(root, context=context, log=root / "server.log",
                         probe=Path(__file__).resolve().parent / "concord_bench_probe.py") as server:
            gaps: dict[bool, list[list[float]]] = {True: [], False: []}
            session(server, _ws(root, "warmup"), concord=True, files=4, calls=8)  # imports, first server
            probe.write_text("")
            for i in range(args.sessions):
                for concord in (False, True):
                    gaps[concord].append(session(server, _ws(root, f"{concord}{i}"), concord=concord,
                                                 files=args.files, calls=args.calls))
        condense: dict[str, list[float]] = {}
        for line in probe.read_text().splitlines():
            key, secs = line.split()
            condense.setdefault(key, []).append(float(secs))
    print(f"agent server 1.58.2 on 127.0.0.1, {args.sessions} sessions per setup, {args.calls} model calls "
          f"each ({args.files} views of 200-line files, {args.files // 4} edits by the agent, "
          f"{args.files // 4} outside writes, repaired)")
    for concord in (False, True):
        rest = [x for g in gaps[concord] for x in g[1:]]
        print(f"  end to end, {'with Concord   ' if concord else 'without Concord'}: {ms(rest)} per call")
    added = statistics.median([x for g in gaps[True] for x in g[1:]]) - statistics.median(
        [x for g in gaps[False] for x in g[1:]])
    print(f"  end to end, difference: {added * 1e3:+.1f} ms per call (median)")
    firsts = [v[0] for v in condense.values()]
    rest = [x for v in condense.values() for x in v[1:]]
    print(f"  in condense(): {ms(rest)} per call; a session's first call {ms(firsts)} "
          f"(starts concord serve); {len(rest) + len(firsts)} calls")


def _ws(root: Path, name: str) -> Path:
    ws = root / "ws" / name
    ws.mkdir(parents=True)
    return ws


if __name__ == "__main__":
    main()
