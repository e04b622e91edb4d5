"""Run loading, grouping, the interpolation grid and the seed statistics of the plot tool.

Every test writes real run directories (config.json + metrics.jsonl) into tmp_path.
"""

import json
import math

import numpy as np
import pytest

pytest.importorskip("rliable", reason="the plot extra: podracer-runs[plot]")
pytest.importorskip("matplotlib", reason="the plot extra: podracer-runs[plot]")

from podracer.runs.tools import aggregate as agg
from podracer.runs.tools import records


def write_run(root, name, rows, seed=0, lr=1e-3, env="gymnax:CartPole-v1", tail="", **config):
    """A run dir `root/name` with these metric rows; `tail` is appended unterminated."""
    path = root / name
    path.mkdir(parents=True)
    full = {
        "env": env,
        "agent": "ppo",
        "seed": seed,
        "total_env_steps": 1000,
        "run_name": name,
        "runs_root": str(root),
        "eval_interval": 10,
        "progress": True,
        "cluster": {"num_processes": 1},
        "agent_config": {"learning_rate": lr, "gamma": 0.99},
        **config,
    }
    (path / "config.json").write_text(json.dumps(full))
    (path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows) + tail)
    return path


def make_rows(steps, returns, elapsed=None, sps=100.0, **columns):
    """Rows at `steps` with these returns (NaN allowed) and wall seconds (default steps/10)."""
    elapsed = [s / 10 for s in steps] if elapsed is None else elapsed
    rows = []
    for i, (s, r, t) in enumerate(zip(steps, returns, elapsed, strict=True)):
        row = {"env_steps": s, "time": 1.7e9 + t, "timing/elapsed": t}
        row.update({"charts/episodic_return": r, "charts/SPS": sps, "losses/total": 1.0 / (i + 1)})
        row.update({k: v[i] for k, v in columns.items()})
        rows.append(row)
    return rows


# --- Reading ---------------------------------------------------------------------------


def test_torn_last_line_is_ignored(tmp_path):
    rows = make_rows([10, 20], [1.0, float("nan")])
    path = write_run(tmp_path, "r", rows, tail='{"env_steps": 30, "charts/episodic_ret')
    [run] = records.load_runs([path])
    assert [r["env_steps"] for r in run.rows] == [10, 20]
    assert math.isnan(run.rows[1]["charts/episodic_return"])  # the NaN token reads back
    # A terminated last line that is not JSON is torn too; one in the middle is not.
    (path / "metrics.jsonl").write_text(json.dumps(rows[0]) + "\n{bad\n")
    assert len(records.read_metrics(path / "metrics.jsonl")) == 1
    (path / "metrics.jsonl").write_text("{bad\n" + json.dumps(rows[0]) + "\n")
    with pytest.raises(records.RunError, match=r"metrics.jsonl:1: not a JSON object"):
        records.read_metrics(path / "metrics.jsonl")


def test_multi_seed_run_expands_to_its_seeds_and_folders_to_their_runs(tmp_path):
    rows = []
    for step in (10, 20, 30):
        for index in range(3):
            rows.append({"env_steps": step, "seed": index, "charts/episodic_return": 100 * index})
    write_run(tmp_path / "runs", "multi", rows, seed=7, num_seeds=3)
    write_run(tmp_path / "runs", "single", make_rows([10, 20], [1.0, 2.0]), seed=3, lr=0.1)
    (tmp_path / "runs" / "not-a-run").mkdir()
    runs = records.load_runs([tmp_path / "runs"])  # the folder stands for both runs
    assert [(r.path.rsplit("/", 1)[1], r.seed, r.index) for r in runs] == [
        ("multi", 7, 0),
        ("multi", 8, 1),
        ("multi", 9, 2),
        ("single", 3, None),
    ]
    for run in runs[:3]:
        assert len(run.rows) == 3
        assert {r["charts/episodic_return"] for r in run.rows} == {100 * run.index}
    assert len(records.load_runs([tmp_path / "runs", tmp_path / "runs" / "single"])) == 4  # once
    [group, single] = records.group_runs(runs)  # the multi-seed run dir is a group of 3 seeds
    assert [r.index for r in group.seeds] == [0, 1, 2] and len(single.seeds) == 1


