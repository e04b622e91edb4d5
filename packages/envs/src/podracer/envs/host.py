"""Any `JaxEnv` as a `HostEnv`: a batch stepped by one compiled, vmapped step, NumPy in/out.

Lets Sebulba run (and be compared with Anakin on) the same pure-JAX environments. The
JaxEnv resets within the step, so there is no dummy transition here: `first` marks a
new episode's observation and the transition into it is real (terminated or truncated).

Async mode steps the envs of each `send` at once (one compiled call for `batch_size`
envs) and queues their results; `recv` hands them out in the order they were sent.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from podracer.envs.checks import check_actions
from podracer.envs.checks import check_env_ids
from podracer.envs.checks import check_sizes
from podracer.envs.types import JaxEnv
from podracer.envs.types import TimeStep


class JaxHostEnv:
    """`num_envs` copies of a `JaxEnv` behind the `HostEnv` interface."""

    def __init__(self, env: JaxEnv, num_envs: int, batch_size: int, seed: int) -> None:
        self.spec = env.spec
        self.num_envs = num_envs
        self.batch_size = batch_size
        self._env = env
        self._key = jax.random.key(seed)
        self._state: Any = None  # [num_envs] the env states, on device
        self._reset = jax.jit(self._reset_all)
        self._step_all = jax.jit(self._step_all_impl, donate_argnums=0)
        self._step_ids = jax.jit(self._step_ids_impl, donate_argnums=0)
        # Async bookkeeping (host side).
        self._results: TimeStep | None = None  # [num_envs] latest TimeStep of every env
        self._ready = np.zeros(0, np.int32)  # [n] env ids with a result to recv, in order
        self._awaiting = np.zeros(num_envs, np.bool_)  # [num_envs] received, action not sent

    def _reset_all(self, key):
        key, sub = jax.random.split(key)
        state, ts = jax.vmap(self._env.reset)(jax.random.split(sub, self.num_envs))
        return state, key, ts

    def _step_all_impl(self, state, actions, key):
        key, sub = jax.random.split(key)
        state, ts = jax.vmap(self._env.step)(state, actions, jax.random.split(sub, self.num_envs))
        return state, key, ts

    def _step_ids_impl(self, state, actions, ids, key):
        key, sub = jax.random.split(key)
        keys = jax.random.split(sub, ids.shape[0])
        sub_state = jax.tree.map(lambda x: x[ids], state)
        sub_state, ts = jax.vmap(self._env.step)(sub_state, actions, keys)
        state = jax.tree.map(lambda x, y: x.at[ids].set(y), state, sub_state)
        return state, key, ts

    def reset(self) -> TimeStep:
        self._state, self._key, ts = self._reset(self._key)
        return jax.device_get(ts)

    def step(self, actions: np.ndarray) -> TimeStep:
        if self._state is None:
            raise RuntimeError("call reset() (or async_reset()) before step()")
        actions = check_actions(actions, self.num_envs, self.spec)
        self._state, self._key, ts = self._step_all(self._state, actions, self._key)
        return jax.device_get(ts)

    def async_reset(self) -> None:
        self._results = jax.tree.map(np.array, self.reset())  # writable copies
        self._ready = np.arange(self.num_envs, dtype=np.int32)
        self._awaiting[:] = False

    def send(self, actions: np.ndarray, env_ids: np.ndarray) -> None:
        if self._results is None:
            raise RuntimeError("call async_reset() before send()")
        env_ids = check_env_ids(env_ids, None, self.num_envs)
        if not self._awaiting[env_ids].all() or np.unique(env_ids).size != env_ids.size:
            raise ValueError(
                f"env_ids must be distinct ids returned by recv() and not sent since, "
                f"awaiting: {np.flatnonzero(self._awaiting).tolist()}, got {env_ids.tolist()}"
            )
        actions = check_actions(actions, env_ids.shape[0], self.spec)
        self._state, self._key, ts = self._step_ids(self._state, actions, env_ids, self._key)
        jax.tree.map(lambda b, v: b.__setitem__(env_ids, v), self._results, jax.device_get(ts))
        self._awaiting[env_ids] = False
        self._ready = np.concatenate([self._ready, env_ids])

    def recv(self) -> tuple[TimeStep, np.ndarray]:
        if self._results is None:
            raise RuntimeError("call async_reset() before recv()")
        if self._ready.size < self.batch_size:
            raise RuntimeError(
                f"recv() needs results of batch_size={self.batch_size} envs but only "
                f"{self._ready.size} are ready: send(actions, env_ids) for the envs that "
                "recv() returned first"
            )
        ids, self._ready = self._ready[: self.batch_size], self._ready[self.batch_size :]
        self._awaiting[ids] = True
        return jax.tree.map(lambda b: b[ids], self._results), ids

    def close(self) -> None:
        self._state = self._results = None


def as_host_env(
    env: JaxEnv, num_envs: int, seed: int = 0, batch_size: int | None = None
) -> JaxHostEnv:
    """Runs `num_envs` copies of the `JaxEnv` `env` as a `HostEnv` (numpy in and out).

    `batch_size` (default `num_envs`) is the number of envs `recv()` returns in async
    mode; `reset()`/`step()` always step all `num_envs`.
    """
    batch_size = check_sizes(num_envs, batch_size)
    return JaxHostEnv(env, int(num_envs), batch_size, int(seed))
