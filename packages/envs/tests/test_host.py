import jax
import numpy as np
import pytest

from podracer.envs import Catch
from podracer.envs import HostEnv
from podracer.envs import as_host_env

NUM_ENVS = 4


@pytest.fixture(scope="module")
def sync_env():
    return as_host_env(Catch(), NUM_ENVS, seed=0)


@pytest.fixture(scope="module")
def async_env():
    return as_host_env(Catch(), NUM_ENVS, seed=0, batch_size=2)


def test_sync_steps_match_the_vmapped_jax_env(sync_env):
    assert isinstance(sync_env, HostEnv) and sync_env.batch_size == NUM_ENVS
    ts = sync_env.reset()
    assert isinstance(ts.observation, np.ndarray) and ts.observation.shape == (4, 10, 5)
    assert ts.first.all()
    # The same compiled program from the same key, done by hand.
    env = Catch()
    reset, step = jax.jit(jax.vmap(env.reset)), jax.jit(jax.vmap(env.step))
    key, sub = jax.random.split(jax.random.key(0))
    state, ref = reset(jax.random.split(sub, NUM_ENVS))
    np.testing.assert_array_equal(ts.observation, ref.observation)
    actions = np.array([0, 1, 2, 1], np.int32)
    for t in range(10):
        ts = sync_env.step(actions)
        key, sub = jax.random.split(key)
        state, ref = step(state, actions, jax.random.split(sub, NUM_ENVS))
        jax.tree.map(np.testing.assert_array_equal, ts, jax.device_get(ref))
        assert ts.terminated.all() == (t == 8) and ts.reward.dtype == np.float32
    # Catch episodes: length 9 and return +-1 at every end.
    assert set(np.abs(ref.reward[ref.terminated]).tolist()) <= {1.0}


def test_async_mode_hands_out_env_ids_in_send_order(async_env):
    env = async_env
    env.async_reset()
    seen = []
    lengths = {i: 0 for i in range(NUM_ENVS)}
    for t in range(40):
        ts, ids = env.recv()
        assert ids.shape == (2,) and ts.observation.shape == (2, 10, 5)
        seen.append(ids.tolist())
        for j, i in enumerate(ids.tolist()):
            expected = 0 if t < 2 else lengths[i] % 9 + 1  # 9-step episodes
            assert ts.episode_length[j] == expected
            assert ts.terminated[j] == (expected == 9) == ts.first[j] or t < 2
            lengths[i] = expected
        env.send(np.ones(2, np.int32), ids)
    assert seen[:2] == [[0, 1], [2, 3]] and seen[2] == [0, 1]


def test_async_and_argument_errors(async_env, sync_env):
    env = async_env
    env.async_reset()
    _, ids = env.recv()
    with pytest.raises(ValueError, match="returned by recv"):
        env.send(np.ones(2, np.int32), np.array([2, 3], np.int32))  # not received yet
    with pytest.raises(ValueError, match=r"actions must be in 0..2 \(num_actions=3\)"):
        env.send(np.array([0, 3], np.int32), ids)
    env.send(np.ones(2, np.int32), ids)
    env.recv(), env.recv()  # envs 2, 3 (from the reset), then 0, 1
    with pytest.raises(RuntimeError, match="only 0 are ready"):
        env.recv()
    sync_env.reset()  # the fixture is shared: do not rely on another test having reset it
    with pytest.raises(ValueError, match=r"actions must have shape \(4,\)"):
        sync_env.step(np.ones(2, np.int32))
    with pytest.raises(ValueError, match="num_envs must be an integer >= 1"):
        as_host_env(Catch(), 0)
    with pytest.raises(ValueError, match="batch_size must be an integer in 1..num_envs=2"):
        as_host_env(Catch(), 2, batch_size=4)
