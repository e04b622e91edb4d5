"""The command-line helper on the toy runtime: presets, config files, resume, errors."""

import dataclasses
import json
import os
import re
import subprocess
import sys
from typing import ClassVar

import pytest

from podracer.agents import AGENTS
from podracer.agents import PRESETS
from podracer.agents import PPOConfig
from podracer.agents import Preset
from podracer.agents import QLambdaConfig
from podracer.agents import register_agent
from podracer.agents import register_preset
from podracer.agents.validation import ConfigError
from podracer.runs import Run
from podracer.runs import RunConfig
from podracer.runs import parse_cli
from podracer.runs import register_layout
from podracer.runs import run_cli


@dataclasses.dataclass(frozen=True)
class ToyRunConfig(RunConfig):
    """A toy runtime's config."""

    num_envs: int = 4  # the toy runtime's only size

    RUNTIME: ClassVar[str] = "toy"


@dataclasses.dataclass(frozen=True)
class WidthConfig:
    width: int = 2  # units of the toy agent's layer


@pytest.fixture
def toy_preset():
    saved = dict(PRESETS)
    register_preset("ppo", "classic", Preset(PPOConfig(num_epochs=7), "a test"))
    register_layout(ToyRunConfig, "ppo", "classic", num_envs=16)
    yield
    PRESETS.clear()
    PRESETS.update(saved)
    ToyRunConfig.LAYOUTS.clear()


def test_a_layout_names_fields_of_its_runtime_s_config():
    with pytest.raises(ConfigError, match=r"ToyRunConfig has no fields \['envs_per_thread'\]"):
        register_layout(ToyRunConfig, "ppo", "classic", envs_per_thread=16)


def test_the_presets_old_names_in_podracer_runs_say_where_they_moved():
    import podracer.runs

    with pytest.raises(AttributeError, match=r"use podracer\.agents\.register_preset"):
        podracer.runs.register_preset  # noqa: B018


def parse(*argv):
    return parse_cli(ToyRunConfig, list(argv))


def test_the_env_familys_preset_applies_and_explicit_flags_win(toy_preset):
    config, source = parse("--env", "gymnax:CartPole-v1", "--agent", "ppo")
    assert config.num_envs == 16 and config.agent_config == PPOConfig(num_epochs=7)
    assert source == "preset 'classic' for ppo: a test"
    config, _ = parse("--env", "gymnax:CartPole-v1", "--agent", "ppo", "--num-envs", "8",
                      "--ppo.num-epochs", "2", "--ppo.learning-rate", "1e-3")  # fmt: skip
    assert config.num_envs == 8
    assert config.agent_config == PPOConfig(num_epochs=2, learning_rate=1e-3)


def test_a_family_without_a_preset_uses_the_agents_defaults(toy_preset):
    config, source = parse("--env", "envpool:Pong-v5", "--agent", "ppo")
    assert config.agent_config == PPOConfig() and config.num_envs == 4
    assert source == "no preset for ppo on envpool:Pong-v5: the agent's defaults"
    with pytest.raises(
        ValueError,
        match=r"--preset must be one of "
        r"\['Acrobot-v1', 'catch', 'classic', 'control', 'minatar', 'mujoco'\]",
    ):
        parse("--agent", "ppo", "--preset", "atari")


@pytest.mark.slow
def test_a_config_file_reruns_a_runs_exact_config(tmp_path, toy_train):
    original, _ = parse(
        "--agent", "qlambda", "--qlambda.lambda_", "0.5", "--seed", "7",
        "--runs-root", str(tmp_path), "--run-name", "a", "--no-progress",
    )  # fmt: skip
    toy_train(original)
    again, source = parse("--config", str(tmp_path / "a" / "config.json"), "--run-name", "b")
    assert again == dataclasses.replace(original, run_name="b")
    assert again.agent_config == QLambdaConfig(lambda_=0.5) and source.startswith("config from")


@pytest.mark.parametrize(
    "path, value, message",
    [
        (("cluster", "distributed"), "yes", "cluster.distributed must be true or false, got 'yes'"),
        (("seed",), 2.5, "seed must be an integer, got 2.5"),
        (("agent_config", "learning_rate"), "fast", "learning_rate must be a number, got 'fast'"),
        (("run_name",), 7, "run_name must be a string or null, got 7"),
        (("wandb_mode",), "sometimes", "wandb_mode must be one of ['online', 'offline']"),
        (("env_kwargs",), [1], "env_kwargs must be a JSON object, got [1]"),
    ],
)
def test_a_config_file_is_checked_field_by_field(tmp_path, path, value, message):
    data = json.loads(json.dumps(dataclasses.asdict(ToyRunConfig())))
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    (tmp_path / "c.json").write_text(json.dumps(data))
    with pytest.raises(ConfigError) as e:
        parse("--config", str(tmp_path / "c.json"))
    assert message in str(e.value) and "\n" not in str(e.value)


