"""Running episode statistics, carried in an adapter's state and reset at episode ends.

One pure update works on NumPy (host adapters) and JAX arrays (pure-JAX adapters, and the
envpool XLA path), unbatched or batched: it uses arithmetic only, no array module calls.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from podracer.envs.types import Array


class EpisodeStats(NamedTuple):
    """The return and length so far of the running episode (reset to 0 after an end)."""

    episode_return: Array  # [...] float32, unclipped return of the running episode
    episode_length: Array  # [...] int32, transitions taken in the running episode


def init_episode_stats(shape: tuple[int, ...] = (), xp=np) -> EpisodeStats:
    """Zero statistics of `shape`; `xp` is `numpy` or `jax.numpy`."""
    return EpisodeStats(xp.zeros(shape, xp.float32), xp.zeros(shape, xp.int32))


def update_episode_stats(
    stats: EpisodeStats, reward: Array, episode_end: Array, counts: Array | bool = True
) -> tuple[EpisodeStats, EpisodeStats]:
    """Adds one transition; returns `(carried, emitted)`.

    Args:
      stats: the statistics before this transition.
      reward: [...] float32, unclipped reward of this transition.
      episode_end: [...] bool, the episode ends with this transition.
      counts: [...] bool, the transition counts towards the length (False for envpool's
        dummy reset transition, whose reward is 0).

    Returns:
      `emitted` holds the statistics including this transition (final where
      `episode_end`); `carried` is the same, zeroed where `episode_end`.
    """
    emitted = EpisodeStats(
        stats.episode_return + reward,
        stats.episode_length + counts,
    )
    keep = ~episode_end
    carried = EpisodeStats(emitted.episode_return * keep, emitted.episode_length * keep)
    return carried, emitted
