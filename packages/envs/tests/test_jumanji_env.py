"""`jumanji:<id>` JaxEnvs: flattened observations, step types to terminated / truncated,
auto-reset within the step, one-line refusals."""

import math
from typing import NamedTuple

import numpy as np
import pytest

jumanji = pytest.importorskip("jumanji")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jumanji import specs  # noqa: E402
from jumanji.types import restart  # noqa: E402
from jumanji.types import termination  # noqa: E402
from jumanji.types import transition  # noqa: E402
from jumanji.types import truncation  # noqa: E402

from podracer.envs import list_envs  # noqa: E402
from podracer.envs import make  # noqa: E402
from podracer.envs import make_host  # noqa: E402
from podracer.envs.jumanji_env import JumanjiEnv  # noqa: E402
from podracer.envs.jumanji_env import flatten_observation  # noqa: E402


class CountState(NamedTuple):
    key: jax.Array
    t: jax.Array


class CountObservation(NamedTuple):
    t: jax.Array  # () int32
    mask: jax.Array  # (2,) bool


class Count(jumanji.Environment):
    """Counts steps; the episode ends at step 3, with discount 1 (a cut) or 0 (terminal)."""

    def __init__(self, cut: bool = True, limit: bool = True):
        self.cut = cut
        if limit:
            self.time_limit = 3
        super().__init__()

    def _obs(self, t):
        return CountObservation(t, jnp.array([True, False]))

    def reset(self, key):
        state = CountState(key, jnp.int32(0))
        return state, restart(self._obs(state.t))

    def step(self, state, action):
        state = CountState(state.key, state.t + 1)
        end = truncation if self.cut else termination
        ts = jax.lax.cond(
            state.t >= 3,
            lambda: end(jnp.float32(1.0), self._obs(state.t)),
            lambda: transition(jnp.float32(1.0), self._obs(state.t)),
        )
        return state, ts

    @property
    def observation_spec(self):
        return specs.Spec(
            CountObservation, "obs",
            t=specs.Array((), jnp.int32, "t"), mask=specs.Array((2,), bool, "mask"),
        )  # fmt: skip

    @property
    def action_spec(self):
        return specs.DiscreteArray(2)


# jumanji loads entry points by "module:attr" (this module is in sys.modules under __name__).
jumanji.register("PodracerCount-v0", entry_point=f"{__name__}:Count")
jumanji.register("PodracerCountTerminal-v0", f"{__name__}:Count", kwargs={"cut": False})
jumanji.register("PodracerCountNoLimit-v0", f"{__name__}:Count", kwargs={"limit": False})


def _run(env, steps, num_envs=2, seed=0):
    reset = jax.jit(jax.vmap(env.reset))
    step = jax.jit(jax.vmap(env.step))
    key = jax.random.PRNGKey(seed)
    state, ts = reset(jax.random.split(key, num_envs))
    out = [ts]
    for _ in range(steps):
        key, k_act, k_step = jax.random.split(key, 3)
        actions = jax.random.randint(k_act, (num_envs,), 0, env.spec.num_actions)
        state, ts = step(state, actions, jax.random.split(k_step, num_envs))
        out.append(jax.device_get(ts))
    return out


def test_a_time_limit_cut_is_truncated_and_a_discount_0_end_terminated():
    env = make("jumanji:PodracerCount-v0")
    assert isinstance(env, JumanjiEnv)
    assert env.spec.observation_shape == (3,) and env.spec.max_episode_steps == 3
    out = _run(env, 7)
    for t, ts in enumerate(out[1:], 1):
        end = t % 3 == 0
        assert (ts.truncated == end).all() and not ts.terminated.any() and (ts.first == end).all()
        if end:
            assert (ts.episode_length == 3).all() and (ts.episode_return == 3.0).all()
            # [t, mask...]: the ended episode's last count, the next one's first (0).
            np.testing.assert_array_equal(ts.final_observation[0], [3.0, 1.0, 0.0])
            np.testing.assert_array_equal(ts.observation[0], [0.0, 1.0, 0.0])
        else:
            np.testing.assert_array_equal(ts.final_observation, ts.observation)
    ts = _run(make("jumanji:PodracerCountTerminal-v0"), 3)[-1]
    assert ts.terminated.all() and not ts.truncated.any()


def test_without_a_time_limit_no_step_is_truncated():
    env = make("jumanji:PodracerCountNoLimit-v0")
    assert env.spec.max_episode_steps is None and not env.spec.can_truncate
    ts = _run(env, 3)[-1]
    assert ts.terminated.all() and not ts.truncated.any()  # jumanji's cut, as terminal


@pytest.mark.slow
def test_snake_spec_flattened_observation_and_episode_ends():
    env = make("jumanji:Snake-v1")
    spec = env.spec
    leaves = jax.tree.leaves(env.env.observation_spec.generate_value())
    assert spec.observation_shape == (sum(math.prod(x.shape) for x in leaves),) == (725,)
    assert spec.observation_dtype == "float32" and spec.num_actions == 4
    assert spec.max_episode_steps == 4000 and spec.can_truncate
    _, first = env.env.reset(jax.random.PRNGKey(0))
    flat = flatten_observation(first.observation)
    # Leaf order: the grid, the step count, the action mask.
    leaves = jax.tree.leaves(first.observation)
    np.testing.assert_array_equal(flat, np.concatenate([np.ravel(x) for x in leaves]))
    out = _run(env, 40, num_envs=4)
    assert out[0].observation.shape == (4, 725) and out[0].observation.dtype == np.float32
    ends = 0
    for ts in out[1:]:
        assert ts.reward.dtype == np.float32
        for i in np.flatnonzero(ts.done):
            ends += 1
            # Snake ends on a collision: terminal (discount 0), never a time-limit cut here.
            assert ts.terminated[i] and not ts.truncated[i] and ts.first[i]
            assert not np.array_equal(ts.final_observation[i], ts.observation[i])
    assert ends > 0  # random play collides within 40 steps


def test_host_env_and_listing():
    host = make_host("jumanji:PodracerCount-v0", num_envs=2, seed=0)
    host.reset()
    ts = [host.step(np.zeros(2, np.int32)) for _ in range(3)][-1]
    assert ts.truncated.all()
    names = list_envs("jax")
    assert "jumanji:Snake-v1" in names and "jumanji:PodracerCount-v0" in names


def test_refusals_are_one_line():
    with pytest.raises(ValueError) as e:
        make("jumanji:Cleaner-v0")  # MultiDiscreteArray actions (one per agent)
    message = str(e.value)
    assert "\n" not in message and "MultiDiscreteArray" in message and "DiscreteArray" in message
    with pytest.raises(ValueError) as e:
        make("jumanji:Snak-v1")
    message = str(e.value)
    assert "\n" not in message and "did you mean" in message and "jumanji:Snake-v1" in message
    with pytest.raises(ValueError) as e:
        make("jumanji:PodracerCount-v0", no_such_option=1)
    assert "\n" not in str(e.value) and "no_such_option" in str(e.value)