def test_resume_starts_from_the_runs_own_config(tmp_path, toy_train):
    first, _ = parse("--seed", "5", "--runs-root", str(tmp_path), "--run-name", "r",
                     "--no-progress", "--total-env-steps", "30")  # fmt: skip
    toy_train(first)
    resumed, source = parse("--runs-root", str(tmp_path), "--run-name", "r", "--resume",
                            "--total-env-steps", "60")  # fmt: skip
    assert resumed.seed == 5 and resumed.resume and resumed.total_env_steps == 60
    assert source == f"resuming {tmp_path / 'r'} with its config"
    assert toy_train(resumed).env_steps == 60


def test_a_registered_agent_gets_its_flags():
    register_agent("width", WidthConfig, "unused:factory", "a toy agent")
    try:
        config, _ = parse("--agent", "width", "--width.width", "5")
        assert config.agent_config == WidthConfig(width=5)
    finally:
        del AGENTS["width"]


def test_bad_values_end_with_one_line_and_status_2(capsys, toy_train):
    assert run_cli(ToyRunConfig, toy_train, ["--seed", "-1"]) == 2
    err = capsys.readouterr().err
    assert err == "toy: error: ToyRunConfig.seed must be an int >= 0, got -1\n"
    assert run_cli(ToyRunConfig, toy_train, ["--agent", "ipmala"]) == 2
    assert "Did you mean 'impala'?" in capsys.readouterr().err
    # tyro reports a nested config's error in its own box, naming the field too.
    with pytest.raises(SystemExit) as info:
        run_cli(ToyRunConfig, toy_train, ["--qlambda.gamma", "2"])
    assert info.value.code == 2
    assert "QLambdaConfig.gamma must be in [0.0, 1.0], got 2.0" in capsys.readouterr().err


def test_int_flags_take_whole_numbers_as_the_readme_writes_them(capsys):
    config, _ = parse("--total-env-steps", "1e5", "--seed", "2.5e1", "--qlambda.gamma", "0.9")
    assert config.total_env_steps == 100_000 and type(config.total_env_steps) is int
    assert config.seed == 25
    assert parse("--total-env-steps", "1_000")[0].total_env_steps == 1000
    for text, message in (("1.5", "'1.5' is not a whole number"), ("1e400", "not a whole"),
                          ("ten", "'ten' is not an integer")):  # fmt: skip
        with pytest.raises(SystemExit) as info:
            parse("--total-env-steps", text)
        assert info.value.code == 2
        assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--max-wall-seconds", "nan"], "ToyRunConfig.max_wall_seconds must be finite"),
        (["--max-wall-seconds", "inf"], "ToyRunConfig.max_wall_seconds must be finite"),
        (["--qlambda.learning-rate", "inf"], "QLambdaConfig.learning_rate must be finite"),
        (["--qlambda.learning-rate", "nan"], "QLambdaConfig.learning_rate must be finite"),
        (["--agent", "ppo", "--ppo.entropy-cost", "inf"], "PPOConfig.entropy_cost must be finite"),
        (["--agent", "ppo", "--ppo.lambda_", "nan"], "PPOConfig.lambda_ must be finite"),
    ],
)
def test_non_finite_numbers_are_refused_naming_the_field(capsys, toy_train, flags, message):
    try:
        status = run_cli(ToyRunConfig, toy_train, flags)
    except SystemExit as e:  # a nested config's error: tyro's box, status 2
        status = e.code
    assert status == 2
    assert message in " ".join(capsys.readouterr().err.split()).replace("│ ", "")


def test_a_refused_run_is_one_line_too(tmp_path, capsys, toy_train):
    args = [
        "--runs-root",
        str(tmp_path),
        "--run-name",
        "x",
        "--no-progress",
        "--total-env-steps",
        "20",
    ]
    assert run_cli(ToyRunConfig, toy_train, args) == 0
    out = capsys.readouterr().out
    assert out.startswith("toy: qlambda on catch: 20 env steps,") and f"run {tmp_path / 'x'}" in out
    assert run_cli(ToyRunConfig, toy_train, args) == 2
    assert "names an existing run" in capsys.readouterr().err
    with open(os.path.join(tmp_path, "x", "config.json")) as f:
        assert json.load(f)["total_env_steps"] == 20


def test_parsing_imports_no_jax():
    code = (
        "import sys\nfrom podracer.runs.cli import parse_cli\n"
        "from podracer.runs.config import RunConfig\n"
        "parse_cli(RunConfig, ['--agent', 'muzero', '--env', 'gymnax:CartPole-v1'])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('jax', 'flax', 'orbax')))"
    )
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == "[]"


def test_help_lists_only_the_chosen_agent_s_flags(capsys):
    with pytest.raises(SystemExit):
        parse("--agent", "ppo", "--help")
    out = capsys.readouterr().out
    assert "--ppo.learning-rate" in out and "--impala." not in out and "--qlambda." not in out
    assert "another agent's: --agent NAME --help" in out
    with pytest.raises(SystemExit):
        parse("--help")  # the default agent's
    out = capsys.readouterr().out
    assert "--qlambda.learning-rate" in out and "--ppo." not in out


