"""The `sebulba` command parses SebulbaConfig's fields and prints SPS and return."""

import pytest

from podracer.sebulba.cli import main
from podracer.sebulba.cli import run


def test_cli_trains_and_prints(capsys, tmp_path):
    result = run([
        "--envs-per-thread", "4", "--rollout-length", "8", "--trajectories-per-update", "1",
        "--total-env-steps", "64", "--no-progress", "--no-tensorboard", "--agent", "ppo",
        "--ppo.num-minibatches", "2", "--run-name", "cli", "--runs-root", str(tmp_path),
    ])  # fmt: skip
    assert result.updates == 2
    out = capsys.readouterr().out
    assert "SPS" in out and "final return" in out and "ppo" in out
    assert (tmp_path / "cli" / "config.json").exists()


def test_cli_rejects_bad_values_naming_the_field(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--rollout-length", "0"])
    assert info.value.code == 2
    err = " ".join(capsys.readouterr().err.split())  # tyro wraps the message in a box
    assert "SebulbaConfig.rollout_length must be a" in err


def test_cli_exit_status_is_2_for_a_bad_env_name(capsys):
    assert main(["--env", "envpool:NoSuchGame-v5", "--no-progress", "--no-tensorboard"]) == 2
    assert "SebulbaConfig.env" in capsys.readouterr().err
