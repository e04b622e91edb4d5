"""Greedy evaluation on a separate HostEnv: one episode per environment."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from podracer.agents import Agent
from podracer.envs import HostEnv

_NO_LIMIT_STEPS = 10_000  # cap for envs without a time limit


class Evaluator:
    """Runs `agent.greedy_act` on `env` (sync, one episode per env) on `device`."""

    def __init__(self, agent: Agent, env: HostEnv, device: jax.Device):
        self._env = env
        self._device = device
        self._act = jax.jit(agent.greedy_act)
        self._max_steps = (env.spec.max_episode_steps or _NO_LIMIT_STEPS) + 2

    def __call__(self, params: Any) -> float:
        """Mean undiscounted return of the first episode of every env (running return if cut)."""
        params = jax.device_put(params, self._device)
        ts = self._env.reset()
        n = self._env.num_envs
        finished = np.zeros(n, bool)
        returns = np.zeros(n, np.float32)
        for _ in range(self._max_steps):
            action = np.asarray(self._act(params, jax.device_put(ts.observation, self._device)))
            ts = self._env.step(action)
            newly = np.asarray(ts.episode_end_mask) & ~finished
            returns[newly] = np.asarray(ts.episode_return)[newly]
            finished |= newly
            if finished.all():
                break
        running = np.asarray(ts.episode_return)
        return float(np.mean(np.where(finished, returns, running)))

    def close(self) -> None:
        self._env.close()
