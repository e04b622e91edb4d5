"""Agents by name: lookup, suggestions, config overrides."""

import pytest

from podracer.agents import AGENTS
from podracer.agents import ImpalaConfig
from podracer.agents import PPOConfig
from podracer.agents import agent_config
from podracer.agents import make_agent
from podracer.agents import register_agent
from podracer.envs import EnvSpec

SPEC = EnvSpec("probe", (3,), "float32", 2)


def test_make_agent_builds_each_registered_agent():
    for name in ("qlambda", "impala", "ppo"):
        agent = make_agent(name, SPEC)
        assert agent.name == name and agent.spec == SPEC
        assert isinstance(agent.config, AGENTS[name][0])


def test_unknown_agent_suggests_the_close_name():
    with pytest.raises(ValueError, match="Did you mean 'impala'"):
        make_agent("ipmala", SPEC)
    with pytest.raises(ValueError, match="available"):
        agent_config("nothing-like-it")


def test_agent_config_applies_overrides_and_rejects_unknown_fields():
    config = agent_config("ppo", num_epochs=2, gamma=0.5)
    assert config == PPOConfig(num_epochs=2, gamma=0.5)
    with pytest.raises(ValueError, match=r"no field\(s\) \['gama'\]"):
        agent_config("ppo", gama=0.5)
    with pytest.raises(ValueError, match="PPOConfig.gamma"):
        agent_config("ppo", gamma=2.0)


def test_make_agent_rejects_another_agents_config():
    with pytest.raises(TypeError, match="ImpalaConfig"):
        make_agent("impala", SPEC, PPOConfig())
    assert make_agent("impala", SPEC, ImpalaConfig(gamma=0.5)).config.gamma == 0.5


def test_register_agent_adds_a_factory():
    calls = []

    def factory(spec, config, total_updates=None):
        calls.append((spec, config, total_updates))
        return "built"

    register_agent("probe-agent", ImpalaConfig, factory)
    try:
        assert make_agent("probe-agent", SPEC, total_updates=7) == "built"
        assert calls == [(SPEC, ImpalaConfig(), 7)]
    finally:
        del AGENTS["probe-agent"]
