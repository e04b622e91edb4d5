"""gymnax MinAtar observations without scatters (`podracer.envs.minatar_obs`): the same
observations as gymnax's own classes, over random play and at every index a state can
hold, and no scatter in the compiled observation."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

gymnax = pytest.importorskip("gymnax")

from gymnax.environments.minatar.breakout import MinBreakout  # noqa: E402

from podracer.envs import make_gymnax  # noqa: E402
from podracer.envs.minatar_obs import breakout_obs  # noqa: E402


def test_breakout_play_matches_gymnax():
    ours = make_gymnax("Breakout-MinAtar")
    theirs = MinBreakout()
    assert type(ours.env) is not MinBreakout and isinstance(ours.env, MinBreakout)
    params = theirs.default_params
    n, steps = 16, 400

    def play(key):
        keys = jax.random.split(key, n)
        _, s1 = jax.vmap(lambda k: theirs.reset(k, params))(keys)
        _, s2 = jax.vmap(lambda k: ours.env.reset(k, params))(keys)

        def body(carry, key):
            s1, s2 = carry
            k_act, k_step = jax.random.split(key)
            actions = jax.random.randint(k_act, (n,), 0, ours.spec.num_actions)
            keys = jax.random.split(k_step, n)
            o1, s1, r1, d1, *_ = jax.vmap(lambda k, s, a: theirs.step(k, s, a, params))(
                keys, s1, actions
            )
            o2, s2, r2, *_ = jax.vmap(lambda k, s, a: ours.env.step(k, s, a, params))(
                keys, s2, actions
            )
            return (s1, s2), (o1, o2, r1, r2, d1)

        return jax.lax.scan(body, (s1, s2), jax.random.split(key, steps))[1]

    o1, o2, r1, r2, done = jax.device_get(jax.jit(play)(jax.random.key(3)))
    np.testing.assert_array_equal(o2, o1)
    np.testing.assert_array_equal(r2, r1)
    assert done.any() and r1.sum() > 0  # play crosses episode ends and breaks bricks


def test_breakout_obs_at_every_index_a_state_can_hold():
    # Negative indices count from the end, out-of-board ones write nothing, as in .at[].set.
    theirs = MinBreakout()
    _, state = theirs.reset(jax.random.key(0), theirs.default_params)
    values = jnp.arange(-12, 13)
    for field in ("pos", "ball_x", "ball_y", "last_x", "last_y"):
        states = jax.vmap(lambda v, f=field: state.replace(**{f: v}))(values)
        want = jax.vmap(theirs.get_obs)(states)
        got = jax.vmap(lambda s: breakout_obs(s, theirs.obs_shape))(states)
        np.testing.assert_array_equal(got, want, err_msg=field)


def test_breakout_obs_compiles_without_a_scatter():
    env = make_gymnax("Breakout-MinAtar").env
    _, state = env.reset(jax.random.key(0), env.default_params)
    states = jax.tree.map(lambda x: jnp.stack([x] * 8), state)
    text = jax.jit(jax.vmap(env.get_obs)).lower(states).as_text()
    assert "scatter" not in text
    assert "scatter" in jax.jit(jax.vmap(MinBreakout().get_obs)).lower(states).as_text()
