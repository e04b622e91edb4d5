"""The same global config learns the same on 1, 2 and 4 devices (fake CPU devices),
feed-forward, recurrent, a sweep's members and a PBT population."""

import os
import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import jax, numpy as np
    from podracer.agents import PPOConfig
    from podracer.anakin import AnakinConfig, train
    assert len(jax.devices()) == 4
    # The recurrent PPO's minibatches split the envs: 2 per device on 4 devices.
    gru = PPOConfig(core="gru", core_size=8, hidden_sizes=(8,), num_minibatches=2)
    # And a sweep: 2 x 2 points x 2 seeds, members on a leading axis as seeds are.
    sweep = dict(num_seeds=2, sweep=("ppo.learning_rate=1e-3,3e-3", "ppo.entropy_cost=0,0.02"))
    # And PBT over it, a step at each of the 2 chunks' ends.
    pbt = dict(sweep, pbt_interval=5 * 8 * 8)
    for agent, T, agent_config, members in (("qlambda", 4, None, {}), ("ppo", 8, None, {}),
                                            ("ppo", 8, gru, {}), ("ppo", 8, None, sweep),
                                            ("ppo", 8, None, pbt)):
        runs = {}
        # 2 devices for the first only: 4 splits every batch further (2 envs a device).
        counts = (1, 2, 4) if agent == "qlambda" else (1, 4)
        for n in counts:
            config = AnakinConfig(agent=agent, num_envs=8, rollout_length=T, updates_per_chunk=5,
                                  total_env_steps=2 * 5 * 8 * T, num_devices=n, progress=False,
                                  tensorboard=False, agent_config=agent_config, **members)
            result = train(config)
            runs[n] = (jax.device_get((result.state.train.params, result.state.population)),
                       result.history)
        for n in counts[1:]:
            jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=2e-4, atol=2e-5),
                         runs[1][0], runs[n][0])
            for h1, hn in zip(runs[1][1], runs[n][1], strict=True):
                assert h1.get("member") == hn.get("member") and h1.get("seed") == hn.get("seed")
                swept = lambda h: {k: v for k, v in h.items() if k.startswith("sweep/")}
                assert swept(h1) == swept(hn)  # PBT: the same members copied, the same values
                r1, rn = h1["charts/episodic_return"], hn["charts/episodic_return"]
                assert r1 == rn or (np.isnan(r1) and np.isnan(rn))
                np.testing.assert_allclose(
                    h1["losses/total"], hn["losses/total"], rtol=1e-3, atol=1e-5)
    print("TOPOLOGY-OK")
    """
)


@pytest.mark.slow
def test_same_run_on_1_2_4_devices():
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=4"}
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-4000:]
    assert "TOPOLOGY-OK" in out.stdout


REPLAY_SCRIPT = textwrap.dedent(
    """
    import jax, numpy as np
    from podracer.anakin import AnakinConfig, train
    from podracer.agents import MuZeroConfig, ReplayConfig
    from podracer.search import DiscreteSupport, SearchConfig
    assert len(jax.devices()) == 2
    muzero = MuZeroConfig(
        num_unroll_steps=2, td_steps=2, search=SearchConfig(policy="muzero", num_simulations=2),
        value_support=DiscreteSupport(-2.0, 2.0, 5, scaled=True),
        reward_support=DiscreteSupport(-1.0, 1.0, 3, scaled=True),
        torso_hidden_sizes=(8,), latent_size=8, hidden_sizes=(8,),
        replay=ReplayConfig(capacity=32, sequences_per_update=4, priority_exponent=1.0))
    config = AnakinConfig(agent="muzero", num_envs=8, rollout_length=4, updates_per_chunk=3,
                          total_env_steps=3 * 8 * 4, num_devices=2, progress=False,
                          tensorboard=False, agent_config=muzero)
    state = train(config).state
    replay = jax.device_get(state.replay)
    # One buffer per device, 16 rows each, holding 3 rollouts x 4 local envs.
    assert replay.priorities.shape == (2, 16), replay.priorities.shape
    assert list(replay.size) == [12, 12] and list(replay.insert_index) == [12, 12]
    # Each device stored its own environments' sequences.
    obs = replay.items.timestep.observation
    assert not np.array_equal(obs[0, :12], obs[1, :12])
    # Params stay replicated (gradients averaged over the devices).
    for leaf in jax.tree.leaves(state.train.params):
        assert leaf.sharding.is_fully_replicated
    print("REPLAY-OK")
    """
)


@pytest.mark.slow
def test_local_replay_on_2_devices():
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    out = subprocess.run(
        [sys.executable, "-c", REPLAY_SCRIPT],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert out.returncode == 0, out.stderr[-4000:]
    assert "REPLAY-OK" in out.stdout
