"""`craftax:<name>` JaxEnvs: spec, auto-reset within the step, time-limit cuts as truncated,
a dead player as terminated. Compiling Craftax's step takes about a minute on a CPU."""

import numpy as np
import pytest

pytest.importorskip("craftax")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from podracer.envs import list_envs  # noqa: E402
from podracer.envs import make  # noqa: E402
from podracer.envs import make_host  # noqa: E402
from podracer.envs.craftax_env import CraftaxEnv  # noqa: E402


def test_specs_and_listing():
    env = make("craftax:Craftax-Symbolic-v1")
    assert isinstance(env, CraftaxEnv)
    spec = env.spec
    assert spec.observation_shape == (8268,) and spec.observation_dtype == "float32"
    assert spec.num_actions == 43 and spec.max_episode_steps == 100_000 and spec.can_truncate
    classic = make_host("craftax:Craftax-Classic-Symbolic-v1", num_envs=2).spec  # as_host_env
    assert classic.observation_shape == (1345,) and classic.num_actions == 17
    assert classic.max_episode_steps == 10_000
    assert make("craftax:Craftax-Symbolic-v1", max_timesteps=50).spec.max_episode_steps == 50
    assert {f"craftax:{n}" for n in ("Craftax-Symbolic-v1", "Craftax-Classic-Pixels-v1")} <= set(
        list_envs("jax")
    )


def test_refusals_are_one_line():
    with pytest.raises(ValueError) as e:
        make("craftax:Craftax-Symbolc-v1")
    assert "\n" not in str(e.value) and "'craftax:Craftax-Symbolic-v1'" in str(e.value)
    with pytest.raises(ValueError) as e:
        make("craftax:Craftax-Symbolic-v1", no_such_param=1)
    assert "\n" not in str(e.value) and "no_such_param" in str(e.value)
    assert "max_timesteps" in str(e.value)


@pytest.mark.slow
def test_episode_ends_time_limit_truncates_and_death_terminates():
    env = make("craftax:Craftax-Symbolic-v1", max_timesteps=5)
    n = 2
    reset = jax.jit(jax.vmap(env.reset))
    step = jax.jit(jax.vmap(env.step))
    state, ts = reset(jax.random.split(jax.random.PRNGKey(0), n))
    assert ts.observation.shape == (n, 8268) and ts.observation.dtype == jnp.float32
    noop = jnp.zeros(n, jnp.int32)
    for t in range(1, 7):
        state, ts = step(state, noop, jax.random.split(jax.random.PRNGKey(t), n))
        ts = jax.device_get(ts)
        assert ts.reward.dtype == np.float32 and not ts.terminated.any()
        assert (ts.truncated == (t == 5)).all() and (ts.first == (t == 5)).all()
        assert (ts.episode_length == (5 if t == 5 else t % 5)).all()
        if t == 5:  # the cut episode's last observation, and a new world
            assert not np.array_equal(ts.final_observation, ts.observation)
        else:
            np.testing.assert_array_equal(ts.final_observation, ts.observation)
    # A dead player ends the episode in a terminal state, not a cut.
    env_state = state.env_state.replace(
        player_health=jnp.full_like(state.env_state.player_health, -10)
    )
    _, ts = step(
        state._replace(env_state=env_state), noop, jax.random.split(jax.random.PRNGKey(9), n)
    )
    assert ts.terminated.all() and not ts.truncated.any() and (ts.episode_length == 2).all()
