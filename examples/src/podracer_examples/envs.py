"""A corridor, twice: as a pure-JAX `JaxEnv` and as a batched NumPy `HostEnv`.

The agent starts in cell 0 of `size` cells and moves left (action 0) or right (action
1); reaching the last cell pays 1 and ends the episode (a termination). An episode that
has not arrived after `max_steps` steps is truncated. Observations are the one-hot cell.
A random walk rarely arrives within the limit when `size` is large; a learned policy
always does, in `size - 1` steps.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from podracer.envs import EnvSpec
from podracer.envs import TimeStep
from podracer.envs import init_episode_stats
from podracer.envs import update_episode_stats
from podracer.envs.types import first_timestep


class CorridorState(NamedTuple):
    position: jax.Array  # [] int32
    t: jax.Array  # [] int32, steps into the episode
    stats: object  # the running episode's return and length (EpisodeStats)


class Corridor:
    """The corridor as a `JaxEnv`: pure, unbatched, resetting in the step that ends an
    episode (`final_observation` holds the ended episode's last observation)."""

    def __init__(self, size: int = 5, max_steps: int | None = None):
        if size < 2:
            raise ValueError(f"Corridor: size must be >= 2, got {size}")
        self.size = int(size)
        self.max_steps = int(max_steps or 4 * size)
        self.spec = EnvSpec(
            "corridor", (self.size,), "float32", num_actions=2, max_episode_steps=self.max_steps
        )

    def _observe(self, position):
        return jax.nn.one_hot(position, self.size, dtype=jnp.float32)

    def reset(self, key):
        del key  # always starts in cell 0
        state = CorridorState(jnp.int32(0), jnp.int32(0), init_episode_stats((), jnp))
        return state, first_timestep(self._observe(state.position))

    def step(self, state, action, key):
        del key  # deterministic
        position = jnp.clip(state.position + 2 * action.astype(jnp.int32) - 1, 0, self.size - 1)
        t = state.t + 1
        terminated = position == self.size - 1
        truncated = ~terminated & (t >= self.max_steps)
        done = terminated | truncated
        reward = terminated.astype(jnp.float32)
        stats, ended = update_episode_stats(state.stats, reward, done)
        final = self._observe(position)
        position = jnp.where(done, 0, position)  # the next episode starts here
        next_state = CorridorState(position, jnp.where(done, 0, t), stats)
        return next_state, TimeStep(
            observation=self._observe(position),
            reward=reward,
            terminated=terminated,
            truncated=truncated,
            first=done,
            final_observation=final,
            episode_return=ended.episode_return,
            episode_length=ended.episode_length,
            episode_end=done,
        )


class CorridorHost:
    """The corridor as a `HostEnv`: `num_envs` corridors stepped together in NumPy.

    A host env's factory takes `num_envs` (that is how the registry tells it from a JaxEnv
    factory) and, where it wants them, `seed` and `batch_size`. This one steps every env
    at once (`batch_size == num_envs`); `send`/`recv` serve the asynchronous interface.
    """

    def __init__(self, num_envs: int, seed: int = 0, size: int = 5, max_steps: int | None = None):
        self._jax = Corridor(size, max_steps)  # the same task, for its spec and sizes
        self.spec = dataclasses.replace(self._jax.spec, name="corridor-host")
        self.num_envs = self.batch_size = int(num_envs)
        self.size, self.max_steps = self._jax.size, self._jax.max_steps
        self._position = np.zeros(num_envs, np.int32)
        self._t = np.zeros(num_envs, np.int32)
        self._stats = init_episode_stats((num_envs,))
        self._pending: np.ndarray | None = None

    def _observe(self, position):
        return np.eye(self.size, dtype=np.float32)[position]

    def reset(self) -> TimeStep:
        self._position[:] = 0
        self._t[:] = 0
        self._stats = init_episode_stats((self.num_envs,))
        obs = self._observe(self._position)
        false = np.zeros(self.num_envs, bool)
        zeros = np.zeros(self.num_envs, np.float32)
        return TimeStep(obs, zeros, false, false, ~false, obs, zeros,
                        np.zeros(self.num_envs, np.int32), false)  # fmt: skip

    def step(self, actions: np.ndarray) -> TimeStep:
        moved = np.clip(self._position + 2 * np.asarray(actions, np.int32) - 1, 0, self.size - 1)
        self._t += 1
        terminated = moved == self.size - 1
        truncated = ~terminated & (self._t >= self.max_steps)
        done = terminated | truncated
        reward = terminated.astype(np.float32)
        self._stats, ended = update_episode_stats(self._stats, reward, done)
        final = self._observe(moved)
        self._position = np.where(done, 0, moved).astype(np.int32)
        self._t = np.where(done, 0, self._t).astype(np.int32)
        return TimeStep(self._observe(self._position), reward, terminated, truncated, done,
                        final, ended.episode_return, ended.episode_length, done)  # fmt: skip

    def async_reset(self) -> None:
        self._pending = self.reset()

    def send(self, actions: np.ndarray, env_ids: np.ndarray) -> None:
        ordered = np.zeros(self.num_envs, np.int32)
        ordered[np.asarray(env_ids)] = actions
        self._pending = self.step(ordered)

    def recv(self) -> tuple[TimeStep, np.ndarray]:
        timestep, self._pending = self._pending, None
        return timestep, np.arange(self.num_envs)

    def close(self) -> None:
        pass
