"""The `podracer plot` command on real run directories written into tmp_path."""

import csv
import json
import os
import pathlib
import re
import subprocess
import sys

import pytest

pytest.importorskip("rliable", reason="the plot extra: podracer-runs[plot]")
pytest.importorskip("matplotlib", reason="the plot extra: podracer-runs[plot]")

from podracer.runs.tools import plot

TOOLS = pathlib.Path(plot.__file__).parent


def write_run(root, name, steps, returns, seed=0, lr=1e-3, **columns):
    """A one-seed run dir with returns at steps, wall seconds steps / 10 (SPS 10)."""
    path = root / name
    path.mkdir(parents=True)
    config = {"env": "gymnax:CartPole-v1", "agent": "ppo", "seed": seed, "run_name": name}
    config.update({"total_env_steps": steps[-1], "agent_config": {"learning_rate": lr}})
    (path / "config.json").write_text(json.dumps(config))
    with open(path / "metrics.jsonl", "w") as f:
        for i, (s, r) in enumerate(zip(steps, returns, strict=True)):
            row = {"env_steps": s, "time": 1.7e9 + s / 10, "timing/elapsed": s / 10}
            row.update({"charts/episodic_return": r, "charts/SPS": 10.0, "losses/total": 1 / s})
            row.update({k: v[i] for k, v in columns.items() if v[i] is not None})
            f.write(json.dumps(row) + "\n")
    return path


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


STEPS = [100, 200, 300, 400, 500, 600, 700, 800, 900, 1000]


@pytest.fixture
def runs(tmp_path):
    """Three seeds of lr 1e-3 (final returns 95, 80, 35) and one seed of lr 3e-4."""
    root = tmp_path / "runs"
    write_run(root, "a0", STEPS, [10, 20, 50, 60, 70, 80, 90, 90, 90, 100], seed=0)
    write_run(root, "a1", STEPS, [0, 10, 20, 40, 55, 60, 60, 70, 80, 80], seed=1)
    write_run(root, "a2", STEPS, [float("nan"), 0, 0, 10, 10, 10, 20, 20, 30, 40], seed=2)
    evals = [None, None, None, None, 5.0, None, None, None, None, 7.0]
    write_run(root, "b0", STEPS, [5] * 10, lr=3e-4, **{"eval/episodic_return": evals})
    return root


def test_main_writes_pngs_of_the_expected_size_and_the_summary_csv(runs, tmp_path, capsys):
    import matplotlib.image

    out = tmp_path / "out"
    argv = [str(runs), "--out", str(out), "--target", "50", "--reps", "300", "--seeds"]
    assert plot.main([*argv, "--final-fraction", "0.2", "--metric", "charts/episodic_return"]) == 0
    printed = capsys.readouterr().out
    png = out / "charts_episodic_return.png"
    assert f"wrote {png}" in printed and f"wrote {out / 'summary.csv'}" in printed
    assert re.search(r"^ppo on gymnax:CartPole-v1 \(learning_rate=0.001\) +3 +70 \[", printed, re.M)
    image = matplotlib.image.imread(png)
    assert image.shape == (450, 1200, 4)  # FIGSIZE at DPI, RGBA
    assert image[..., :3].std() > 0.05  # something was drawn
    a, b = read_csv(out / "summary.csv")
    assert a["label"] == "ppo on gymnax:CartPole-v1 (learning_rate=0.001)"
    assert b["label"] == "ppo on gymnax:CartPole-v1 (learning_rate=0.0003)"
    assert a["metric"] == "charts/episodic_return"
    assert int(a["num_seeds"]) == 3 and int(b["num_seeds"]) == 1
    # Finals over steps >= 820 are 95, 80 and 35; first >= 50 at steps 300 and 500.
    assert float(a["final_mean"]) == pytest.approx(70.0)
    assert float(a["final_iqm"]) == pytest.approx(70.0)
    assert float(a["final_mean_lo"]) < 70.0 < float(a["final_mean_hi"])
    assert int(a["reached"]) == 2 and float(a["steps_to_target"]) == 400.0
    # SPS after compile: first row to last, steps / (steps / 10) = 10 (not charts/SPS).
    assert float(a["seconds_to_target"]) == 40.0 and float(a["sps"]) == pytest.approx(10.0)
    assert float(b["final_mean"]) == 5.0 and b["final_mean_lo"] == "nan"  # one seed
    assert int(b["reached"]) == 0 and b["steps_to_target"] == "nan"
    assert a["runs"] == "a0;a1;a2" and a["finals"] == "95;80;35"  # each seed's, in order


