"""SebulbaConfig validation: bad input fails before compiling, naming the field."""

import dataclasses

import pytest

from podracer.agents import PRESETS
from podracer.agents import PPOConfig
from podracer.runs import parse_cli
from podracer.sebulba import SebulbaConfig
from podracer.sebulba import train


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(envs_per_thread=0), "envs_per_thread"),
        (dict(rollout_length=-1), "rollout_length"),
        (dict(trajectories_per_update=0), "trajectories_per_update"),
        (dict(total_env_steps=0), "total_env_steps"),
        (dict(queue_size=0), "queue_size"),
        (dict(actor_threads_per_device=0), "actor_threads_per_device"),
        (dict(eval_interval=-1), "eval_interval"),
        (dict(stage_timeout_s=0.0), "stage_timeout_s"),
        (dict(agent="dqn"), "agent"),
        (dict(actor_loop="jit"), "actor_loop"),
        (dict(async_envs=True, envs_per_thread=5), "envs_per_thread"),
        (dict(actor_device_ids=()), "actor_device_ids"),
        (dict(learner_device_ids=(1, 1)), "learner_device_ids"),
        (dict(resume=True), "run_name"),
    ],
)
def test_bad_values_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        SebulbaConfig(**kwargs)


def test_the_rollout_must_split_into_the_agents_minibatches():
    config = SebulbaConfig(
        agent="ppo", rollout_length=30, agent_config=PPOConfig(num_minibatches=4)
    )
    with pytest.raises(
        ValueError, match="rollout_length must be divisible by PPOConfig.num_minibatches=4"
    ):
        config.device_ids(1)


def test_actor_layouts_come_from_the_agents_preset_unless_given():
    def layout(*argv):
        config, _ = parse_cli(SebulbaConfig, list(argv))
        return config.envs_per_thread, config.rollout_length

    assert layout() == (16, 32)
    assert layout("--agent", "muzero") == (32, 16)  # Anakin's MuZero layout
    assert layout("--agent", "muzero", "--envs-per-thread", "8") == (8, 16)
    assert layout("--agent", "ppo", "--rollout-length", "64") == (16, 64)


@pytest.mark.parametrize("env", ["MountainCar-v0", "envpool:MountainCar-v0"])
def test_mountaincar_defaults_are_its_impala_preset(env):
    """`sebulba --env MountainCar-v0` runs IMPALA's `MountainCar-v0` preset (APPO with the
    novelty bonus, benchmarks/results/sebulba_mountaincar.md) in its layout, not the
    classic family's."""
    config, source = SebulbaConfig.from_preset(env)
    assert config.agent == "impala" and source.startswith("preset 'MountainCar-v0' for impala")
    assert config.agent_config == PRESETS[("impala", "MountainCar-v0")].agent_config
    a = config.agent_config
    assert (a.novelty_weight, a.novelty_fade, a.novelty_window) == (10.0, 0.6, 50_000)
    assert (a.clip_eps, a.num_epochs, a.num_minibatches) == (0.2, 4, 4)
    layout = (config.envs_per_thread, config.rollout_length, config.total_env_steps)
    assert layout == (16, 32, 1_000_000)


def test_device_layouts():
    config = SebulbaConfig(envs_per_thread=6)
    assert config.device_ids(1) == ((0,), (0,))
    assert config.device_ids(4) == ((0,), (1, 2, 3))
    assert SebulbaConfig(envs_per_thread=6, learner_device_ids=(0, 1)).device_ids(4) == (
        (2,),
        (0, 1),
    )
    assert SebulbaConfig(actor_device_ids=(3,), envs_per_thread=6).device_ids(4) == (
        (3,),
        (0, 1, 2),
    )


@pytest.mark.parametrize(
    "kwargs, num_devices, match",
    [
        (dict(actor_device_ids=(0, 1), learner_device_ids=(1, 2)), 4, "overlap"),
        (dict(learner_device_ids=(1, 4)), 4, "learner_device_ids.*only 4"),
        (dict(actor_device_ids=(1,)), 1, "actor_device_ids.*only 1"),
        (dict(envs_per_thread=8), 4, "envs_per_thread.*3"),  # learners 1..3
    ],
)
def test_bad_device_layouts(kwargs, num_devices, match):
    with pytest.raises(ValueError, match=match):
        SebulbaConfig(**kwargs).device_ids(num_devices)


def test_unknown_env_fails_before_compiling():
    with pytest.raises(ValueError, match="SebulbaConfig.env.*CartPole-v1"):
        train(SebulbaConfig(env="envpool:CartPole-v9", progress=False))


def test_missing_device_fails_in_train():
    with pytest.raises(ValueError, match="learner_device_ids"):
        train(SebulbaConfig(learner_device_ids=(7,), progress=False))


def test_steps_per_update_and_updates():
    config = SebulbaConfig(
        envs_per_thread=8, rollout_length=16, trajectories_per_update=3, total_env_steps=1000
    )
    assert config.steps_per_update() == 384
    assert config.num_updates() == 3  # rounded up
    assert config.planned_env_steps() == 1152 and config.planned_env_steps(2) == 1536
    assert config.rounding_line() == (
        "total_env_steps=1,000 rounds up to 1,152: whole updates of 384 env steps "
        "(trajectories_per_update 3 x envs_per_thread 8 x rollout_length 16)"
    )
    assert config.rounding_line(2).endswith("rollout_length 16 x 2 processes)")
    assert dataclasses.replace(config, total_env_steps=1152).rounding_line() is None


def test_cpu_actors_beside_accelerator_learners_index_their_own_pool():
    # 2 accelerator devices and 1 CPU device: actors default to the CPU, learners to both.
    config = SebulbaConfig(actor_backend="cpu", envs_per_thread=8)
    assert config.device_ids(2, num_actor_devices=1) == ((0,), (0, 1))
    assert SebulbaConfig(actor_backend="cpu", learner_device_ids=(1,)).device_ids(2, 1) == (
        (0,),
        (1,),
    )
    with pytest.raises(ValueError, match=r"actor_device_ids=\(1,\) names a device beyond the 1"):
        SebulbaConfig(actor_backend="cpu", actor_device_ids=(1,)).device_ids(2, 1)
    with pytest.raises(ValueError, match="envs_per_thread .* learner devices"):
        SebulbaConfig(actor_backend="cpu", envs_per_thread=5).device_ids(2, 1)
