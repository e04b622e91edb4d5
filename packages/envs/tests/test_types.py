import numpy as np
import pytest

from podracer.envs import EnvSpec
from podracer.envs import TimeStep


def test_env_spec_round_trips_through_json():
    spec = EnvSpec("catch", (10, 5), "float32", 3, None)
    assert EnvSpec.from_json(spec.to_json()) == spec
    assert not spec.can_truncate
    assert spec.compatible_with(EnvSpec("other", (10, 5), "float32", 3, 500))


def test_env_spec_rejects_bad_values():
    with pytest.raises(ValueError, match="num_actions"):
        EnvSpec("x", (1,), "float32", 0)
    with pytest.raises(TypeError):
        EnvSpec("x", (1,), "not-a-dtype", 2)


def test_transition_mask_flags_only_the_dummy_reset_transition():
    first = np.array([False, True, True, False])
    terminated = np.array([False, False, True, True])
    ts = TimeStep(
        observation=np.zeros((4, 1)), reward=np.zeros(4), terminated=terminated,
        truncated=np.zeros(4, bool), first=first, final_observation=np.zeros((4, 1)),
        episode_return=np.zeros(4), episode_length=np.zeros(4, np.int32),
    )
    np.testing.assert_array_equal(ts.transition_mask, [True, False, True, True])
    np.testing.assert_array_equal(ts.done, terminated)


def test_episode_end_mask_defaults_to_done():
    done = np.array([True, True, False])
    ts = TimeStep(
        observation=np.zeros((3, 1)), reward=np.zeros(3), terminated=done,
        truncated=np.zeros(3, bool), first=np.zeros(3, bool), final_observation=np.zeros((3, 1)),
        episode_return=np.zeros(3), episode_length=np.zeros(3, np.int32),
    )  # fmt: skip
    np.testing.assert_array_equal(ts.episode_end_mask, done)
    # Under episodic life a lost life is terminated but the game (the episode) goes on.
    ts = ts._replace(episode_end=np.array([False, True, False]))
    np.testing.assert_array_equal(ts.episode_end_mask, [False, True, False])
