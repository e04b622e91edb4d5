"""Groups of seeds -> curves and summaries, aggregated over seeds.

    Group --group_curve--> Curve: each seed interpolated onto a common grid, mean/IQM + band
    Group --summarize--> Summary: final value, time to a target, SPS

Groups come from `records` (run directories -> seeds -> groups). Uncertainty is
rliable's stratified bootstrap (Agarwal et al., 2021, "Deep RL at the Edge of the
Statistical Precipice"): with runs as the resampled unit and one task, a 95% percentile
interval of the mean or the interquartile mean (IQM) over seeds.

numpy only at import; rliable is imported by the function that needs it.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import math
import os
from collections.abc import Iterator
from collections.abc import Sequence
from typing import Any
from typing import NamedTuple

import numpy as np

from .records import ELAPSED
from .records import RETURN
from .records import SPS
from .records import STEPS
from .records import Group
from .records import RunError
from .records import SeedRun
from .records import number

AGGREGATES = ("mean", "iqm")


class Curve(NamedTuple):
    """A metric of one group against env steps or wall seconds."""

    x: np.ndarray  # [G] the common grid
    point: np.ndarray  # [G] mean or IQM over seeds
    lower: np.ndarray | None  # [G] 95% bootstrap band; None with one seed
    upper: np.ndarray | None  # [G]
    seeds: np.ndarray  # [N, G] each seed interpolated onto x


@dataclasses.dataclass(frozen=True)
class Summary:
    """One group's row of the summary table (NaN where a value does not exist)."""

    label: str
    metric: str
    num_seeds: int  # seeds with at least one value of the metric
    final: tuple[float, ...]  # [N] each seed's mean over the last part of its steps
    final_mean: float
    final_mean_ci: tuple[float, float]
    final_iqm: float
    final_iqm_ci: tuple[float, float]
    final_fraction: float  # the last part of each seed's env steps `final` averages over
    target: float | None
    reached: int  # seeds whose metric reached the target
    steps_to_target: float  # mean env steps to the target over the seeds that reached it
    seconds_to_target: float  # mean wall seconds, likewise
    sps: float  # mean over seeds of each seed's mean charts/SPS
    runs: tuple[str, ...]  # the seeds' names


# --- Series and the common grid ------------------------------------------------------


