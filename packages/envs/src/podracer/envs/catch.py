"""Catch, the Podracer paper's demonstration environment, as a pure-JAX `JaxEnv`.

A ball starts in a random column of the top row of a `rows x columns` board and falls one
row per step; the agent moves a paddle along the bottom row (actions 0: left, 1: stay,
2: right). When the ball reaches the bottom row the episode terminates with reward +1 if
the paddle is under it, else -1 (every episode lasts `rows - 1` steps).
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp

from podracer.envs.stats import EpisodeStats
from podracer.envs.stats import init_episode_stats
from podracer.envs.stats import update_episode_stats
from podracer.envs.types import EnvSpec
from podracer.envs.types import TimeStep
from podracer.envs.types import first_timestep


class CatchState(NamedTuple):
    ball_x: chex.Array  # [] int32, ball column
    ball_y: chex.Array  # [] int32, ball row (0 at the top)
    paddle_x: chex.Array  # [] int32, paddle column (the paddle is in the bottom row)
    stats: EpisodeStats  # running return and length


@dataclasses.dataclass(frozen=True)
class Catch:
    """Catch with the Podracer paper's defaults: 10 rows, 5 columns, 3 actions."""

    rows: int = 10
    columns: int = 5

    def __post_init__(self) -> None:
        if self.rows < 2 or self.columns < 1:
            raise ValueError(
                f"Catch needs rows >= 2 and columns >= 1, got rows={self.rows}, "
                f"columns={self.columns}"
            )

    @property
    def spec(self) -> EnvSpec:
        return EnvSpec("catch", (self.rows, self.columns), "float32", 3, None)

    def _observe(self, ball_x, ball_y, paddle_x) -> chex.Array:
        row = jnp.arange(self.rows, dtype=jnp.int32)[:, None]  # [rows, 1]
        col = jnp.arange(self.columns, dtype=jnp.int32)[None, :]  # [1, columns]
        ball = (row == ball_y) & (col == ball_x)
        paddle = (row == self.rows - 1) & (col == paddle_x)
        return (ball | paddle).astype(jnp.float32)  # [rows, columns]

    def _start(self, key: chex.PRNGKey) -> tuple[chex.Array, chex.Array, chex.Array]:
        ball_x = jax.random.randint(key, (), 0, self.columns, dtype=jnp.int32)
        return ball_x, jnp.int32(0), jnp.int32(self.columns // 2)

    def reset(self, key: chex.PRNGKey) -> tuple[CatchState, TimeStep]:
        ball_x, ball_y, paddle_x = self._start(key)
        obs = self._observe(ball_x, ball_y, paddle_x)
        state = CatchState(ball_x, ball_y, paddle_x, init_episode_stats((), jnp))
        return state, first_timestep(obs)

    def step(
        self, state: CatchState, action: chex.Array, key: chex.PRNGKey
    ) -> tuple[CatchState, TimeStep]:
        action = jnp.asarray(action, jnp.int32)
        paddle_x = jnp.clip(state.paddle_x + action - 1, 0, self.columns - 1)
        ball_y = state.ball_y + 1
        terminated = ball_y == self.rows - 1
        reward = jnp.where(terminated, jnp.where(paddle_x == state.ball_x, 1.0, -1.0), 0.0).astype(
            jnp.float32
        )
        final_obs = self._observe(state.ball_x, ball_y, paddle_x)

        # Auto-reset within the step.
        new_x, new_y, new_paddle = self._start(key)
        ball_x = jnp.where(terminated, new_x, state.ball_x)
        ball_y = jnp.where(terminated, new_y, ball_y)
        paddle_x = jnp.where(terminated, new_paddle, paddle_x)
        obs = jnp.where(terminated, self._observe(ball_x, ball_y, paddle_x), final_obs)

        stats, emitted = update_episode_stats(state.stats, reward, terminated)
        return CatchState(ball_x, ball_y, paddle_x, stats), TimeStep(
            observation=obs,
            reward=reward,
            terminated=terminated,
            truncated=jnp.bool_(False),
            first=terminated,
            final_observation=final_obs,
            episode_return=emitted.episode_return,
            episode_length=emitted.episode_length,
            episode_end=terminated,
        )
