import jax.numpy as jnp
import numpy as np

from podracer.envs import EpisodeStats
from podracer.envs import init_episode_stats
from podracer.envs import update_episode_stats


def test_update_accumulates_and_resets_at_episode_end():
    stats = init_episode_stats((3,))
    rewards = [np.array([1.0, -2.0, 0.5], np.float32), np.array([1.0, 3.0, 0.5], np.float32)]
    ends = [np.array([False, True, False]), np.array([True, False, False])]
    carried, emitted = update_episode_stats(stats, rewards[0], ends[0])
    np.testing.assert_array_equal(emitted.episode_return, [1.0, -2.0, 0.5])
    np.testing.assert_array_equal(emitted.episode_length, [1, 1, 1])
    np.testing.assert_array_equal(carried.episode_return, [1.0, 0.0, 0.5])
    np.testing.assert_array_equal(carried.episode_length, [1, 0, 1])
    carried, emitted = update_episode_stats(carried, rewards[1], ends[1])
    np.testing.assert_array_equal(emitted.episode_return, [2.0, 3.0, 1.0])
    np.testing.assert_array_equal(emitted.episode_length, [2, 1, 2])
    np.testing.assert_array_equal(carried.episode_length, [0, 1, 2])
    assert emitted.episode_return.dtype == np.float32
    assert emitted.episode_length.dtype == np.int32


def test_uncounted_transitions_add_reward_but_not_length_in_jax():
    stats = EpisodeStats(jnp.float32(4.0), jnp.int32(7))
    carried, emitted = update_episode_stats(stats, jnp.float32(0.0), jnp.bool_(False), counts=False)
    assert float(emitted.episode_return) == 4.0 and int(emitted.episode_length) == 7
    assert carried.episode_length.dtype == jnp.int32
