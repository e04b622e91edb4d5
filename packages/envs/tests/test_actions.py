import jax
import jax.numpy as jnp
import numpy as np
import pytest

from podracer.envs import EnvSpec
from podracer.envs import action_space_fields
from podracer.envs import clip_action

SPEC = EnvSpec("box", (3,), "float32", None, None, (2,), (-2.0, 0.0), (2.0, 1.0))


class Discrete:  # the attributes gymnax's and gymnasium's spaces share
    def __init__(self, n, start=0):
        self.n, self.start = n, start


class Box:
    def __init__(self, low, high, shape):
        self.low, self.high, self.shape = low, high, shape


def test_action_space_fields_of_discrete_and_box_spaces():
    assert action_space_fields("x", Discrete(4)) == {"num_actions": 4}
    fields = action_space_fields("x", Box(-2.0, 2.0, (1,)))  # scalar bounds (gymnax Pendulum)
    assert fields == {"num_actions": None, "action_shape": (1,), "action_low": (-2.0,),
                      "action_high": (2.0,)}  # fmt: skip
    fields = action_space_fields("x", Box(np.array([-1, -2]), np.array([1, 2]), (2,)))
    assert fields["action_low"] == (-1.0, -2.0) and fields["action_high"] == (1.0, 2.0)
    assert EnvSpec("x", (1,), "float32", max_episode_steps=None, **fields).is_continuous


def test_action_space_fields_refuses_other_spaces_in_one_line():
    with pytest.raises(ValueError, match="^x has a MultiDiscrete action space; podracer.envs "):
        action_space_fields("x", type("MultiDiscrete", (), {})())
    with pytest.raises(ValueError, match="x has an unbounded action box"):
        action_space_fields("x", Box(-np.inf, np.inf, (2,)))
    with pytest.raises(ValueError, match="x has actions 1..3"):
        action_space_fields("x", Discrete(3, start=1))


@pytest.mark.parametrize("jit", [False, True])
def test_clip_action_clips_to_the_box_per_dimension(jit):
    clip = jax.jit(clip_action, static_argnums=0) if jit else clip_action
    out = clip(SPEC, jnp.array([[-3.0, 0.5], [1.5, 7.0]]))
    assert out.dtype == jnp.float32
    np.testing.assert_array_equal(out, [[-2.0, 0.5], [1.5, 1.0]])
    np.testing.assert_array_equal(clip(SPEC, np.array([5, -5])), [2.0, 0.0])  # ints cast


def test_clip_action_checks_the_trailing_shape():
    with pytest.raises(ValueError, match=r"box actions must have shape \[\.\.\., 2\], got \(3,\)"):
        clip_action(SPEC, jnp.zeros(3))
    with pytest.raises(ValueError, match=r"got \(\)"):
        clip_action(SPEC, jnp.float32(0))


def test_real_gymnax_and_gymnasium_spaces():
    gymnax_spaces = pytest.importorskip("gymnax.environments.spaces")
    gymnasium = pytest.importorskip("gymnasium")
    box = action_space_fields("x", gymnax_spaces.Box(-1.0, 1.0, (3,), jnp.float32))
    assert box["action_shape"] == (3,) and box["action_low"] == (-1.0,) * 3
    assert action_space_fields("x", gymnax_spaces.Discrete(5)) == {"num_actions": 5}
    box = action_space_fields("x", gymnasium.spaces.Box(-0.4, 0.4, (2,), np.float64))
    assert box["action_high"] == (0.4, 0.4)
    assert action_space_fields("x", gymnasium.spaces.Discrete(6)) == {"num_actions": 6}