def test_several_metrics_labels_and_iqm(runs, tmp_path, capsys):
    out = tmp_path / "out"
    argv = [str(runs), "--out", str(out), "--reps", "200", "--aggregate", "iqm"]
    argv += ["--metric", "eval/episodic_return", "--metric", "losses/total"]
    assert plot.main([*argv, "--labels", "fast", "slow"]) == 0
    assert sorted(os.listdir(out)) == [
        "eval_episodic_return.png",
        "losses_total.png",
        "summary.csv",
    ]
    fast, slow = read_csv(out / "summary.csv")
    assert (fast["label"], slow["label"]) == ("fast", "slow")
    assert fast["metric"] == "eval/episodic_return"  # the table summarises the first metric
    assert int(fast["num_seeds"]) == 0  # only b0 evaluated
    assert float(slow["final_mean"]) == 7.0  # the last 10% holds only the last eval
    assert "fast" in capsys.readouterr().out


def test_one_run_writes_into_its_own_plots_folder(runs, capsys):
    result = plot.plot_runs([runs / "a1"], reps=100)
    assert result.pngs == (str(runs / "a1" / "plots" / "charts_episodic_return.png"),)
    assert result.csv == str(runs / "a1" / "plots" / "summary.csv")
    assert [len(g.seeds) for g in result.groups] == [1]
    assert result.summaries[0].final == (80.0,)


@pytest.mark.parametrize(
    "case, message",
    [
        ("missing", "missing: no such run directory"),
        ("empty", "is not a run directory (no config.json) and holds none"),
        ("no-metrics", "has no metrics (metrics.jsonl missing or empty)"),
        (
            "metric",
            "unknown metric 'losses/nope'; the runs log: charts/SPS, charts/episodic_return",
        ),
        ("labels", "1 labels given for 2 groups"),
    ],
)
def test_errors_exit_2_with_one_line(runs, tmp_path, capsys, case, message):
    argv = {
        "missing": [str(tmp_path / "missing")],
        "empty": [str(tmp_path / "empty")],
        "no-metrics": [str(runs / "a0"), str(tmp_path / "fresh")],
        "metric": [str(runs), "--metric", "losses/nope"],
        "labels": [str(runs), "--labels", "one"],
    }[case]
    (tmp_path / "fresh").mkdir()
    (tmp_path / "fresh" / "config.json").write_text('{"env": "catch", "agent": "ppo"}')
    (tmp_path / "empty").mkdir()
    assert plot.main([*argv, "--out", str(tmp_path / "out")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    assert captured.err.startswith("podracer plot: error: ") and message in captured.err
    if case == "metric":
        assert "eval/episodic_return, losses/total, timing/elapsed" in captured.err
    assert not (tmp_path / "out").exists()  # nothing written before the inputs check out


def test_an_out_that_is_a_file_is_one_line_and_left_as_it_was(runs, tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("a user's file")
    assert plot.main([str(runs), "--out", str(tmp_path / "notes.txt")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "notes.txt' is a file, not a folder" in err
    assert (tmp_path / "notes.txt").read_text() == "a user's file"


def test_the_tools_import_without_jax_and_defer_matplotlib(runs, tmp_path):
    """Loaded as a package of their own, with `jax` made unimportable."""
    script = f"""
import sys, types
sys.modules["jax"] = None  # import jax -> ImportError
package = types.ModuleType("tools")
package.__path__ = [{str(TOOLS)!r}]
sys.modules["tools"] = package
import tools.plot
assert "matplotlib" not in sys.modules and "rliable" not in sys.modules
sys.exit(tools.plot.main([{str(runs)!r}, "--out", {str(tmp_path / "out")!r}, "--reps", "50"]))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "out" / "charts_episodic_return.png").exists()
