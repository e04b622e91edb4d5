"""What a JaxEnv that resets within its step does at an episode end, once for every
adapter that wraps a library without that contract (Craftax, Jumanji): choose the next
episode's state and observation, keep the ended one's last observation, and carry the
episode statistics (`podracer.envs.types` states the contract).
"""

from __future__ import annotations

from typing import Any

import chex
import jax
import jax.numpy as jnp

from podracer.envs.stats import EpisodeStats
from podracer.envs.stats import update_episode_stats
from podracer.envs.types import TimeStep


def select_tree(pred: chex.Array, on_true: Any, on_false: Any) -> Any:
    """`on_true` where `pred` (a scalar), leaf by leaf, in `on_false`'s dtypes."""

    def pick(x, y):
        x, y = jnp.asarray(x), jnp.asarray(y)
        return jax.lax.select(pred, x if x.dtype == y.dtype else x.astype(y.dtype), y)

    return jax.tree.map(pick, on_true, on_false)


def reset_in_step(
    stats: EpisodeStats,
    state: Any,
    observation: chex.Array,
    reset_state: Any,
    reset_observation: chex.Array,
    reward: chex.Array,
    terminated: chex.Array,
    truncated: chex.Array,
) -> tuple[EpisodeStats, Any, TimeStep]:
    """`(stats, state, timestep)` after one step of one env: where the episode ended
    (`terminated | truncated`), the reset state and observation replace the stepped ones
    and `final_observation` keeps the ended episode's last."""
    done = terminated | truncated
    reward = jnp.asarray(reward, jnp.float32)
    stats, emitted = update_episode_stats(stats, reward, done)
    timestep = TimeStep(
        observation=select_tree(done, reset_observation, observation),
        reward=reward,
        terminated=terminated,
        truncated=truncated,
        first=done,
        final_observation=observation,
        episode_return=emitted.episode_return,
        episode_length=emitted.episode_length,
        episode_end=done,
    )
    return stats, select_tree(done, reset_state, state), timestep
