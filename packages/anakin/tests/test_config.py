"""Bad input fails before compiling, naming the field."""

import pytest

from podracer.anakin import AnakinConfig
from podracer.anakin import train
from podracer.anakin.cli import main


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
    with pytest.raises(ValueError, match="num_envs=3 must be divisible"):
        AnakinConfig(num_envs=3).check_devices(2)
    with pytest.raises(ValueError, match="only 1 devices"):
        AnakinConfig(num_devices=2).check_devices(1)


def test_unknown_env_suggests_a_close_match():
    with pytest.raises(ValueError, match="catch"):
        train(AnakinConfig(env="cacth", progress=False))


def test_cli_reports_bad_input_without_a_traceback(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["--num-envs", "0"])
    assert exit_info.value.code == 2
    assert "num_envs" in capsys.readouterr().err
    assert main(["--env", "gymnax:CartPol-v1"]) == 2
    assert "CartPole-v1" in capsys.readouterr().err
