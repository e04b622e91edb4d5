"""Bad input fails before compiling, naming the field."""

import json

import pytest

from podracer.agents import ImpalaConfig
from podracer.agents import PPOConfig
from podracer.agents import QLambdaConfig
from podracer.agents.validation import ConfigError
from podracer.anakin import AnakinConfig
from podracer.anakin import train
from podracer.anakin.cli import main
from podracer.runs import parse_cli


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(num_envs=0), "num_envs"),
        (dict(rollout_length=-1), "rollout_length"),
        (dict(updates_per_chunk=0), "updates_per_chunk"),
        (dict(agent="dqn"), "agent"),
        (dict(resume=True), "run_name"),
        (dict(num_devices=0), "num_devices"),
    ],
)
def test_bad_values_name_the_field(kwargs, field):
    with pytest.raises(ValueError, match=field):
        AnakinConfig(**kwargs)


def test_envs_not_divisible_by_devices():
    with pytest.raises(ValueError, match="num_envs must be divisible by the 2 devices, got 3"):
        AnakinConfig(num_envs=3).check_devices(2)
    with pytest.raises(ValueError, match="num_devices must be at most the 1 devices"):
        AnakinConfig(num_devices=2).check_devices(1)


def test_unknown_env_suggests_a_close_match():
    with pytest.raises(ValueError, match="catch"):
        train(AnakinConfig(env="cacth", progress=False))


def test_cli_reports_bad_input_without_a_traceback(capsys):
    assert main(["--num-envs", "0"]) == 2
    assert (
        capsys.readouterr().err
        == "anakin: error: AnakinConfig.num_envs must be an int >= 1, got 0\n"
    )
    assert main(["--env", "gymnax:CartPol-v1"]) == 2
    assert "CartPole-v1" in capsys.readouterr().err


def test_impala_minibatches_split_the_envs_even_without_a_core():
    appo = ImpalaConfig(num_epochs=2, num_minibatches=4, clip_eps=0.2)
    config = AnakinConfig(agent="impala", agent_config=appo, num_envs=8, rollout_length=6)
    config.check_devices(2)  # 4 envs a device in 4 minibatches; the rollout need not divide
    with pytest.raises(
        ConfigError,
        match=r"AnakinConfig.num_envs must be such that each "
        r"device's 2 envs are divisible by ImpalaConfig.num_minibatches=4",
    ):
        config.check_devices(4)


def test_a_recurrent_agent_needs_envs_its_minibatches_divide():
    lstm = PPOConfig(core="lstm", num_minibatches=4)
    config = AnakinConfig(agent="ppo", agent_config=lstm, num_envs=12, rollout_length=6)
    config.check_devices(1)  # 12 envs in 4 minibatches; the rollout need not divide
    with pytest.raises(
        ConfigError,
        match=r"AnakinConfig.num_envs must be such that each "
        r"device's 6 envs are divisible by PPOConfig.num_minibatches=4",
    ):
        config.check_devices(2)


def test_microbatches_must_divide_each_minibatch_before_anything_compiles():
    sliced = QLambdaConfig(num_minibatches=2, num_microbatches=4)
    AnakinConfig(agent_config=sliced, rollout_length=16).check_devices(1)  # 16 = 2 x 4 x 2
    with pytest.raises(
        ConfigError,
        match=r"AnakinConfig.rollout_length must be divisible by "
        r"QLambdaConfig.num_minibatches=2 x num_microbatches=4, got 12",
    ):
        AnakinConfig(agent_config=sliced, rollout_length=12).check_devices(1)


def test_sweep_flags_replace_a_loaded_config_s_sweep_and_resume_is_not_loaded(tmp_path):
    stored = AnakinConfig(sweep=("qlambda.learning_rate=1e-3,3e-3",), run_name="s",
                          resume=True).to_json()  # a resumed sweep's config.json  # fmt: skip
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"runtime": "anakin", **stored}))
    loaded, _ = parse_cli(AnakinConfig, ["--config", str(path)])
    assert loaded.sweep == ("qlambda.learning_rate=1e-3,3e-3",) and not loaded.resume
    # Another field: the flags' sweep, not both (a grid of 4 where 2 were asked).
    other, _ = parse_cli(
        AnakinConfig, ["--config", str(path), "--sweep", "qlambda.lambda_=0.5,0.9"]
    )
    assert other.sweep == ("qlambda.lambda_=0.5,0.9",) and other.num_members == 2
    # The same field again: the flags' values, not "swept twice".
    same, _ = parse_cli(AnakinConfig, ["--config", str(path),
                                       "--sweep=qlambda.learning_rate=1e-2,3e-2"])  # fmt: skip
    assert same.sweep == ("qlambda.learning_rate=1e-2,3e-2",)
