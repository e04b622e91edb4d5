"""What a run reports, defined once: `RunResult` (what `train` returns) and the final
return, the one figure the progress line, the summary, `podracer plot` and the learning
tests all call a run's return."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any
from typing import NamedTuple

import numpy as np


class RunResult(NamedTuple):
    """What a runtime's `train` returns (both runtimes)."""

    state: Any  # the runtime's final state (Anakin: RunnerState; Sebulba: TrainState)
    history: list[dict[str, Any]]  # the rows logged by this call, as in metrics.jsonl
    env_steps: int  # env steps of the whole run, resumed sessions included
    steps: int  # loop steps of the whole run (Anakin chunks, Sebulba updates)
    # Env steps per second of this session, compile excluded (`Run.sps_after_compile`).
    sps: float
    # What the runtime measured compiling (Anakin), else the first loop step's time beyond
    # a typical (median) one.
    compile_seconds: float
    interrupted: bool  # stopped by SIGINT/SIGTERM (a final checkpoint was written)
    run_dir: str  # the run directory
    # Programs of this session JAX loaded from its persistent cache (`compile_cache`)
    # instead of compiling: 0 on a first start, or without a cache.
    compile_cache_hits: int = 0
    # A resumed run's rows of its earlier sessions (metrics.jsonl up to the restored
    # checkpoint; process 0 only): `final_return` is the whole run's, as `podracer plot`'s.
    earlier: Sequence[dict[str, Any]] = ()

    def __repr__(self) -> str:
        """A one-line summary; `state` and `history` (params, every row) are left out."""
        members = {(r.get("member"), r.get("seed")) for r in self.history}
        return (
            f"RunResult(run_dir={self.run_dir!r}, env_steps={self.env_steps:,}, "
            f"steps={self.steps}, sps={self.sps:,.0f}, "
            f"final_return={final_return(self):.4g}, members={max(len(members), 1)}, "
            f"rows={len(self.history)}, compile_seconds={self.compile_seconds:.1f}, "
            f"compile_cache_hits={self.compile_cache_hits}, interrupted={self.interrupted})"
        )


FINAL_FRACTION = 0.1  # "final return": each seed's mean over its last 10% of env steps


def final_return(
    result: RunResult, fraction: float = FINAL_FRACTION, last: int | None = None
) -> float:
    """The run's final training return as `podracer plot` defines it: each seed's mean
    return over the rows of its last `fraction` of env steps that saw an episode end,
    then the mean over seeds, over the whole run (a resumed run's earlier sessions too).
    `last=k` takes each seed's last k such rows instead (the learning tests' bar)."""
    return history_return([*result.earlier, *result.history], fraction, last)


def history_return(
    history: list[dict[str, Any]], fraction: float = FINAL_FRACTION, last: int | None = None
) -> float:
    """`final_return` of the rows logged so far (the progress line's return)."""
    from podracer.runs.tools.aggregate import final_value

    by_seed: dict[Any, list[tuple[int, float]]] = {}
    for row in history:
        value = row.get("charts/episodic_return", math.nan)
        if row.get("charts/episodes", 1) > 0 and math.isfinite(value):
            member = (row.get("member"), row.get("seed"))  # a seed, or a sweep's member
            by_seed.setdefault(member, []).append((row["env_steps"], value))
    if not by_seed:
        return math.nan
    if last is not None:
        return float(np.mean([np.mean([v for _, v in rows[-last:]]) for rows in by_seed.values()]))
    finals = [final_value(*np.asarray(rows, np.float64).T, fraction) for rows in by_seed.values()]
    return float(np.mean(finals))
