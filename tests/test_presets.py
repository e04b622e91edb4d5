"""Every registered preset builds and trains one chunk (Anakin) or one update (Sebulba) on
an env of its family (or its own task), as the command line would pick it: the agent
config and the runtime's layout unchanged, only the budget cut to a single step of learning.

A preset that no longer fits its agent (a minibatch count that does not divide the
rollout, a torso that cannot read the family's observations) fails here, before anyone
spends a benchmark on it.
"""

import dataclasses
import math

import pytest

from podracer.agents import PRESETS
from podracer.agents import find_preset
from podracer.envs.families import env_family

pytest.importorskip("gymnax")
pytest.importorskip("envpool")
anakin = pytest.importorskip("podracer.anakin")
sebulba = pytest.importorskip("podracer.sebulba")

# One env per family and runtime: Anakin needs device envs, Sebulba takes host envs (a
# JaxEnv through `as_host_env` where envpool has no such task).
ENVS = {
    "catch": {"anakin": "catch", "sebulba": "catch"},
    "classic": {"anakin": "gymnax:CartPole-v1", "sebulba": "envpool:CartPole-v1"},
    "control": {"anakin": "gymnax:Pendulum-v1", "sebulba": "envpool:Pendulum-v1"},
    "minatar": {"anakin": "gymnax:Breakout-MinAtar", "sebulba": "gymnax:Breakout-MinAtar"},
    "atari": {"sebulba": "envpool:Pong-v5"},
    "mujoco": {"sebulba": "envpool:HalfCheetah-v4"},
    "Acrobot-v1": {"anakin": "gymnax:Acrobot-v1", "sebulba": "envpool:Acrobot-v1"},
    "MountainCar-v0": {"anakin": "gymnax:MountainCar-v0", "sebulba": "envpool:MountainCar-v0"},
}
RUNTIMES = {"anakin": anakin.AnakinConfig, "sebulba": sebulba.SebulbaConfig}
# MuZero's presets but Catch's, and Atari's frames, compile for 10-20 s a step here: slow.
SLOW = {(a, f) for a, f in PRESETS if f == "atari" or (a == "muzero" and f != "catch")}
CASES = [
    pytest.param(
        agent,
        family,
        runtime,
        id=f"{agent}-{family}-{runtime}",
        marks=[pytest.mark.slow] * ((agent, family) in SLOW),
    )
    for (agent, family) in sorted(PRESETS)
    for runtime, config_cls in RUNTIMES.items()
    if (agent, family) in config_cls.LAYOUTS
]


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_each_layout_is_of_a_preset_and_names_its_runtime_s_fields(runtime):
    config_cls = RUNTIMES[runtime]
    assert set(config_cls.LAYOUTS) <= set(PRESETS)
    for (agent, _), layout in config_cls.LAYOUTS.items():
        config_cls(agent=agent, **layout)  # an unknown field is a TypeError


def test_every_family_with_a_preset_has_a_test_env():
    assert {family for _, family in PRESETS} <= set(ENVS)
    for name, envs in ENVS.items():  # a family's envs, or a task's own
        assert all(name in (env_family(env), env.rpartition(":")[2]) for env in envs.values())


def test_a_task_preset_comes_before_its_family_preset():
    assert find_preset("ppo", "gymnax:Acrobot-v1")[0] == "Acrobot-v1"
    assert find_preset("ppo", "envpool:Acrobot-v1")[0] == "Acrobot-v1"
    assert find_preset("ppo", "gymnax:CartPole-v1")[0] == "classic"
    assert find_preset("impala", "gymnax:Acrobot-v1")[0] == "classic"  # no task preset
    assert find_preset("ppo", "gymnax:Acrobot-v1", "classic")[0] == "classic"  # --preset


@pytest.mark.parametrize(("agent", "family", "runtime"), CASES)
def test_each_preset_trains_a_step_on_its_family(agent, family, runtime, tmp_path):
    env = ENVS[family][runtime]
    if runtime == "anakin":
        config, source = anakin.AnakinConfig.from_preset(env=env, agent=agent)
        one = config.steps_per_chunk
        train = anakin.train
    else:
        config, source = sebulba.SebulbaConfig.from_preset(env=env, agent=agent)
        one = config.steps_per_update()
        train = sebulba.train
    assert source.startswith(f"preset {family!r} for {agent}"), source
    assert config.agent_config == PRESETS[(agent, family)].agent_config
    config = dataclasses.replace(
        config, total_env_steps=one, runs_root=str(tmp_path), progress=False, tensorboard=False
    )
    result = train(config)
    assert result.env_steps == one
    assert all(math.isfinite(v) for k, v in result.history[-1].items() if k.startswith("losses/"))
