"""What the learner logs: losses, episodes, policy lag, per-phase timing, utilisation.

Everything in a row is computed from the rollouts the learner consumed since the
previous row, so the learning metrics (returns, losses, lag) do not depend on thread
timing in deterministic mode; only `charts/SPS`, `timing/*` and `utilisation/*` do.

With several processes, episodes, env steps (SPS) and policy lag are totals over all
processes (one small all-gather per row, which every process computes at the same
update); losses are already global; `timing/*` and `utilisation/*` are this process's.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import numpy as np

from podracer.sebulba.actor import Rollout

# Actor phases that are waiting rather than working (for actor utilisation).
_ACTOR_IDLE = ("params", "queue_put")


class MetricAccumulator:
    """Sums per-update quantities and turns them into one metric row."""

    def __init__(self, num_processes: int = 1) -> None:
        self._num_processes = num_processes
        self.recent_return = math.nan  # the last mean episodic return seen
        self._recent_length = math.nan
        # Whole-run seconds per stage, from the second update on (the first one's holds
        # the compiles): the end-of-run breakdown (`stages`).
        self._seen_updates = 0
        self._run_actor: dict[str, float] = {}
        self._run_learner: dict[str, float] = {}
        self._run_rollouts = 0
        self._run_updates = 0
        self._start()

    def _start(self) -> None:
        self._time = time.perf_counter()
        self._updates = 0
        self._env_steps = 0
        self._losses: dict[str, float] = {}
        self._returns: list[np.ndarray] = []
        self._lengths: list[np.ndarray] = []
        self._lags: list[int] = []
        self._actor: dict[str, float] = {}
        self._rollouts = 0
        self._learner = {"wait": 0.0, "update": 0.0, "publish": 0.0}

    def add_update(
        self,
        version: int,
        rollouts: Sequence[Rollout],
        losses: dict[str, float],
        wait_s: float,
        update_s: float,
        publish_s: float,
    ) -> None:
        """One update that ran on params `version` with `rollouts`."""
        self._updates += 1
        for k, v in losses.items():
            self._losses[k] = self._losses.get(k, 0.0) + v
        for r in rollouts:
            self._env_steps += r.env_steps
            self._returns.append(r.episode_returns)
            self._lengths.append(r.episode_lengths)
            self._lags.append(version - r.version)
            for k, v in r.timing.items():
                self._actor[k] = self._actor.get(k, 0.0) + v
            self._rollouts += 1
        self._learner["wait"] += wait_s
        self._learner["update"] += update_s
        self._learner["publish"] += publish_s
        self._seen_updates += 1
        if self._seen_updates > 1:
            for r in rollouts:
                for k, v in r.timing.items():
                    self._run_actor[k] = self._run_actor.get(k, 0.0) + v
            self._run_rollouts += len(rollouts)
            self._run_updates += 1
            for k, v in (("wait", wait_s), ("update", update_s), ("publish", publish_s)):
                self._run_learner[k] = self._run_learner.get(k, 0.0) + v

    def row(self) -> dict[str, float]:
        """The metrics since the previous row; starts the next one."""
        seconds = max(time.perf_counter() - self._time, 1e-9)
        returns = np.concatenate(self._returns) if self._returns else np.zeros(0)
        lengths = np.concatenate(self._lengths) if self._lengths else np.zeros(0)
        sums = np.array([
            returns.sum(), returns.size, lengths.sum(), self._env_steps,
            sum(self._lags), len(self._lags), max(self._lags, default=-1),
        ], np.float64)  # fmt: skip
        if self._num_processes > 1:
            sums = _sum_over_processes(sums, max_columns=(6,))
        ret_sum, episodes, len_sum, env_steps, lag_sum, lag_count, lag_max = sums.tolist()
        if episodes:
            self.recent_return = ret_sum / episodes
            self._recent_length = len_sum / episodes
        n = max(self._updates, 1)
        row = {
            "charts/episodic_return": self.recent_return,
            "charts/episodic_length": self._recent_length,
            "charts/episodes": episodes,
            "charts/SPS": env_steps / seconds,
            **{k: v / n for k, v in sorted(self._losses.items())},
            "policy_lag/mean": lag_sum / lag_count if lag_count else math.nan,
            "policy_lag/max": lag_max if lag_count else math.nan,
        }
        per_rollout = max(self._rollouts, 1)
        for k, v in sorted(self._actor.items()):
            row[f"timing/actor_{k}"] = v / per_rollout
        for k, v in self._learner.items():
            row[f"timing/learner_{k}"] = v / n
        actor_total = sum(self._actor.values())
        if actor_total > 0:
            idle = sum(self._actor.get(k, 0.0) for k in _ACTOR_IDLE)
            row["utilisation/actor"] = 1.0 - idle / actor_total
        row["utilisation/learner"] = self._learner["update"] / seconds
        self._start()
        return row


def _sum_over_processes(values: np.ndarray, max_columns: Sequence[int] = ()) -> np.ndarray:
    """Sums `values` `[n]` over all processes (the max for `max_columns`); a collective."""
    from jax.experimental import multihost_utils

    gathered = np.asarray(multihost_utils.process_allgather(values), np.float64)  # [P, n]
    out = gathered.sum(axis=0)
    for i in max_columns:
        out[i] = gathered[:, i].max()
    return out


def stages(accumulators: Sequence[MetricAccumulator]) -> str:
    """Where the pipeline's time went over the run (compiles left out), one line: each
    actor phase in ms per rollout (the mean over every actor thread, all seeds' with
    `--num-seeds`; phases add up to a rollout's wall time) and each learner phase in ms
    per update (one update serves every seed). "" before the second update."""
    first = accumulators[0]
    if not first._run_updates:
        return ""
    actor_s: dict[str, float] = {}
    for acc in accumulators:
        for k, v in acc._run_actor.items():
            actor_s[k] = actor_s.get(k, 0.0) + v
    rollouts = sum(acc._run_rollouts for acc in accumulators)
    ms = lambda total, n: f"{1e3 * total / n:,.1f}"  # noqa: E731
    actor = ", ".join(f"{k} {ms(v, rollouts)}" for k, v in sorted(actor_s.items()))
    learner = ", ".join(f"{k} {ms(v, first._run_updates)}" for k, v in first._run_learner.items())
    total = sum(actor_s.values())
    idle = sum(actor_s.get(k, 0.0) for k in _ACTOR_IDLE)
    busy = f"; actors busy {1 - idle / total:.0%}" if total > 0 else ""
    return f"stages, ms per rollout: {actor} | ms per update: {learner}{busy}"
