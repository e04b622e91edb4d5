"""Agents by name: lookup, suggestions, config overrides."""

import pytest

from podracer.agents import AGENTS
from podracer.agents import Agent
from podracer.agents import AgentEntry
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

    register_agent("probe_agent", ImpalaConfig, factory)
    try:
        assert make_agent("probe_agent", SPEC, total_updates=7) == "built"
        assert calls == [(SPEC, ImpalaConfig(), 7)]
    finally:
        del AGENTS["probe_agent"]


def make_probe(spec, config: ImpalaConfig, total_updates=None) -> Agent:
    """A probe agent named by its import path."""
    return ("probe", spec, config, total_updates)


def test_an_import_path_names_an_agent_whose_config_its_annotation_gives():
    from podracer.agents import agent_entry
    from podracer.agents import flag_group

    name = f"{__name__}:make_probe"
    try:
        entry = agent_entry(name)
        assert (
            entry.config_cls is ImpalaConfig
            and entry.description == "A probe agent named by its import path."
        )
        assert make_agent(name, SPEC)[0] == "probe"
        assert flag_group(name) == "probe" and flag_group("ppo") == "ppo"
    finally:
        AGENTS.pop(name, None)


def test_an_agent_factory_without_a_config_annotation_is_refused_in_one_line():
    from podracer.agents import as_agent_entry
    from podracer.agents.validation import ConfigError

    with pytest.raises(ConfigError, match="must be annotated with its config dataclass"):
        as_agent_entry(lambda spec, config: None, "bare")
    with pytest.raises(ConfigError, match="cannot import 'no_such_module'"):
        make_agent("no_such_module:make", SPEC)


def test_a_registered_factory_records_the_import_paths_that_rebuild_it():
    from podracer.agents.registry import agent_import_paths

    register_agent("probe_paths", ImpalaConfig, make_probe, "probe")
    try:
        assert agent_import_paths("probe_paths") == {
            "config_cls": "podracer.agents.configs:ImpalaConfig",
            "factory": f"{__name__}:make_probe",
            "description": "probe",
            "action_spaces": ["discrete"],
        }
        assert agent_import_paths("ppo") is None  # built in: every process has it
    finally:
        del AGENTS["probe_paths"]


def make_unannotated(spec, config: ImpalaConfig, total_updates=None):
    return ("probe", spec, config, total_updates)


PROBE_ENTRY = AgentEntry(ImpalaConfig, "os:system")  # a factory string to no factory


def test_an_import_path_to_no_agent_factory_is_refused_before_it_is_called():
    from podracer.agents import agent_entry
    from podracer.agents.validation import ConfigError

    for path in ("os:system", "subprocess:run", "builtins:exec", f"{__name__}:make_unannotated"):
        with pytest.raises(
            ConfigError,
            match=rf"agent '{path}': it is .*was not called; .*"
            r"AgentEntry, or a factory annotated to return an Agent",
        ) as e:
            agent_entry(path)
        assert "\n" not in str(e.value) and path not in AGENTS
    # An AgentEntry's factory string is checked when the agent is built, before the call.
    name = f"{__name__}:PROBE_ENTRY"
    try:
        assert agent_entry(name).config_cls is ImpalaConfig
        with pytest.raises(ConfigError, match=r"its factory \('os:system'\): it is a builtin"):
            make_agent(name, SPEC)
    finally:
        AGENTS.pop(name, None)


def test_an_agent_module_that_fails_to_import_is_one_line(tmp_path, monkeypatch):
    from podracer.agents.validation import ConfigError

    (tmp_path / "raising_agent_module.py").write_text("raise RuntimeError('no licence')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ConfigError) as e:
        make_agent("raising_agent_module:make", SPEC)
    assert str(e.value) == ("agent 'raising_agent_module:make': importing "
                            "'raising_agent_module' raised RuntimeError: no licence")  # fmt: skip


def test_recorded_import_paths_rebuild_only_a_config_dataclass():
    from podracer.agents.registry import register_from_paths
    from podracer.agents.validation import ConfigError

    with pytest.raises(ConfigError, match=r"its config class \('os:system'\): it is a builtin"):
        register_from_paths("probe_rebuilt", {"config_cls": "os:system",
                                              "factory": f"{__name__}:make_probe"})  # fmt: skip
    assert "probe_rebuilt" not in AGENTS