def test_paths_that_are_not_runs_raise(tmp_path):
    with pytest.raises(records.RunError, match="no such run directory"):
        records.load_runs([tmp_path / "missing"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(records.RunError, match=r"not a run directory \(no config.json\)"):
        records.load_runs([tmp_path / "empty"])
    path = write_run(tmp_path, "fresh", [])
    with pytest.raises(records.RunError, match="has no metrics"):
        records.load_runs([path])
    (path / "metrics.jsonl").unlink()
    with pytest.raises(records.RunError, match="has no metrics"):
        records.load_runs([path])


# --- Grouping --------------------------------------------------------------------------


def test_seeds_of_one_config_group_and_a_different_lr_separates(tmp_path):
    rows = make_rows([10, 20], [1.0, 2.0])
    # Seeds differ in the seed and bookkeeping only (name, intervals, budget, cluster).
    write_run(tmp_path, "a0", rows, seed=0)
    write_run(tmp_path, "a1", rows, seed=1, eval_interval=5, total_env_steps=9, resume=True)
    write_run(tmp_path, "a2", rows, seed=2, cluster={"num_processes": 2}, wandb_project="x")
    write_run(tmp_path, "b0", rows, seed=0, lr=3e-4)
    write_run(tmp_path, "c0", rows, seed=0, env="catch")
    groups = records.group_runs(records.load_runs([tmp_path]))
    assert [len(g.seeds) for g in groups] == [3, 1, 1]
    assert [r.seed for r in groups[0].seeds] == [0, 1, 2]
    assert [g.label for g in groups] == [
        "ppo on gymnax:CartPole-v1 (learning_rate=0.001)",
        "ppo on gymnax:CartPole-v1 (learning_rate=0.0003)",
        "ppo on catch",  # alone with its env and agent: no fields needed
    ]
    relabelled = records.group_runs(records.load_runs([tmp_path]), labels=["A", "B", "C"])
    assert [g.label for g in relabelled] == ["A", "B", "C"]
    with pytest.raises(records.RunError, match="2 labels given for 3 groups"):
        records.group_runs(records.load_runs([tmp_path]), labels=["A", "B"])


# --- Series, grid, interpolation -------------------------------------------------------


def test_series_skips_nan_rows_and_reads_wall_time(tmp_path):
    rows = make_rows([10, 20, 30, 40], [float("nan"), 2.0, float("nan"), 4.0], [5, 6, 9, 12])
    [run] = records.load_runs([write_run(tmp_path, "r", rows)])
    x, y = agg.series(run, "charts/episodic_return")
    np.testing.assert_array_equal(x, [20, 40])
    np.testing.assert_array_equal(y, [2.0, 4.0])
    x, y = agg.series(run, "charts/episodic_return", x="timing/elapsed")
    np.testing.assert_array_equal(x, [6, 12])
    assert len(agg.series(run, "eval/episodic_return")[0]) == 0
    with pytest.raises(ValueError, match="x must be"):
        agg.series(run, "charts/episodic_return", x="time")


def test_common_grid_covers_what_every_seed_covers():
    a, b = np.array([0.0, 10, 20, 30]), np.array([5.0, 15, 25, 35])
    np.testing.assert_allclose(agg.common_grid([a, b], num_points=6), [5, 10, 15, 20, 25, 30])
    np.testing.assert_array_equal(agg.common_grid([b]), b)  # one seed: its own points
    np.testing.assert_array_equal(agg.common_grid([a, a.copy()], num_points=4), a)  # shared
    np.testing.assert_allclose(agg.common_grid([a, a], num_points=3), [0, 15, 30])  # too many
    np.testing.assert_array_equal(agg.common_grid([a, np.array([30.0])]), [30.0])
    # No shared range (a seed starting after another ended): one point between them, at
    # which each seed contributes its nearest value.
    np.testing.assert_array_equal(agg.common_grid([a, np.array([40.0, 50.0])]), [35.0])


def test_seeds_logged_at_different_steps_are_interpolated_before_the_mean(tmp_path):
    # Seed 0 logs y = x at 0, 10, 20, 30; seed 1 logs y = x + 10 at 5, 15, 25, 35.
    xa, xb = [0, 10, 20, 30], [5, 15, 25, 35]
    write_run(tmp_path, "s0", make_rows(xa, [float(x) for x in xa]), seed=0)
    write_run(tmp_path, "s1", make_rows(xb, [x + 10.0 for x in xb]), seed=1)
    [group] = records.group_runs(records.load_runs([tmp_path]))
    curve = agg.group_curve(group, num_points=6, reps=200)
    np.testing.assert_allclose(curve.x, [5, 10, 15, 20, 25, 30])
    np.testing.assert_allclose(curve.seeds, [curve.x, curve.x + 10])
    np.testing.assert_allclose(curve.point, curve.x + 5)
    assert np.all(curve.lower <= curve.point) and np.all(curve.point <= curve.upper)
    # Against wall seconds (steps / 10 here) the same values lie on a scaled grid.
    wall = agg.group_curve(group, x="timing/elapsed", num_points=6, reps=200)
    np.testing.assert_allclose(wall.x, curve.x / 10)
    np.testing.assert_allclose(wall.point, curve.point)
    assert agg.group_curve(group, "eval/episodic_return") is None


def test_one_seed_curve_has_no_band(tmp_path):
    write_run(tmp_path, "s0", make_rows([10, 20, 30], [1.0, float("nan"), 3.0]))
    [group] = records.group_runs(records.load_runs([tmp_path]))
    curve = agg.group_curve(group)
    np.testing.assert_array_equal(curve.x, [10, 30])
    np.testing.assert_array_equal(curve.point, [1.0, 3.0])
    assert curve.lower is None and curve.upper is None


# --- Aggregates and intervals ----------------------------------------------------------


def test_iqm_of_a_known_array():
    # 8 values: cut 2 at each end, mean of 3, 4, 5, 6.
    assert agg.iqm(np.array([7, 1, 100, 3, 2, 6, 5, 4])) == 4.5
    # 5 values: int(1.25) = 1 cut at each end, mean of 2, 3, 10.
    assert agg.iqm(np.array([1.0, 2, 3, 10, 1000])) == 5.0
    from rliable import metrics

    scores = np.random.default_rng(0).normal(size=(7, 4))
    per_column = [metrics.aggregate_iqm(scores[:, [g]]) for g in range(4)]
    np.testing.assert_allclose(agg.iqm(scores), per_column)


@pytest.mark.parametrize("n", range(1, 13))
def test_iqm_is_the_sorted_middle_half_s_mean_for_every_number_of_seeds(n):
    def by_hand(scores):  # what `iqm` computed before it was scipy's trim_mean
        scores = np.sort(np.asarray(scores, float), axis=0)
        cut = int(0.25 * len(scores))
        return np.mean(scores[cut : len(scores) - cut], axis=0)

    rng = np.random.default_rng(n)
    for scores in (rng.normal(size=n), rng.normal(size=(n, 5)), rng.integers(0, 3, (n, 3))):
        np.testing.assert_allclose(agg.iqm(scores), by_hand(scores), rtol=1e-12)
        assert np.shape(agg.iqm(scores)) == np.shape(scores)[1:]


def test_bootstrap_interval_contains_the_estimate_shrinks_with_seeds_and_repeats():
    rng = np.random.default_rng(1)
    widths = {}
    for n in (5, 80):
        scores = rng.normal(100.0, 10.0, size=n)
        for name, reference in (("mean", np.mean(scores)), ("iqm", agg.iqm(scores))):
            point, lower, upper = agg.interval_estimate(scores, name, reps=500, seed=3)
            assert point == pytest.approx(reference)
            assert lower < point < upper
            widths[n, name] = upper - lower
    for name in ("mean", "iqm"):
        assert widths[80, name] < widths[5, name] / 2  # ~ 1/sqrt(n): 4x narrower
    np.random.seed(123)  # noqa: NPY002
    before = np.random.get_state()[1].copy()  # noqa: NPY002
    scores = rng.normal(size=6)
    first = agg.interval_estimate(scores, "mean", reps=300, seed=5)
    assert first == agg.interval_estimate(scores, "mean", reps=300, seed=5)
    assert first != agg.interval_estimate(scores, "mean", reps=300, seed=6)
    np.testing.assert_array_equal(np.random.get_state()[1], before)  # noqa: NPY002
    point, lower, upper = agg.interval_estimate(np.array([4.0]))
    assert point == 4.0 and math.isnan(lower) and math.isnan(upper)


def test_curve_intervals_are_per_point():
    scores = np.random.default_rng(2).normal(size=(6, 5)) + np.arange(5)
    point, lower, upper = agg.interval_estimate(scores, "iqm", reps=400)
    np.testing.assert_allclose(point, agg.iqm(scores))
    assert point.shape == lower.shape == upper.shape == (5,)
    assert np.all(lower <= point) and np.all(point <= upper)


# --- Summaries -------------------------------------------------------------------------


def test_final_value_and_first_reaching_by_hand():
    steps = np.arange(0.0, 101, 10)  # 0, 10, ..., 100
    assert agg.final_value(steps, steps, 0.1) == 95.0  # steps 90, 100
    assert agg.final_value(steps, steps, 0.25) == 90.0  # 80, 90, 100
    assert agg.final_value(steps[:1], steps[:1], 0.1) == 0.0
    values = np.array([0.0, 3, 7, 5, 9])
    seconds = np.array([1.0, 2, 4, 8, 16])
    assert agg.first_reaching(steps[:5], seconds, values, 6.0) == (20.0, 4.0)
    assert agg.first_reaching(steps[:5], seconds, values, 7.0) == (20.0, 4.0)  # >=
    assert agg.first_reaching(steps[:5], seconds, values, 10.0) is None


def test_summary_by_hand(tmp_path):
    steps = [100, 200, 300, 400, 500, 600, 700, 800, 900, 1000]
    # Seed 0 reaches 50 at step 300 (30 s), seed 1 at step 500 (50 s), seed 2 never.
    r0 = [10, 20, 50, 60, 70, 80, 90, 90, 90, 100]
    r1 = [0, 10, 20, 40, 55, 60, 60, 70, 80, 80]
    r2 = [float("nan"), 0, 0, 10, 10, 10, 20, 20, 30, 40]
    # Wall seconds steps / 10 (seeds 0, 1) and / 40 (seed 2); charts/SPS is the rate since
    # the previous row, and the first row fell within the compile (no rate): SPS after
    # compile is 10 and 40.
    for seed, (returns, per) in enumerate(((r0, 10), (r1, 10), (r2, 40))):
        elapsed = [s / per for s in steps]
        rows = make_rows(steps, returns, elapsed, sps=float(per))
        rows[0]["charts/SPS"] = float("nan")
        write_run(tmp_path, f"s{seed}", rows, seed=seed)
    [group] = records.group_runs(records.load_runs([tmp_path]))
    s = agg.summarize(group, target=50.0, final_fraction=0.2, reps=500)
    # Last 20% of steps 100..1000: steps >= 820, i.e. 900 and 1000.
    assert s.final == (95.0, 80.0, 35.0)
    assert s.num_seeds == 3
    assert s.final_mean == pytest.approx(70.0)
    assert s.final_iqm == pytest.approx(70.0)  # 3 values: none cut
    assert s.final_mean_ci[0] < 70.0 < s.final_mean_ci[1]
    assert s.reached == 2
    assert s.steps_to_target == 400.0  # mean of 300 and 500
    assert s.seconds_to_target == 40.0
    assert s.sps == pytest.approx(20.0)  # mean of 10, 10 and 40
    assert agg.summarize(group).target is None
    table = agg.format_table([s])
    caption, header, row = table.splitlines()
    assert "last 20% of env steps" in caption
    assert row.startswith("ppo on gymnax:CartPole-v1  3  ")
    assert "400 (2/3)" in row
    assert header.index("seeds") == row.index("3  ")


def test_sps_leaves_out_a_resumed_runs_restart_as_the_summary_line_does(tmp_path):
    # 500 steps at 10 a second, then a restart of 60 s (start-up, a compile), then 500
    # more at 20 a second: the run's loop made 1000 steps in 75 s; its first row's rate
    # is since the compile. By first and last row it would be 900 / 125.
    steps = [100, 200, 300, 400, 500, 600, 700, 800, 900, 1000]
    elapsed = [10, 20, 30, 40, 50, 115, 120, 125, 130, 135]
    rows = make_rows(steps, [1.0] * 10, elapsed)
    for row in rows:
        row["charts/SPS"] = 10.0 if row["env_steps"] <= 500 else 20.0
    [group] = records.group_runs(records.load_runs([write_run(tmp_path, "r", rows)]))
    assert agg.summarize(group).sps == pytest.approx(1000 / 75)
    for row in rows:  # rows without rates (another tool's): from the first row to the last
        del row["charts/SPS"]
    [group] = records.group_runs(records.load_runs([write_run(tmp_path / "b", "r", rows)]))
    assert agg.summarize(group).sps == pytest.approx(900 / 125)


def test_numbers_print_without_exponents_where_a_reader_expects_none():
    from podracer.runs.tools.aggregate import format_number

    assert [format_number(x) for x in (2490.0, 0.87129, 84.8, 0.0, -1.0, 2e-4, math.nan)] == [
        "2,490.0", "0.8713", "84.8", "0", "-1", "2.00e-04", "-",
    ]  # fmt: skip
