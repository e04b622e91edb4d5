"""`podracer.runs.load` on checkpoints both runtimes write: the loaded Policy acts as the
agent does with the run's final params, and each seed of a multi-seed run is its own."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from podracer.envs import make
from podracer.runs import load


def observations():
    """A batch of Catch observations from a few random steps of 6 envs."""
    env = make("catch")
    keys = jax.random.split(jax.random.PRNGKey(0), 6)
    state, ts = jax.vmap(env.reset)(keys)
    seen = [ts.observation]
    for t in range(3):
        step_keys = jax.random.split(jax.random.PRNGKey(t + 1), 6)
        state, ts = jax.vmap(env.step)(state, jnp.full(6, t % 3), step_keys)
        seen.append(ts.observation)
    return np.concatenate([np.asarray(o) for o in seen])


def check_acts_as_the_agent(policy, params, obs):
    expected, _ = policy.agent.greedy_act(params, jnp.asarray(obs))
    np.testing.assert_array_equal(policy.act(obs), expected)  # numpy batch
    np.testing.assert_array_equal(policy.act(jnp.asarray(obs)), expected)  # JAX batch
    assert policy.act(obs[3]) == expected[3] and policy.act(jnp.asarray(obs[3])) == expected[3]
    return np.asarray(expected)


@pytest.mark.slow
def test_anakin_and_sebulba_checkpoints_load_as_policies_that_act_as_their_agents(tmp_path):
    from podracer.anakin import AnakinConfig
    from podracer.anakin import train as anakin
    from podracer.sebulba import SebulbaConfig
    from podracer.sebulba import train as sebulba

    obs = observations()
    common = dict(env="catch", agent="ppo", runs_root=str(tmp_path), progress=False,
                  tensorboard=False, total_env_steps=64)  # fmt: skip
    seeds = anakin(AnakinConfig(num_envs=8, rollout_length=4, updates_per_chunk=2,
                                num_seeds=2, run_name="seeds", **common))  # fmt: skip
    host = sebulba(SebulbaConfig(envs_per_thread=8, rollout_length=4, trajectories_per_update=1,
                                 run_name="host", **common))  # fmt: skip

    actions = []
    for k in range(2):  # each seed's own final params
        policy = load(seeds.run_dir, member=k)
        assert policy.member == {"member": k, "seed": k} and policy.config["runtime"] == "anakin"
        final = jax.tree.map(lambda x, k=k: np.asarray(x)[k], seeds.state.train.params)
        for ours, theirs in zip(jax.tree.leaves(policy.params), jax.tree.leaves(final),
                                strict=True):  # fmt: skip
            np.testing.assert_array_equal(ours, theirs)
        actions.append(check_acts_as_the_agent(policy, final, obs))
    seed0, seed1 = (jax.tree.leaves(load(f"{seeds.run_dir}:{k}").params)[0] for k in range(2))
    assert not np.array_equal(seed0, seed1)
    with pytest.raises(ValueError, match=r"is a run of 2 seeds; name one: .*seeds:0 \.\. .*:1"):
        load(seeds.run_dir)

    policy = load("host", runs_root=tmp_path)
    assert policy.member == {"seed": 0} and policy.config["runtime"] == "sebulba"
    final = jax.device_get(host.state.params)
    check_acts_as_the_agent(policy, final, obs)