def _columns(run: SeedRun, metric: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Env steps, wall seconds and values `[R]` of the rows with a finite `metric`.

    Wall seconds are `timing/elapsed`, or `time` since the seed's first row when a run
    did not log elapsed time; NaN when neither is there.
    """
    times = [number(r.get("time")) for r in run.rows]
    t0 = next((t for t in times if t is not None), None)
    steps, seconds, values = [], [], []
    for row, time in zip(run.rows, times, strict=True):
        value = number(row.get(metric))
        if value is None or not math.isfinite(value):
            continue
        wall = number(row.get(ELAPSED))
        if wall is None and t0 is not None and time is not None:
            wall = time - t0
        steps.append(number(row[STEPS]))
        seconds.append(math.nan if wall is None else wall)
        values.append(value)
    return np.array(steps, float), np.array(seconds, float), np.array(values, float)


def _sorted_unique(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Finite points sorted by x; of repeated x the last logged value is kept."""
    keep = np.isfinite(x)
    x, y = x[keep], y[keep]
    order = np.argsort(x, kind="stable")
    x, y = x[order], y[order]
    last = np.append(x[1:] != x[:-1], True) if len(x) else np.zeros(0, bool)
    return x[last], y[last]


def series(run: SeedRun, metric: str, x: str = STEPS) -> tuple[np.ndarray, np.ndarray]:
    """`(x [R], values [R])` of one seed, NaN rows skipped, sorted by x.

    `x` is "env_steps" or "timing/elapsed" (wall seconds).
    """
    steps, seconds, values = _columns(run, metric)
    if x == STEPS:
        return _sorted_unique(steps, values)
    if x == ELAPSED:
        return _sorted_unique(seconds, values)
    raise ValueError(f"x must be {STEPS!r} or {ELAPSED!r}, got {x!r}")


def common_grid(xs: Sequence[np.ndarray], num_points: int = 200) -> np.ndarray:
    """The grid seeds are interpolated onto before aggregating.

    One seed: its own points. Seeds that logged the same points (a multi-seed Anakin
    run), at most `num_points` of them: those. Else `num_points` evenly spaced over the
    range every seed covers, so nothing is extrapolated (a seed that stopped early
    shortens the group's curve).
    """
    xs = [np.asarray(x, float) for x in xs]
    if not xs or any(len(x) == 0 for x in xs):
        raise ValueError("every seed needs at least one point")
    if len(xs) == 1:
        return xs[0]
    if (
        all(len(x) == len(xs[0]) and np.array_equal(x, xs[0]) for x in xs)
        and len(xs[0]) <= num_points
    ):
        return xs[0]
    lo, hi = max(x[0] for x in xs), min(x[-1] for x in xs)
    if lo >= hi:  # no shared range (e.g. one row per seed): one point, each seed's nearest
        return np.array([(lo + hi) / 2])
    return np.linspace(lo, hi, num_points)


def interpolate(x: np.ndarray, y: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """`y [R]` logged at increasing `x [R]`, linearly interpolated onto `grid [G]`."""
    return np.interp(grid, x, y)


# --- Aggregates and bootstrap intervals -----------------------------------------------


def iqm(scores: np.ndarray) -> np.ndarray | float:
    """Interquartile mean over axis 0: the mean of what is left after cutting
    `floor(n / 4)` values at each end (rliable's `aggregate_iqm`, but per column so one
    call serves a whole curve). scipy comes with rliable (the plot extra) and jax.
    """
    from scipy.stats import trim_mean

    return trim_mean(np.asarray(scores, float), 0.25, axis=0)


@contextlib.contextmanager
def _numpy_seed(seed: int) -> Iterator[None]:
    """Seeds numpy's global RNG for the block, then puts its state back.

    rliable 1.2's StratifiedBootstrap draws its indices from `np.random.choice`, not from
    the `random_state` it is given (which arch 7 would also warn about), so a fixed seed
    has to go to the global state.
    """
    state = np.random.get_state()  # noqa: NPY002 (rliable reads the legacy global RNG)
    np.random.seed(seed)  # noqa: NPY002
    try:
        yield
    finally:
        np.random.set_state(state)  # noqa: NPY002


def interval_estimate(
    scores: np.ndarray,
    aggregate: str = "mean",
    reps: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Aggregate over seeds with a stratified bootstrap interval (rliable).

    `scores` is `[N]` (one value per seed) or `[N, G]` (a curve per seed; each point gets
    its own interval). Returns `(point, lower, upper)`, each `[]` or `[G]`; the interval
    is NaN with fewer than two seeds. The same `seed` gives the same interval.
    """
    if aggregate not in AGGREGATES:
        raise ValueError(f"aggregate must be one of {AGGREGATES}, got {aggregate!r}")
    scores = np.asarray(scores, float)
    scalar = scores.ndim == 1
    curves = scores.reshape(scores.shape[0], -1)  # [N, G]
    if curves.shape[0] < 2:
        point = curves.mean(axis=0)
        nan = np.full_like(point, np.nan)
        return (point[0], nan[0], nan[0]) if scalar else (point, nan, nan)
    from rliable import library as rly
    from rliable import metrics

    # [N runs, 1 task, G points]: rliable resamples runs within each (task, point).
    # aggregate_mean reduces runs and tasks, leaving [G]; IQM is cut per point, which
    # with one task is aggregate_iqm of that point's column.
    func = metrics.aggregate_mean if aggregate == "mean" else (lambda s: iqm(s[:, 0, :]))
    with _numpy_seed(seed):
        points, intervals = rly.get_interval_estimates(
            {"scores": curves[:, None, :]}, func, reps=reps, confidence_interval_size=confidence
        )
    point = np.asarray(points["scores"], float).reshape(-1)
    lower, upper = np.asarray(intervals["scores"], float).reshape(2, -1)
    return (point[0], lower[0], upper[0]) if scalar else (point, lower, upper)


def group_curve(
    group: Group,
    metric: str = RETURN,
    x: str = STEPS,
    aggregate: str = "mean",
    num_points: int = 200,
    reps: int = 2000,
    seed: int = 0,
) -> Curve | None:
    """The group's metric against `x`, over the seeds that logged it (None if none did)."""
    data = [series(run, metric, x) for run in group.seeds]
    data = [(sx, sy) for sx, sy in data if len(sx)]
    if not data:
        return None
    try:
        grid = common_grid([sx for sx, _ in data], num_points)
    except ValueError as e:
        raise RunError(f"{group.label}: {metric} against {x}: {e}") from None
    ys = np.stack([interpolate(sx, sy, grid) for sx, sy in data])
    point, lower, upper = interval_estimate(ys, aggregate, reps, seed)
    if len(data) < 2:
        return Curve(grid, point, None, None, ys)
    return Curve(grid, point, lower, upper, ys)


# --- Summaries -----------------------------------------------------------------------


# A bootstrap CI over 2-4 seeds resamples so few values that it is close to their range.
FEW_SEEDS = "CIs over fewer than 5 seeds are little more than the seeds' range"


def final_value(steps: np.ndarray, values: np.ndarray, fraction: float = 0.1) -> float:
    """Mean of the values logged in the last `fraction` of a seed's env steps.

    The window is `[last - fraction * (last - first), last]` over the steps that have a
    value, so it always holds the last value (a sparse eval metric's window may hold only
    that one).
    """
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    if len(steps) == 0:
        return math.nan
    start = steps[-1] - fraction * (steps[-1] - steps[0])
    return float(np.mean(values[steps >= start]))


def first_reaching(
    steps: np.ndarray, seconds: np.ndarray, values: np.ndarray, target: float
) -> tuple[float, float] | None:
    """`(env steps, wall seconds)` of the first row whose value is >= target, or None."""
    hits = np.flatnonzero(values >= target)
    if len(hits) == 0:
        return None
    return float(steps[hits[0]]), float(seconds[hits[0]])


def _sps_after_compile(run: SeedRun) -> float:
    """Env steps per second of the run's loops, the compiles and a resumed run's restarts
    left out: what the command lines' summary calls SPS, over every session. Each row's
    charts/SPS is its rate since the row before (a session's first: since its compile
    ended), so its steps took their count over it; rows without a rate count neither.
    Rows without any rate (another tool's): from the first row to the last."""
    points = sorted(
        (s, number(r.get(SPS))) for r in run.rows if (s := number(r.get(STEPS))) is not None
    )
    steps = seconds = 0.0
    previous = 0.0
    for s, sps in points:
        if sps is not None and math.isfinite(sps) and sps > 0 and s > previous:
            steps, seconds = steps + s - previous, seconds + (s - previous) / sps
        previous = s
    if seconds > 0:
        return steps / seconds
    timed = [(number(r.get(STEPS)), number(r.get(ELAPSED))) for r in run.rows]
    timed = sorted((s, t) for s, t in timed if s is not None and t is not None)
    if len(timed) > 1 and timed[-1][1] > timed[0][1]:
        return (timed[-1][0] - timed[0][0]) / (timed[-1][1] - timed[0][1])
    return math.nan


def summarize(
    group: Group,
    metric: str = RETURN,
    target: float | None = None,
    final_fraction: float = 0.1,
    reps: int = 2000,
    seed: int = 0,
) -> Summary:
    """The group's final value (mean and IQM over seeds, 95% CIs), time to target, SPS."""
    finals, hits, names = [], [], []
    for run in group.seeds:
        steps, seconds, values = _columns(run, metric)
        if len(steps) == 0:
            continue
        order = np.argsort(steps, kind="stable")
        steps, seconds, values = steps[order], seconds[order], values[order]
        finals.append(final_value(steps, values, final_fraction))
        names.append(run.name)
        if target is not None:
            hit = first_reaching(steps, seconds, values, target)
            if hit is not None:
                hits.append(hit)
    nan2 = (math.nan, math.nan)
    if finals:
        mean, mean_lo, mean_hi = interval_estimate(np.array(finals), "mean", reps, seed)
        iqm_, iqm_lo, iqm_hi = interval_estimate(np.array(finals), "iqm", reps, seed)
        mean_ci, iqm_ci = (float(mean_lo), float(mean_hi)), (float(iqm_lo), float(iqm_hi))
    else:
        mean = iqm_ = math.nan
        mean_ci = iqm_ci = nan2
    to_target = np.mean(np.array(hits), axis=0) if hits else nan2
    sps = [s for s in (_sps_after_compile(run) for run in group.seeds) if math.isfinite(s)]
    return Summary(
        label=group.label,
        metric=metric,
        num_seeds=len(finals),
        final=tuple(finals),
        final_mean=float(mean),
        final_mean_ci=mean_ci,
        final_iqm=float(iqm_),
        final_iqm_ci=iqm_ci,
        final_fraction=final_fraction,
        target=target,
        reached=len(hits),
        steps_to_target=float(to_target[0]),
        seconds_to_target=float(to_target[1]),
        sps=float(np.mean(sps)) if sps else math.nan,
        runs=tuple(names),
    )


# --- Table and CSV -------------------------------------------------------------------

CSV_FIELDS = (
    "label", "metric", "num_seeds",
    "final_mean", "final_mean_lo", "final_mean_hi",
    "final_iqm", "final_iqm_lo", "final_iqm_hi", "final_fraction",
    "target", "reached", "steps_to_target", "seconds_to_target",
    "sps", "runs", "finals",
)  # fmt: skip


def _csv_row(s: Summary) -> dict[str, Any]:
    return {
        "label": s.label,
        "metric": s.metric,
        "num_seeds": s.num_seeds,
        "final_mean": s.final_mean,
        "final_mean_lo": s.final_mean_ci[0],
        "final_mean_hi": s.final_mean_ci[1],
        "final_iqm": s.final_iqm,
        "final_iqm_lo": s.final_iqm_ci[0],
        "final_iqm_hi": s.final_iqm_ci[1],
        "final_fraction": s.final_fraction,
        "target": "" if s.target is None else s.target,
        "reached": "" if s.target is None else s.reached,
        "steps_to_target": "" if s.target is None else s.steps_to_target,
        "seconds_to_target": "" if s.target is None else s.seconds_to_target,
        "sps": s.sps,
        "runs": ";".join(s.runs),
        "finals": ";".join(f"{v:.6g}" for v in s.final),  # each run's, in the runs' order
    }


def write_csv(summaries: Sequence[Summary], path: str | os.PathLike) -> str:
    """The summaries as CSV (NaN where a value does not exist); returns the path."""
    path = os.fspath(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        writer.writeheader()
        writer.writerows(_csv_row(s) for s in summaries)
    return path


def format_number(value: float, digits: int = 4) -> str:
    """Thousands separated, an exponent only below 1e-3: 1,975.3, 0.8713, 84.8, 0."""
    if not math.isfinite(value):
        return "-"
    if value == 0:
        return "0"
    if abs(value) >= 100:
        return f"{value:,.1f}"
    return f"{value:.{digits}g}" if abs(value) >= 1e-3 else f"{value:.2e}"


def _with_ci(point: float, ci: tuple[float, float]) -> str:
    if not math.isfinite(ci[0]):
        return format_number(point)
    return f"{format_number(point)} [{format_number(ci[0])}, {format_number(ci[1])}]"


def format_table(summaries: Sequence[Summary]) -> str:
    """An aligned text table of the summaries, one row per group."""
    if not summaries:
        return ""
    first = summaries[0]
    caption = (
        f"{first.metric}, final = each seed's mean over its last "
        f"{first.final_fraction:.0%} of env steps; SPS after compile"
    )
    if any(1 < s.num_seeds < 5 for s in summaries):
        caption += f"; {FEW_SEEDS}"
    header = ["group", "seeds", "final mean [95% CI]", "final IQM [95% CI]"]
    target = next((s.target for s in summaries if s.target is not None), None)
    if target is not None:
        header += [f"steps to {target:g} (reached)", f"seconds to {target:g}"]
    header.append("SPS")
    rows = [header]
    for s in summaries:
        row = [s.label, str(s.num_seeds), _with_ci(s.final_mean, s.final_mean_ci)]
        row.append(_with_ci(s.final_iqm, s.final_iqm_ci))
        if target is not None:
            steps = "-" if not s.reached else f"{s.steps_to_target:,.0f}"
            row += [f"{steps} ({s.reached}/{s.num_seeds})", format_number(s.seconds_to_target, 3)]
        row.append("-" if not math.isfinite(s.sps) else f"{s.sps:,.0f}")
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join([caption, *lines])
