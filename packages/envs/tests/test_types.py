import dataclasses
import json

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
    )  # fmt: skip
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


BOX = EnvSpec("box", (3,), "float32", None, 200, (2,), (-2.0, -1.0), (2.0, 1.0))


def test_discrete_and_continuous_action_spaces():
    discrete = EnvSpec("catch", (10, 5), "float32", 3)
    assert discrete.is_discrete and not discrete.is_continuous
    assert discrete.action_dtype == "int32" and discrete.action_shape == ()
    assert BOX.is_continuous and not BOX.is_discrete and BOX.action_dtype == "float32"
    low, high = BOX.action_bounds()
    assert low.dtype == np.float32 and low.shape == (2,)
    np.testing.assert_array_equal(low, [-2.0, -1.0])
    np.testing.assert_array_equal(high, [2.0, 1.0])
    # Bounds are flattened in C order and reshaped back.
    grid = EnvSpec("grid", (1,), "float32", None, None, (2, 2), (0, 1, 2, 3), (4, 5, 6, 7))
    np.testing.assert_array_equal(grid.action_bounds()[0], [[0, 1], [2, 3]])
    assert grid.action_low == (0.0, 1.0, 2.0, 3.0)  # stored as floats
    with pytest.raises(ValueError, match="discrete action space: it has no bounds"):
        discrete.action_bounds()


def test_continuous_spec_round_trips_through_json_and_old_json_loads_as_discrete():
    d = BOX.to_json()
    assert d["action_shape"] == [2] and d["action_low"] == [-2.0, -1.0]
    assert d["num_actions"] is None
    assert EnvSpec.from_json(json.loads(json.dumps(d))) == BOX
    # Written before action boxes existed: no action_* keys.
    old = {"name": "catch", "observation_shape": [10, 5], "observation_dtype": "float32",
           "num_actions": 3, "max_episode_steps": None}  # fmt: skip
    spec = EnvSpec.from_json(old)
    assert spec == EnvSpec("catch", (10, 5), "float32", 3) and spec.is_discrete
    assert EnvSpec.from_json(spec.to_json()) == spec


def test_compatible_with_compares_the_action_space():
    assert BOX.compatible_with(dataclasses.replace(BOX, name="other", max_episode_steps=None))
    assert not BOX.compatible_with(dataclasses.replace(BOX, action_high=(2.0, 2.0)))
    assert not BOX.compatible_with(
        EnvSpec("box", (3,), "float32", None, 200, (1, 2), (-2.0, -1.0), (2.0, 1.0))
    )
    assert not BOX.compatible_with(EnvSpec("box", (3,), "float32", 2, 200))
    assert not EnvSpec("d", (3,), "float32", 2).compatible_with(BOX)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_actions": 0}, r"EnvSpec.num_actions must be an int >= 1 \(discrete\) or None "
                             r"\(continuous\), got 0"),
        ({"num_actions": 2.0}, "EnvSpec.num_actions must be an int >= 1"),
        ({"num_actions": 2, "action_shape": (2,)},
         r"EnvSpec.action_shape must be \(\) for a discrete action space, got \(2,\)"),
        ({"num_actions": 2, "action_low": (0.0,)},
         r"EnvSpec.action_low must be None for a discrete action space, got \(0.0,\)"),
        ({"action_shape": (2,), "action_low": None, "action_high": (1.0, 1.0)},
         "EnvSpec.action_low must be a tuple of 2 finite floats for a continuous action "
         "space, got None"),
        ({"action_shape": (2,), "action_low": (0.0,), "action_high": (1.0, 1.0)},
         r"EnvSpec.action_low must be a tuple of 2 finite floats .*, got \(0.0,\)"),
        ({"action_shape": (1,), "action_low": (0.0,), "action_high": (float("inf"),)},
         r"EnvSpec.action_high must be a tuple of 1 finite floats .*, got \(inf,\)"),
        ({"action_shape": (1,), "action_low": (1.0,), "action_high": (0.0,)},
         r"EnvSpec.action_low must be <= action_high elementwise, got \(1.0,\)"),
        ({"action_shape": (0,), "action_low": (), "action_high": ()},
         r"EnvSpec.action_shape must be a shape of >= 1 elements, got \(0,\)"),
        ({"action_shape": (-1,), "action_low": (0.0,), "action_high": (1.0,)},
         r"EnvSpec.action_shape must be a tuple of ints >= 0, got \(-1,\)"),
        ({"num_actions": 2, "max_episode_steps": 0},
         "EnvSpec.max_episode_steps must be an int >= 1 or None, got 0"),
    ],
)  # fmt: skip
def test_env_spec_validation_names_the_field(kwargs, message):
    fields = {"name": "x", "observation_shape": (3,), "observation_dtype": "float32",
              "num_actions": None, **kwargs}  # fmt: skip
    with pytest.raises(ValueError, match=message) as info:
        EnvSpec(**fields)
    assert "\n" not in str(info.value)


def test_env_spec_is_hashable():
    assert hash(BOX) == hash(EnvSpec.from_json(BOX.to_json()))
    assert {BOX: 1}[dataclasses.replace(BOX)] == 1
