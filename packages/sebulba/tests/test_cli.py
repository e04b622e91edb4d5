"""The `sebulba` command: flags from SebulbaConfig, a summary line, one-line errors."""

from podracer.sebulba.cli import main


def test_cli_trains_and_prints(capsys, tmp_path):
    status = main([
        "--envs-per-thread", "4", "--rollout-length", "8", "--trajectories-per-update", "1",
        "--total-env-steps", "64", "--no-progress", "--no-tensorboard", "--agent", "ppo",
        "--ppo.num-minibatches", "2", "--run-name", "cli", "--runs-root", str(tmp_path),
    ])  # fmt: skip
    assert status == 0
    out = capsys.readouterr().out
    assert out.startswith("sebulba: ppo on envpool:CartPole-v1: 64 env steps, ")
    assert "SPS" in out and "final return" in out and str(tmp_path / "cli") in out
    assert (tmp_path / "cli" / "config.json").exists()


def test_cli_rejects_bad_values_naming_the_field(capsys):
    assert main(["--rollout-length", "0"]) == 2
    assert capsys.readouterr().err == (
        "sebulba: error: SebulbaConfig.rollout_length must be an int >= 1, got 0\n"
    )


def test_cli_exit_status_is_2_for_a_bad_env_name(capsys):
    assert main(["--env", "envpool:NoSuchGame-v5", "--no-progress", "--no-tensorboard"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("sebulba: error: SebulbaConfig.env") and err.count("\n") == 1
