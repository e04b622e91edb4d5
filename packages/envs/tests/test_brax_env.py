import jax
import jax.numpy as jnp
import numpy as np
import pytest

pytest.importorskip("brax")

from podracer.envs import BraxEnv  # noqa: E402
from podracer.envs import EnvSpec  # noqa: E402
from podracer.envs import JaxEnv  # noqa: E402
from podracer.envs import make  # noqa: E402
from podracer.envs import make_brax  # noqa: E402
from podracer.envs import make_host  # noqa: E402

DT = 0.02  # brax's "fast" test env: vel += (action > 0) * dt; pos += vel * dt; reward = pos


def _fast_reference(actions, max_steps):
    """Observations, rewards and truncations of brax "fast" with a time limit, by hand."""
    pos = vel = 0.0
    t = 0
    out = []
    for a in actions:
        vel += DT if a > 0 else 0.0
        pos += vel * DT
        t += 1
        reward, truncated = pos, t == max_steps
        final = (pos, vel)
        if truncated:
            pos = vel = 0.0
            t = 0
        out.append(((pos, vel), final, reward, truncated))
    return out


def test_fast_env_spec_time_limit_auto_reset_and_statistics():
    env = make("brax:fast", max_episode_steps=3)
    assert isinstance(env, BraxEnv) and isinstance(env, JaxEnv)
    assert env.spec == EnvSpec("brax:fast", (2,), "float32", None, 3, (1,), (-1.0,), (1.0,))
    actions = [1.0, 1.0, -1.0, 5.0, 0.0, 1.0, 1.0]
    state, ts = jax.jit(env.reset)(jax.random.key(0))
    assert bool(ts.first) and ts.observation.dtype == jnp.float32
    step = jax.jit(env.step)
    ret = 0.0
    for t, (a, (obs, final, reward, truncated)) in enumerate(
        zip(actions, _fast_reference(actions, 3), strict=True)
    ):
        state, ts = step(state, jnp.array([a], jnp.float32), jax.random.key(t))
        np.testing.assert_allclose(ts.observation, obs, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(ts.final_observation, final, rtol=1e-5, atol=1e-7)
        assert float(ts.reward) == pytest.approx(reward, rel=1e-5)
        assert bool(ts.truncated) == truncated and not bool(ts.terminated)
        assert bool(ts.first) == truncated == bool(ts.episode_end)
        ret += reward
        assert float(ts.episode_return) == pytest.approx(ret, rel=1e-5)
        assert int(ts.episode_length) == t % 3 + 1
        if truncated:
            ret = 0.0


def test_vmapped_and_as_a_host_env():
    env = make_brax("fast", max_episode_steps=2)
    state, _ = jax.vmap(env.reset)(jax.random.split(jax.random.key(0), 4))
    actions = jnp.array([[1.0], [-1.0], [1.0], [-1.0]])
    state, ts = jax.jit(jax.vmap(env.step))(state, actions, jax.random.split(jax.random.key(1), 4))
    np.testing.assert_allclose(ts.observation[:, 1], [DT, 0.0, DT, 0.0], rtol=1e-6)
    host = make_host("brax:fast", num_envs=2, max_episode_steps=2)
    assert host.spec == env.spec
    host.reset()
    ts = host.step(np.array([[1.0], [7.0]], np.float32))  # 7.0 is clipped to 1.0
    np.testing.assert_allclose(ts.observation, [[DT * DT, DT]] * 2, rtol=1e-6)
    with pytest.raises(ValueError, match=r"actions must have shape \(2, 1\)"):
        host.step(np.zeros(2, np.float32))


def test_errors():
    with pytest.raises(ValueError, match="unknown brax environment 'nope'; known: \\['ant'"):
        make_brax("nope")
    with pytest.raises(ValueError, match="brax:swimmer does not run here"):
        make("brax:swimmer")
    with pytest.raises(ValueError, match="max_episode_steps must be an int >= 1 or None, got 0"):
        make_brax("fast", max_episode_steps=0)


@pytest.mark.slow  # ~20 s on CPU: building the system and compiling its step
def test_a_physics_env_terminates_truncates_and_clips():
    """inverted_pendulum: a pushed pole falls past 0.2 rad and terminates in a few steps."""
    env = make_brax("inverted_pendulum", max_episode_steps=50)
    assert env.spec.action_shape == (1,) and env.spec.action_bounds()[1][0] == 3.0
    state, _ = env.reset(jax.random.key(0))

    @jax.jit
    def run(state, push):
        def body(state, key):
            return env.step(state, push, key)

        return jax.lax.scan(body, state, jax.random.split(jax.random.key(1), 8))[1]

    ts = jax.device_get(run(state, jnp.array([30.0])))  # clipped to the range, 3.0
    assert ts.terminated.any() and not ts.truncated.any()
    end = int(np.argmax(ts.terminated))
    assert abs(ts.final_observation[end, 1]) > 0.2  # the pole angle past the limit
    assert ts.first[end] and ts.episode_length[end] == end + 1
    assert ts.episode_return[end] == pytest.approx(end + 1.0)  # reward 1 per step
    jax.tree.map(np.testing.assert_array_equal, ts, run(state, jnp.array([3.0])))
