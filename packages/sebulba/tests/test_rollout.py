"""Rollout loops: overlapping trajectories, episode statistics, XLA and Python agree."""

import functools

import jax
import numpy as np
import pytest

from podracer.agents import make_agent
from podracer.envs import make_host
from podracer.sebulba import PhaseTimer
from podracer.sebulba import PythonLoop
from podracer.sebulba import XlaLoop

T = 8


@functools.cache  # each loop is compiled once for the module
def _rollouts(loop_cls, env_name, lanes=1, n=8, num_envs=4):
    envs = [make_host(env_name, num_envs=num_envs, seed=10 * k) for k in range(lanes)]
    agent = make_agent("impala", envs[0].spec)
    params = agent.init(jax.random.PRNGKey(0))
    loop = loop_cls(agent, envs, T, jax.devices()[0], jax.random.PRNGKey(1), PhaseTimer())
    loop.start()
    try:
        return [jax.device_get(loop.rollout(params)) for _ in range(n)]
    finally:
        for env in envs:
            env.close()


@pytest.mark.parametrize("loop_cls", [PythonLoop, XlaLoop])
def test_envpool_rollouts_overlap_by_one_step(loop_cls):
    outs = _rollouts(loop_cls, "envpool:CartPole-v1")
    for out in outs:
        traj = out.trajectory
        assert traj.action.shape == (T + 1, 4)
        assert traj.timestep.observation.shape == (T + 1, 4, 4)
        assert traj.timestep.final_observation is None  # envpool: it is the observation
        assert traj.extras["logits"].shape == (T + 1, 4, 2)
    assert outs[0].trajectory.timestep.first[0].all()  # the reset observations
    for prev, nxt in zip(outs, outs[1:], strict=False):
        for a, b in zip(
            jax.tree.leaves(prev.trajectory), jax.tree.leaves(nxt.trajectory), strict=True
        ):
            np.testing.assert_array_equal(a[-1], b[0])


@pytest.mark.parametrize("loop_cls", [PythonLoop, XlaLoop])
def test_episode_statistics_match_the_trajectory(loop_cls):
    outs = _rollouts(loop_cls, "envpool:CartPole-v1")  # 64 random steps: episodes end
    returns = np.concatenate([o.episode_returns for o in outs])
    lengths = np.concatenate([o.episode_lengths for o in outs])
    assert returns.size > 0
    np.testing.assert_array_equal(returns, lengths.astype(np.float32))  # CartPole: +1 per step
    rewards = sum(float(o.trajectory.timestep.reward[1:].sum()) for o in outs)
    assert returns.sum() <= rewards  # only finished episodes are reported
    # A finished episode's length counts the real transitions that led to it.
    for o in outs:
        ts = o.trajectory.timestep
        mask = ts.transition_mask[1:]
        assert (~mask).sum() == ts.first[1:].sum()  # every reset is a dummy transition


def test_xla_and_python_loops_produce_the_same_trajectories():
    xla = _rollouts(XlaLoop, "envpool:CartPole-v1")
    py = _rollouts(PythonLoop, "envpool:CartPole-v1")
    for a, b in zip(xla, py, strict=True):
        ta, tb = a.trajectory, b.trajectory
        np.testing.assert_array_equal(ta.action, tb.action)
        np.testing.assert_allclose(ta.timestep.observation, tb.timestep.observation, rtol=1e-6)
        np.testing.assert_array_equal(ta.timestep.first, tb.timestep.first)
        np.testing.assert_allclose(ta.extras["logits"], tb.extras["logits"], rtol=1e-5, atol=1e-6)


def test_two_lanes_write_their_own_columns_in_step_order():
    """Two lanes fill one buffer, each its own columns: the recorded actions replayed on
    fresh envs with each lane's seed give the recorded observations, row after row and
    across rollouts (each starts at the row the last one ended on)."""
    outs = _rollouts(PythonLoop, "envpool:CartPole-v1", lanes=2, n=2, num_envs=2)
    first, second = (out.trajectory for out in outs)
    assert first.action.shape == (T + 1, 4) and first.extras["logits"].shape == (T + 1, 4, 2)
    np.testing.assert_array_equal(second.timestep.observation[0], first.timestep.observation[-1])
    observations = np.concatenate([first.timestep.observation, second.timestep.observation[1:]])
    actions = np.concatenate([first.action, second.action[1:]])
    for lane in range(2):
        env, columns = (
            make_host("envpool:CartPole-v1", num_envs=2, seed=10 * lane),
            [2 * lane, 2 * lane + 1],
        )
        ts = env.reset()
        for t in range(len(observations)):
            np.testing.assert_allclose(ts.observation, observations[t, columns], rtol=1e-6)
            if t + 1 < len(observations):
                ts = env.step(actions[t, columns])
        env.close()


def test_python_loop_runs_a_jax_env_and_keeps_final_observation():
    outs = _rollouts(PythonLoop, "catch", n=3)
    ts = outs[0].trajectory.timestep
    assert ts.final_observation is not None  # a JaxEnv resets within the step
    assert ts.observation.shape == (T + 1, 4, 10, 5)
    returns = np.concatenate([o.episode_returns for o in outs])
    assert set(np.unique(returns)) <= {-1.0, 1.0} and returns.size == 4 * 2  # 9-step episodes


def test_recycled_host_buffers_give_the_same_rollouts():
    """A rollout writes into the host buffers of the rollout two before it (once shipped):
    the trajectories are those of fresh buffers, row 0 still the last rollout's row T."""

    def rollouts(recycle):
        envs = [make_host("catch", num_envs=2, seed=10 * k) for k in range(2)]
        agent = make_agent("impala", envs[0].spec)
        params = agent.init(jax.random.PRNGKey(0))
        loop = PythonLoop(
            agent, envs, T, jax.devices()[0], jax.random.PRNGKey(1), PhaseTimer(),
            recycle=recycle,
        )  # fmt: skip
        loop.start()
        sharding = jax.sharding.SingleDeviceSharding(jax.devices()[0])
        outs, buffers = [], []
        for _ in range(5):
            trajectory = loop.rollout(params).trajectory
            buffers.append(trajectory.timestep.observation)
            outs.append(jax.tree.map(np.array, trajectory))  # before the buffers are reused
            loop.ship(trajectory, sharding)
        return outs, buffers

    fresh, fresh_buffers = rollouts(False)
    recycled, recycled_buffers = rollouts(True)
    assert not any(
        np.shares_memory(a, b) for a in fresh_buffers for b in fresh_buffers if a is not b
    )
    assert np.shares_memory(recycled_buffers[0], recycled_buffers[2])
    assert np.shares_memory(recycled_buffers[1], recycled_buffers[3])
    assert not np.shares_memory(recycled_buffers[2], recycled_buffers[3])
    for a, b in zip(fresh, recycled, strict=True):
        jax.tree.map(np.testing.assert_array_equal, a, b)
