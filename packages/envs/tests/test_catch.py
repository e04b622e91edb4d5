import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from podracer.envs import Catch
from podracer.envs import EnvSpec
from podracer.envs import JaxEnv

ENV = Catch()
RESET = jax.jit(ENV.reset)
STEP = jax.jit(ENV.step)


def _positions(obs):
    obs = np.asarray(obs)
    ball = np.argwhere(obs[:-1] == 1)  # ball above the bottom row
    return ball, np.flatnonzero(obs[-1])


def test_spec_and_protocol():
    assert isinstance(ENV, JaxEnv)
    assert ENV.spec == EnvSpec("catch", (10, 5), "float32", 3, None)
    with pytest.raises(ValueError, match="rows"):
        Catch(rows=1)


def test_reset_places_ball_in_top_row_and_paddle_in_the_middle():
    _, ts = RESET(jax.random.key(0))
    ball, paddle = _positions(ts.observation)
    assert ts.observation.dtype == jnp.float32 and ts.observation.shape == (10, 5)
    assert ball.shape == (1, 2) and ball[0, 0] == 0
    np.testing.assert_array_equal(paddle, [2])
    assert float(ts.observation.sum()) == 2.0
    assert bool(ts.first) and not bool(ts.terminated)


@pytest.mark.parametrize("catch_it", [True, False])
def test_hand_played_episode(catch_it):
    state, ts = RESET(jax.random.key(3))
    column = int(_positions(ts.observation)[0][0, 1])
    rewards, paddle = [], 2
    for t in range(9):
        target = column if catch_it else (column + 2) % 5
        action = 1 + int(np.sign(target - paddle))
        paddle = min(max(paddle + action - 1, 0), 4)
        state, ts = STEP(state, jnp.int32(action), jax.random.key(100 + t))
        rewards.append(float(ts.reward))
        if t < 8:
            ball, p = _positions(ts.observation)
            assert ball[0, 0] == t + 1 and ball[0, 1] == column and p[0] == paddle
            assert not bool(ts.first) and int(ts.episode_length) == t + 1
    expected = 1.0 if catch_it else -1.0
    assert rewards == [0.0] * 8 + [expected]
    assert bool(ts.terminated) and not bool(ts.truncated) and bool(ts.first)
    assert bool(ts.episode_end) and bool(ts.transition_mask)
    assert float(ts.episode_return) == expected and int(ts.episode_length) == 9
    # The final observation shows the ball in the bottom row; the observation is a new episode.
    final = np.asarray(ts.final_observation)
    assert final[-1, column] == 1 and final[:-1].sum() == 0
    ball, paddle_now = _positions(ts.observation)
    assert ball[0, 0] == 0 and paddle_now[0] == 2
    # The running statistics restart after the end.
    state, ts = STEP(state, jnp.int32(1), jax.random.key(7))
    assert float(ts.episode_return) == 0.0 and int(ts.episode_length) == 1


def test_vmapped_and_single_steps_agree():
    actions = np.array([0, 1, 2, 2], np.int32)
    step_keys = jax.random.split(jax.random.key(2), 4)
    key_list = list(step_keys)
    states, _ = jax.jit(jax.vmap(ENV.reset))(jax.random.split(jax.random.key(1), 4))
    batched = jax.jit(jax.vmap(ENV.step))
    for t in range(10):  # crosses the episode end at t == 8
        host_states = jax.device_get(states)
        states, ts = batched(states, actions, step_keys)
        ts = jax.device_get(ts)
        for i in range(4):
            s_i = jax.tree.map(lambda x, i=i: x[i], host_states)
            _, ts_i = STEP(s_i, actions[i], key_list[i])
            jax.tree.map(
                lambda a, b, i=i: np.testing.assert_array_equal(a, b[i]), jax.device_get(ts_i), ts
            )
        assert ts.terminated.all() == (t == 8)


def test_step_compiles_once():
    step = jax.jit(chex.assert_max_traces(ENV.step, n=1))
    state, _ = RESET(jax.random.key(0))
    for t in range(12):
        state, _ = step(state, jnp.int32(t % 3), jax.random.key(t))
