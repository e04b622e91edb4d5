"""The sharded update equals the agent's update on the concatenated batch."""

import jax
import jax.numpy as jnp
import numpy as np

from podracer.agents import Trajectory
from podracer.agents import init_train_state
from podracer.agents import make_agent
from podracer.envs import EnvSpec
from podracer.envs import TimeStep
from podracer.sebulba import learner_mesh
from podracer.sebulba import make_update
from podracer.sebulba import trajectory_sharding
from podracer.sebulba.learner import stop_votes

SPEC = EnvSpec("probe", (3,), "float32", 2, max_episode_steps=None)


def _trajectory(key, T=4, B=2) -> Trajectory:
    k1, k2, k3, k4 = jax.random.split(key, 4)
    obs = jax.random.normal(k1, (T + 1, B, 3))
    done = jax.random.bernoulli(k2, 0.2, (T + 1, B))
    false = jnp.zeros((T + 1, B), bool)
    ts = TimeStep(
        observation=obs, reward=jax.random.normal(k3, (T + 1, B)), terminated=done,
        truncated=false, first=false, final_observation=None,
        episode_return=jnp.zeros((T + 1, B)), episode_length=jnp.zeros((T + 1, B), jnp.int32),
    )  # fmt: skip
    action = jax.random.randint(k4, (T + 1, B), 0, 2)
    return Trajectory(ts, action, {"logits": jnp.zeros((T + 1, B, 2))})


def test_sharded_update_matches_agent_update_on_the_concatenated_batch():
    agent = make_agent("impala", SPEC)
    state = init_train_state(agent, jax.random.PRNGKey(0))
    trajectories = (_trajectory(jax.random.PRNGKey(1)), _trajectory(jax.random.PRNGKey(2)))
    mesh = learner_mesh(jax.devices()[:1])
    placed = jax.device_put(trajectories, trajectory_sharding(mesh))
    update = make_update(agent, mesh)
    new_state, metrics, stop, replay = update(state, placed, stop_votes(False, mesh), None)
    assert replay is None
    assert not stop

    batch = jax.tree.map(lambda *xs: jnp.concatenate(xs, axis=1), *trajectories)
    key, update_key = jax.random.split(state.key)
    params, _, expected = jax.jit(agent.update)(state.params, state.opt_state, batch, update_key)
    assert int(new_state.update_step) == 1
    np.testing.assert_array_equal(new_state.key, key)
    for got, want in zip(jax.tree.leaves(new_state.params), jax.tree.leaves(params), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    for name, value in expected.items():
        np.testing.assert_allclose(metrics[name], value, rtol=1e-5, atol=1e-6)
    assert jax.tree.leaves(params)[0].shape  # a real update happened
    assert not np.allclose(jax.tree.leaves(new_state.params)[0], jax.tree.leaves(state.params)[0])


def test_the_stage_line_averages_every_seed_s_actors_and_leaves_out_the_first_update():
    from podracer.sebulba.actor import Rollout
    from podracer.sebulba.stats import MetricAccumulator
    from podracer.sebulba.stats import stages

    def rollout(env_s, queue_s):
        return Rollout(None, 0, 0, 0, 8, np.zeros(0), np.zeros(0),
                       {"env": env_s, "queue_put": queue_s})  # fmt: skip

    seeds = [MetricAccumulator(), MetricAccumulator()]
    assert stages(seeds) == ""
    for acc, env_s in zip(seeds, (0.010, 0.030), strict=True):
        acc.add_update(0, [rollout(9.0, 9.0)], {}, 9.0, 9.0, 9.0)  # compiles: left out
        acc.add_update(1, [rollout(env_s, 0.010)] * 2, {}, 0.001, 0.002, 0.003)
    line = stages(seeds)
    assert line.startswith("stages, ms per rollout: env 20.0, queue_put 10.0 | ")
    assert "ms per update: wait 1.0, update 2.0, publish 3.0; actors busy 67%" in line


def test_seeds_in_turns_update_as_side_by_side_with_a_fraction_of_the_temporaries():
    # Four seeds' update side by side, in pairs and one at a time (`members_at_once`): the
    # same new states and metrics, and XLA's own count of the temporaries shrinks.
    agent = make_agent("impala", SPEC)
    seeds = 4
    state = jax.vmap(lambda k: init_train_state(agent, k))(
        jax.random.split(jax.random.PRNGKey(0), seeds)
    )
    mesh = learner_mesh(jax.devices()[:1])
    trajectories = tuple(
        (_trajectory(jax.random.PRNGKey(10 + s), T=8, B=64),) for s in range(seeds)
    )
    placed = jax.device_put(trajectories, trajectory_sharding(mesh))
    votes = stop_votes(False, mesh)
    results, temporaries = [], []
    for at_once in (0, 2, 1):
        update = make_update(agent, mesh, seeds, at_once)
        compiled = update.lower(state, placed, votes, None).compile()
        temporaries.append(compiled.memory_analysis().temp_size_in_bytes)
        results.append(jax.device_get(compiled(state, placed, votes, None)[:2]))
    for other in results[1:]:
        jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6),
                     results[0], other)  # fmt: skip
    side, pairs, single = temporaries
    assert single < pairs < 0.75 * side, temporaries
