import dataclasses

import numpy as np
import pytest

from podracer.envs import EnvSpec
from podracer.envs.catch import Catch
from podracer.envs.checks import check_actions
from podracer.envs.checks import check_env_ids
from podracer.envs.checks import check_jax_env
from podracer.envs.checks import check_sizes

DISCRETE = EnvSpec("d", (4,), "float32", 3)
BOX = EnvSpec("b", (4,), "float32", None, None, (2,), (-1.0, 0.0), (1.0, 2.0))


def test_discrete_actions_by_spec_or_count():
    for space in (DISCRETE, 3):
        out = check_actions(np.array([0, 2, 1], np.int64), 3, space)
        assert out.dtype == np.int32
        np.testing.assert_array_equal(out, [0, 2, 1])
    with pytest.raises(
        ValueError, match=r"actions must be in 0..2 \(num_actions=3\), got values in -1..0"
    ):
        check_actions(np.array([-1, 0]), 2, DISCRETE)
    with pytest.raises(ValueError, match="actions must be integers in 0..2, got dtype float32"):
        check_actions(np.zeros(2, np.float32), 2, DISCRETE)


def test_box_actions_are_float32_clipped_to_the_bounds():
    actions = np.array([[-3.0, 1.0], [0.5, 9.0], [1.0, -1.0]])  # float64 in
    out = check_actions(actions, 3, BOX)
    assert out.dtype == np.float32 and out.shape == (3, 2)
    np.testing.assert_array_equal(out, [[-1.0, 1.0], [0.5, 2.0], [1.0, 0.0]])
    np.testing.assert_array_equal(actions[0], [-3.0, 1.0])  # the caller's array is untouched
    np.testing.assert_array_equal(check_actions([[0, 1]], 1, BOX), [[0.0, 1.0]])  # ints, lists


def test_box_action_errors():
    with pytest.raises(ValueError, match=r"actions must have shape \(2, 2\), got \(2,\)"):
        check_actions(np.zeros(2, np.float32), 2, BOX)
    with pytest.raises(ValueError, match="actions must be real numbers .*, got dtype bool"):
        check_actions(np.zeros((1, 2), bool), 1, BOX)
    with pytest.raises(ValueError, match="actions must be finite, got 2 NaN/inf"):
        check_actions(np.array([[np.nan, 0.0], [0.0, np.inf]], np.float32), 2, BOX)


def test_sizes_and_env_ids():
    assert check_sizes(4, None) == 4 and check_sizes(4, 2) == 2
    np.testing.assert_array_equal(check_env_ids([3, 0], 2, 4), [3, 0])
    with pytest.raises(ValueError, match=r"env_ids must be in 0..3 \(num_envs=4\)"):
        check_env_ids([4], None, 4)


class _Drifting(Catch):
    """A Catch whose step returns what reset does not: `what` names the change."""

    def __init__(self, what: str):
        super().__init__()
        self.what = what

    def step(self, state, action, key):
        import jax.numpy as jnp

        state, timestep = super().step(state, action, key)
        if self.what == "observation":
            flat = timestep.observation.reshape(-1)
            return state, timestep._replace(observation=flat)
        if self.what == "reward":
            return state, timestep._replace(reward=timestep.reward.astype(jnp.int32))
        return (state, state), timestep  # another state structure


class _WrongSpec(Catch):
    @property
    def spec(self) -> EnvSpec:
        return dataclasses.replace(super().spec, observation_shape=(5, 10))


def test_a_jax_env_is_checked_on_abstract_values():
    check_jax_env(Catch())  # nothing raised
    cases = {
        "observation": "env 'catch': step returns timestep.observation as float32[50], reset "
                       "as float32[10, 5]: a step keeps reset's shapes and dtypes",
        "reward": "timestep.reward as int32[], reset as float32[]",
        "state": "env 'catch': step returns a state of another structure than reset's",
    }  # fmt: skip
    for what, message in cases.items():
        with pytest.raises(ValueError) as info:
            check_jax_env(_Drifting(what))
        assert message in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(ValueError, match=r"reset's observation is float32\[10, 5\], its spec says "
                                         r"float32\[5, 10\]"):  # fmt: skip
        check_jax_env(_WrongSpec())
