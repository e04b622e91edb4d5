"""RunConfig: dotted-name overrides (the Python twin of the command lines' flags)."""

import pytest

from podracer.agents import ImpalaConfig
from podracer.agents import PPOConfig
from podracer.agents.validation import ConfigError
from podracer.runs import Run
from podracer.runs import RunConfig


def test_replace_sets_nested_fields_by_their_flag_names():
    config = RunConfig(agent="ppo")
    new = config.replace({"ppo.learning-rate": 1e-3, "distributed": False}, seed=3)
    assert new.agent_config == PPOConfig(learning_rate=1e-3)
    assert new.seed == 3 and not new.cluster.distributed
    assert config.agent_config == PPOConfig()  # frozen: the original is unchanged
    assert config.replace({"agent_config.clip_eps": 0.1}).agent_config.clip_eps == 0.1


def test_a_new_agent_starts_from_its_defaults():
    new = RunConfig(agent="ppo").replace({"agent": "impala", "impala.learning_rate": 5e-4})
    assert new.agent_config == ImpalaConfig(learning_rate=5e-4)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"sed": 1}, "RunConfig has no field 'sed'; did you mean ['seed'"),
        ({"ppo.learnin_rate": 1.0}, "RunConfig.ppo has no field 'learnin_rate'"),
        ({"seed.x": 1}, "RunConfig.seed is not a nested config"),
        ({"ppo.learning_rate": float("inf")}, "PPOConfig.learning_rate must be finite"),
        ({"agent": "pp0"}, "unknown agent 'pp0'"),
    ],
)
def test_replace_refuses_bad_names_and_values_in_one_line(changes, message):
    with pytest.raises(ConfigError) as e:
        RunConfig(agent="ppo").replace(changes)
    assert message in str(e.value) and "\n" not in str(e.value)


def test_on_row_gets_each_row_as_it_is_logged(tmp_path):
    rows = []
    config = RunConfig(runs_root=str(tmp_path), run_name="r", total_env_steps=30, progress=False)
    with Run.open(config, "toy", on_row=rows.append) as run:
        for _ in range(3):
            run.advance(10)
            run.log({"charts/episodic_return": 1.0})
    assert [r["env_steps"] for r in rows] == [10, 20, 30]
    assert rows == run.rows.history and rows[0] is not run.rows.history[0]


def test_a_stored_config_s_renamed_field_reads_as_its_present_name():
    """IMPALA's `baseline_cost` is `value_cost` now: runs written before load, resume and
    compare as the same config."""
    from podracer.runs.config import changed_fields
    from podracer.runs.config import config_from_json

    config = RunConfig(agent="impala", agent_config=ImpalaConfig(value_cost=0.25))
    stored = config.to_json()
    old = {("baseline_cost" if k == "value_cost" else k): v
           for k, v in stored["agent_config"].items()}  # fmt: skip
    stored = {**stored, "agent_config": old}
    assert config_from_json(RunConfig, stored).agent_config.value_cost == 0.25
    assert changed_fields(stored, config) == {}
    both = {**stored, "agent_config": {**old, "value_cost": 0.5}}
    with pytest.raises(ConfigError, match="both 'baseline_cost' and its present name"):
        config_from_json(RunConfig, both)
