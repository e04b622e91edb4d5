import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

gymnax = pytest.importorskip("gymnax")

from podracer.envs import EnvSpec  # noqa: E402
from podracer.envs import make_gymnax  # noqa: E402

NUM_ENVS = 4
NUM_STEPS = 30


@functools.cache  # one compile per env for the whole module
def _rollouts(name, max_steps=None):
    """Our adapter and raw gymnax, batched, from the same keys and actions."""
    ours = make_gymnax(name, **({} if max_steps is None else {"max_steps_in_episode": max_steps}))
    env, params = ours.env, ours.params

    def rollout(key):
        k_reset, k_run = jax.random.split(key)
        reset_keys = jax.random.split(k_reset, NUM_ENVS)
        state, _ = jax.vmap(ours.reset)(reset_keys)
        raw_obs, raw_state = jax.vmap(lambda k: env.reset(k, params))(reset_keys)

        def body(carry, key):
            state, raw_state = carry
            k_act, k_step = jax.random.split(key)
            actions = jax.random.randint(k_act, (NUM_ENVS,), 0, ours.spec.num_actions)
            keys = jax.random.split(k_step, NUM_ENVS)
            state, ts = jax.vmap(ours.step)(state, actions, keys)
            raw = jax.vmap(lambda k, s, a: env.step(k, s, a, params))(keys, raw_state, actions)
            obs, raw_state, reward, terminated, truncated, info = raw
            return (state, raw_state), (ts, (obs, reward, terminated, truncated, info))

        _, out = jax.lax.scan(body, (state, raw_state), jax.random.split(k_run, NUM_STEPS))
        return out

    return ours, jax.device_get(jax.jit(rollout)(jax.random.key(0)))


@pytest.mark.parametrize(
    ("name", "max_steps"),
    [("CartPole-v1", 7), ("Catch-bsuite", None), ("Acrobot-v1", 5), ("Breakout-MinAtar", None),
     ("DeepSea-bsuite", None)],
)  # fmt: skip
def test_parity_with_gymnax(name, max_steps):
    # The same transitions, also where the batch skips the reset draw (no env ended in
    # the step): bit for bit, except that XLA may round Acrobot's integrator differently
    # in the two programs (a float32 ulp).
    ours, (ts, (obs, reward, terminated, truncated, info)) = _rollouts(name, max_steps)
    shape = (NUM_STEPS, NUM_ENVS, *ours.spec.observation_shape)
    assert ts.observation.dtype == np.float32 and ts.observation.shape == shape
    same = (
        functools.partial(np.testing.assert_allclose, rtol=1e-5, atol=1e-6)
        if name == "Acrobot-v1"
        else np.testing.assert_array_equal
    )
    same(ts.observation, obs.astype(np.float32))
    same(ts.final_observation, info["final_observation"].astype(np.float32))
    np.testing.assert_array_equal(ts.reward, reward)
    np.testing.assert_array_equal(ts.terminated, terminated)
    np.testing.assert_array_equal(ts.truncated, truncated)
    np.testing.assert_array_equal(ts.first, terminated | truncated)
    assert (terminated | truncated).any()  # the rollout crosses episode ends
    assert not (terminated | truncated).any(axis=1).all()  # and has steps where none ended
    # Episode statistics from the raw rewards, env by env.
    for i in range(NUM_ENVS):
        ret = length = 0
        for t in range(NUM_STEPS):
            ret, length = ret + reward[t, i], length + 1
            assert ts.episode_return[t, i] == pytest.approx(ret, abs=1e-5)
            assert ts.episode_length[t, i] == length
            if terminated[t, i] or truncated[t, i]:
                ret = length = 0


def test_the_reset_draw_is_skipped_only_for_the_whole_batch():
    # Seeds vmapped around the env batch (a multi-seed run): the batch-level cond becomes a
    # select, and each seed's rollout is still its own.
    ours = make_gymnax("CartPole-v1", max_steps_in_episode=9)

    def rollout(key):
        state, _ = jax.vmap(ours.reset)(jax.random.split(key, NUM_ENVS))

        def body(state, key):
            keys = jax.random.split(key, NUM_ENVS + 1)
            actions = jax.random.randint(keys[0], (NUM_ENVS,), 0, 2)
            state, ts = jax.vmap(ours.step)(state, actions, keys[1:])
            return state, ts

        return jax.lax.scan(body, state, jax.random.split(key, NUM_STEPS))[1]

    keys = jax.random.split(jax.random.key(1), 3)
    together = jax.device_get(jax.jit(jax.vmap(rollout))(keys))
    for i in range(3):
        alone = jax.device_get(jax.jit(rollout)(keys[i]))
        mine = jax.tree.map(lambda a, i=i: a[i], together)
        jax.tree.map(np.testing.assert_array_equal, mine, alone)
    # An unbatched step (one env, e.g. a video) is gymnax's own step.
    state, _ = ours.reset(jax.random.key(2))
    one = jax.device_get(ours.step(state, 1, jax.random.key(3))[1])
    raw = ours.env.step(jax.random.key(3), state.env_state, 1, ours.params)
    np.testing.assert_array_equal(one.observation, raw[0])