def test_help_groups_the_runtime_flags_in_boxes_and_the_flags_keep_their_names(capsys):
    with pytest.raises(SystemExit):
        parse("--help")
    out = capsys.readouterr().out
    boxes, title = {}, None  # box title -> its text (tyro draws boxes on a terminal only)
    for line in out.splitlines():
        header = re.fullmatch(r"[\s╭─╮]*([a-z]+ options)[\s─╮]*", line)
        if header:
            title = header.group(1)
            boxes[title] = ""
        elif title:
            boxes[title] += line + "\n"
    assert {"run options", "layout options", "logging options", "evaluation options",
            "cluster options"} <= set(boxes)  # fmt: skip
    assert "populations options" not in boxes  # the toy runtime has no --num-seeds nor --sweep
    assert "--seed" in boxes["run options"] and "--num-envs" in boxes["layout options"]
    assert "--num-envs" not in boxes["run options"] and "--wandb-mode" in boxes["logging options"]
    assert "--eval-interval" in boxes["evaluation options"]
    # a field's comment still shows as its help (tyro reads it from the class's source)
    assert "the toy runtime's only size" in boxes["layout options"]
    config, _ = parse("--seed", "3", "--num-envs", "8", "--log-interval", "1e3",
                      "--eval-episodes", "2", "--distributed")  # fmt: skip
    assert (config.seed, config.num_envs, config.log_interval) == (3, 8, 1000)
    assert config.eval_episodes == 2 and config.cluster.distributed
    # A nested config's check is the run's one line too (tyro would draw it in a box).
    with pytest.raises(ValueError, match=r"DistributedConfig.process_id must be in \[0, 2\)"):
        parse("--num-processes", "2", "--process-id", "5")
    assert isinstance(config, ToyRunConfig) and config.agent_config is not None


def test_another_agent_s_flag_is_refused_not_ignored(capsys):
    with pytest.raises(SystemExit) as exit_info:
        parse("--agent", "ppo", "--impala.learning-rate", "3e-4")
    assert exit_info.value.code == 2
    assert "--impala.learning-rate" in capsys.readouterr().err
    config, _ = parse("--agent", "impala", "--impala.learning-rate", "3e-4")
    assert config.agent_config.learning_rate == 3e-4


@pytest.mark.parametrize("flag", ["--preset", "--config"])
def test_a_flag_a_resume_would_not_apply_is_refused_in_one_line(flag):
    with pytest.raises(ConfigError, match=f"^{flag} does not apply to --resume: a resume "):
        parse("--run-name", "x", "--resume", flag, "classic")


@pytest.mark.parametrize(
    "flag, hint",
    [
        ("--ppo.lr", "did you mean --ppo.learning-rate?"),  # by initials (tyro: --ppo.anneal-lr)
        ("--ppo.lerning-rate=3e-4", "did you mean --ppo.learning-rate?"),  # by spelling
        ("--ppo.zzz", "`--agent ppo --help` lists them"),
    ],
)
def test_an_unknown_agent_flag_is_one_line_naming_what_it_may_mean(capsys, flag, hint):
    with pytest.raises(ConfigError) as error:
        parse("--agent", "ppo", flag, "1")
    assert str(error.value) == f"{flag.split('=')[0]} is not a flag of PPOConfig: {hint}"
    config, _ = parse("--agent", "ppo", "--ppo.no-anneal-lr", "--ppo.learning_rate", "1e-3")
    assert config.agent_config.learning_rate == 1e-3 and not config.agent_config.anneal_lr


@pytest.mark.parametrize(
    "agent, flag, now",
    [("ppo", "--ppo.gae-lambda", "--ppo.lambda_"),
     ("impala", "--impala.baseline-cost", "--impala.value-cost")],
)  # fmt: skip
def test_a_renamed_agent_flag_names_its_present_name(agent, flag, now):
    with pytest.raises(ConfigError, match=f"^{flag} is now {now}$"):
        parse("--agent", agent, flag, "0.5")
    config, _ = parse("--agent", agent, now, "0.5")
    assert 0.5 in dataclasses.astuple(config.agent_config)


def test_a_program_too_big_for_the_device_is_one_line_naming_the_run_s_sizes(tmp_path, capsys):
    # XLA's own RESOURCE_EXHAUSTED from a real allocation (4 TiB), as a TPU raises it at a
    # program's first call when its temporaries exceed the chip's memory.
    import jax
    import jax.numpy as jnp

    def too_big(config):
        with Run.open(config, "toy"):
            return jax.jit(lambda: jnp.ones((2**40,), jnp.float32))()

    args = ["--runs-root", str(tmp_path), "--run-name", "x", "--no-progress", "--num-envs", "8"]
    assert run_cli(ToyRunConfig, too_big, args) == 1
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err
    assert err.startswith("toy: error: out of device memory (Out of memory allocating ")
    assert "num_envs 8" in err and "fewer members or envs" in err
