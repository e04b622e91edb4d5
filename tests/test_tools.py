"""Tools on runs of both runtimes: evaluate a checkpoint on the other runtime's env kind,
start one runtime from the other's run, plot seeds with bands and a summary table."""

import csv
import json

import pytest

from podracer.runs import parse_cli
from podracer.runs.tools import evaluate
from podracer.runs.tools import plot

pytestmark = pytest.mark.slow
RANDOM_CARTPOLE = 22  # a random policy's mean return on CartPole-v1


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A short Anakin PPO run on gymnax CartPole and a Sebulba IMPALA run on envpool's."""
    from podracer.anakin import AnakinConfig
    from podracer.anakin import train as anakin
    from podracer.sebulba import SebulbaConfig
    from podracer.sebulba import train as sebulba

    root = str(tmp_path_factory.mktemp("runs"))
    flags = ["--runs-root", root, "--no-progress", "--total-env-steps", "100000"]
    args = ["--env", "gymnax:CartPole-v1", "--agent", "ppo", "--run-name", "anakin"]
    args += ["--num-seeds", "2"]
    config, _ = parse_cli(AnakinConfig, [*args, *flags])
    anakin(config)
    config, _ = parse_cli(SebulbaConfig, ["--run-name", "sebulba", *flags])
    sebulba(config)
    return root


def test_an_anakin_checkpoint_evaluates_every_seed_on_envpool(runs, capsys):
    # A 2-seed run: each seed evaluated, labelled with its index and training seed.
    records = evaluate.evaluate("anakin", env="envpool:CartPole-v1", episodes=16, runs_root=runs)
    assert [(r["member"], r["seed"]) for r in records] == [(0, 0), (1, 1)]
    for r in records:
        assert r["episodes"] == 16 and r["env"] == "envpool:CartPole-v1" and r["eval_seed"] == 0
        assert r["mean"] > 4 * RANDOM_CARTPOLE, r
    assert [r["source"].rsplit(":", 1)[1] for r in records] == ["0", "1"]
    with open(f"{runs}/anakin/eval.json") as f:
        assert [r["mean"] for r in json.load(f)[-2:]] == [r["mean"] for r in records]
    # `:K` names one member; the command line labels each line.
    (one,) = evaluate.evaluate("anakin@latest:1", env="envpool:CartPole-v1", episodes=16,
                               runs_root=runs)  # fmt: skip
    assert one["member"] == 1 and one["mean"] == records[1]["mean"]
    assert evaluate.main(["anakin", "--episodes", "4", "--runs-root", runs]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("anakin@") and ":0 (seed 0) on gymnax:CartPole-v1" in lines[0]
    assert ":1 (seed 1) on gymnax:CartPole-v1" in lines[1]
    assert lines[2].startswith("2 members: mean of their returns ")


def test_a_sebulba_checkpoint_evaluates_on_gymnax(runs):
    (record,) = evaluate.evaluate("sebulba", env="gymnax:CartPole-v1", episodes=16, runs_root=runs)
    assert record["mean"] > 3 * RANDOM_CARTPOLE, record
    assert "member" not in record and record["seed"] == 0


def test_init_from_another_runtimes_run_starts_above_random(runs):
    from podracer.sebulba import SebulbaConfig
    from podracer.sebulba import train as sebulba

    config, _ = parse_cli(SebulbaConfig, [
        "--agent", "ppo", "--init-from", f"{runs}/anakin@latest:1", "--run-name", "warm",
        "--runs-root", runs, "--no-progress", "--total-env-steps", "512", "--eval-interval", "512",
    ])  # fmt: skip
    result = sebulba(config)  # one update, then a greedy evaluation
    assert result.history[0]["eval/episodic_return"] > 4 * RANDOM_CARTPOLE, result.history


@pytest.mark.parametrize("runtime", ["anakin", "sebulba"])
def test_init_from_params_that_do_not_fit_is_one_line_before_any_compile(runs, runtime, capsys):
    import importlib
    import os

    import jax.monitoring

    main = importlib.import_module(f"podracer.{runtime}.cli").main
    compiled = []

    def listen(event, _, **kw):
        if event == "/jax/core/compile/backend_compile_duration":
            compiled.append(kw.get("fun_name"))

    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        code = main(["--env", f"{'gymnax' if runtime == 'anakin' else 'envpool'}:CartPole-v1",
                     "--agent", "ppo", "--ppo.hidden-sizes", "16", "--init-from",
                     f"{runs}/anakin", "--run-name", "narrow", "--runs-root", runs])  # fmt: skip
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    lines = capsys.readouterr().err.strip().splitlines()
    (line,) = [line for line in lines if not line.startswith(f"{runtime}: preset")]
    assert code == 2 and "init_from: the saved params do not fit this agent's network" in line
    assert compiled == [] and not os.path.exists(f"{runs}/narrow")


def test_plot_writes_curves_and_a_summary_of_the_seeds(runs, tmp_path):
    assert (
        plot.main([f"{runs}/anakin", f"{runs}/sebulba", "--out", str(tmp_path), "--target", "100"])
        == 0
    )
    pngs = sorted(p.name for p in tmp_path.glob("*.png"))
    assert pngs == ["charts_episodic_return.png"]
    with open(tmp_path / "summary.csv") as f:
        rows = {r["label"]: r for r in csv.DictReader(f)}
    (anakin,) = [r for label, r in rows.items() if "ppo" in label]
    assert int(anakin["num_seeds"]) == 2 and float(anakin["final_mean"]) > 2 * RANDOM_CARTPOLE