def test_truncation_at_max_steps_in_episode():
    ours, (ts, _) = _rollouts("CartPole-v1", 7)
    assert ours.spec.max_episode_steps == 7
    done = ts.terminated | ts.truncated
    assert ts.truncated[6].all() and not ts.terminated[6].any()  # random play survives 7 steps
    assert not done[:6].any()
    np.testing.assert_array_equal(ts.episode_length[6], 7)
    np.testing.assert_array_equal(ts.episode_return[6], 7.0)
    np.testing.assert_array_equal(ts.episode_end, done)
    # Auto-reset: the next observation starts an episode, the final one ended it.
    assert ts.first[6].all() and ts.transition_mask[6].all()
    assert not np.array_equal(ts.observation[6], ts.final_observation[6])
    np.testing.assert_array_equal(ts.observation[5], ts.final_observation[5])
    np.testing.assert_array_equal(ts.episode_length[7], 1)


def test_spec_and_observation_dtype_of_minatar():
    env = make_gymnax("Breakout-MinAtar")
    assert env.spec == EnvSpec("gymnax:Breakout-MinAtar", (10, 10, 4), "float32", 3, 1000)
    _, ts = jax.jit(env.reset)(jax.random.key(0))
    assert ts.observation.dtype == jnp.float32 and bool(ts.first)


def test_errors_name_the_env_and_allowed_values():
    with pytest.raises(ValueError, match="max_steps_in_episode"):
        make_gymnax("CartPole-v1", max_steps=3)
    with pytest.raises(ValueError, match="unknown gymnax environment 'Nope'"):
        make_gymnax("Nope")


@pytest.mark.parametrize(
    ("name", "obs_shape", "max_steps", "low", "high"),
    [
        ("Pendulum-v1", (3,), 200, (-2.0,), (2.0,)),
        ("MountainCarContinuous-v0", (2,), 999, (-1.0,), (1.0,)),
        ("Reacher-misc", (8,), 100, (-1.0, -1.0), (1.0, 1.0)),
    ],
)
def test_continuous_envs_have_a_box_spec(name, obs_shape, max_steps, low, high):
    spec = EnvSpec(f"gymnax:{name}", obs_shape, "float32", None, max_steps, (len(low),), low, high)
    assert make_gymnax(name).spec == spec


@functools.cache
def _continuous_steps(name):
    """One step of ours and of raw gymnax from the same state and key, per action."""
    ours = make_gymnax(name)
    env, params = ours.env, ours.params
    state, _ = ours.reset(jax.random.key(0))
    key = jax.random.key(1)

    @jax.jit
    def both(action):
        _, ts = ours.step(state, action, key)
        raw = env.step(key, state.env_state, jnp.clip(action, *ours.spec.action_bounds()), params)
        raw_unclipped = env.step(key, state.env_state, action, params)
        return ts, raw, raw_unclipped

    return ours, both


@pytest.mark.parametrize("name", ["Pendulum-v1", "MountainCarContinuous-v0"])
def test_continuous_actions_reach_gymnax_clipped_to_the_box(name):
    ours, both = _continuous_steps(name)
    high = float(ours.spec.action_high[0])
    for action in (0.25 * high, 3.0 * high, -5.0 * high):
        ts, (obs, _, reward, *_), (_, _, raw_reward, *_) = jax.device_get(
            both(jnp.array([action], jnp.float32))
        )
        np.testing.assert_array_equal(ts.observation, obs)
        np.testing.assert_array_equal(ts.reward, reward)
        if name == "MountainCarContinuous-v0" and abs(action) > high:
            # gymnax charges -0.1 * action**2 on the unclipped action; ours saw the clipped one.
            assert raw_reward == pytest.approx(-0.1 * action**2, rel=1e-5)
            assert ts.reward == pytest.approx(-0.1 * high**2, rel=1e-5)


def test_pendulum_episode_statistics_and_truncation_with_float_actions():
    env = make_gymnax("Pendulum-v1", max_steps_in_episode=4)
    state, ts = env.reset(jax.random.key(0))
    step = jax.jit(env.step)
    total = 0.0
    for t in range(4):
        state, ts = step(state, jnp.array([1.0]), jax.random.key(t))
        total += float(ts.reward)
        assert ts.episode_length == t + 1 and ts.episode_return == pytest.approx(total, rel=1e-6)
    assert bool(ts.truncated) and not bool(ts.terminated) and bool(ts.first)
    with pytest.raises(ValueError, match=r"actions must have shape \[\.\.\., 1\], got \(\)"):
        env.step(state, jnp.float32(1.0), jax.random.key(0))
