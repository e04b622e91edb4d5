"""What the learner logs: losses, episodes, policy lag, per-phase timing, utilisation.

Everything in a row is computed from the rollouts the learner consumed since the
previous row, so the learning metrics (returns, losses, lag) do not depend on thread
timing in deterministic mode; only `charts/SPS`, `timing/*` and `utilisation/*` do.
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

    def __init__(self) -> None:
        self.recent_return = math.nan  # the last mean episodic return seen
        self._recent_length = math.nan
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

    def row(self) -> dict[str, float]:
        """The metrics since the previous row; starts the next one."""
        seconds = max(time.perf_counter() - self._time, 1e-9)
        returns = np.concatenate(self._returns) if self._returns else np.zeros(0)
        lengths = np.concatenate(self._lengths) if self._lengths else np.zeros(0)
        if returns.size:
            self.recent_return = float(np.mean(returns))
            self._recent_length = float(np.mean(lengths))
        n = max(self._updates, 1)
        row = {
            "charts/episodic_return": self.recent_return,
            "charts/episodic_length": self._recent_length,
            "charts/episodes": float(returns.size),
            "charts/SPS": self._env_steps / seconds,
            **{k: v / n for k, v in sorted(self._losses.items())},
            "policy_lag/mean": float(np.mean(self._lags)) if self._lags else math.nan,
            "policy_lag/max": float(np.max(self._lags)) if self._lags else math.nan,
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
