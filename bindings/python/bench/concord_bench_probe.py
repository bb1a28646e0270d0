"""Imported into the benchmark's agent server (after concord_openhands): times
each ConcordCondenser.condense() call and appends `<condenser id> <seconds>`
to $CONCORD_BENCH_PROBE. Benchmark use only."""

import os
import time

from concord_openhands.condenser import ConcordCondenser

_condense = ConcordCondenser.condense
_OUT = os.environ["CONCORD_BENCH_PROBE"]


def _timed(self, view, agent_llm=None):
    t = time.perf_counter()
    try:
        return _condense(self, view, agent_llm)
    finally:
        with open(_OUT, "a") as f:
            f.write(f"{id(self)} {time.perf_counter() - t:.6f}\n")


ConcordCondenser.condense = _timed
