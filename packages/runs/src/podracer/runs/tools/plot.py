"""`podracer plot`: run directories -> one PNG per metric and a summary table (text, CSV).

    podracer plot runs/a runs/b-seed* [--metric eval/episodic_return] [--aggregate iqm]
                  [--target 475] [--out DIR] [--seeds] [--labels A B] [--group-by FIELD]

Each figure has two panels, the metric against env steps and against wall seconds
(`timing/elapsed`, compile included); every group is its mean (or IQM) over seeds with a
95% stratified bootstrap band, or a plain line for one seed. The table summarises the
first metric. Statistics live in `aggregate`; this module draws and parses arguments.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Sequence

from .aggregate import AGGREGATES
from .aggregate import Summary
from .aggregate import format_table
from .aggregate import group_curve
from .aggregate import series
from .aggregate import summarize
from .aggregate import write_csv
from .records import ELAPSED
from .records import RETURN
from .records import STEPS
from .records import Group
from .records import RunError
from .records import available_metrics
from .records import group_runs
from .records import load_runs

FIGSIZE = (12.0, 4.5)  # inches; at DPI a 1200 x 450 pixel PNG
DPI = 100
MARKERS_BELOW = 30  # curves of at most this many points mark each one
X_LABELS = {STEPS: "env steps", ELAPSED: "wall time (s)"}
SUMMARY_FILE = "summary.csv"


@dataclasses.dataclass(frozen=True)
class PlotResult:
    """What `plot_runs` computed and wrote."""

    groups: tuple[Group, ...]
    summaries: tuple[Summary, ...]  # one per group, of the first metric
    table: str  # the summaries as an aligned text table
    pngs: tuple[str, ...]  # one per metric
    csv: str


def figure_name(metric: str) -> str:
    """The PNG file name of a metric: `charts/episodic_return` -> `charts_episodic_return.png`."""
    return metric.replace("/", "_") + ".png"


def plot_metric(
    groups: Sequence[Group],
    metric: str,
    path: str | os.PathLike,
    aggregate: str = "mean",
    show_seeds: bool = False,
    num_points: int = 200,
    reps: int = 2000,
    seed: int = 0,
) -> str:
    """Draws `metric` of every group against env steps and wall time into a PNG."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=FIGSIZE, dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)  # Agg, no display: a bare Figure needs no pyplot state
    axes = fig.subplots(1, 2)
    for ax, x in zip(axes, (STEPS, ELAPSED), strict=True):
        drawn = 0
        for i, group in enumerate(groups):
            curve = group_curve(group, metric, x, aggregate, num_points, reps, seed)
            if curve is None:
                continue
            color = f"C{i % 10}"
            if show_seeds:
                for run in group.seeds:
                    ax.plot(*series(run, metric, x), color=color, linewidth=0.6, alpha=0.35)
            n = curve.seeds.shape[0]
            ax.plot(
                curve.x,
                curve.point,
                color=color,
                linewidth=1.8,
                # Few points (a short run, sparse logging): mark them, so two points
                # joined by a line are not read as a measured curve.
                marker="o" if len(curve.x) <= MARKERS_BELOW else None,
                markersize=3,
                label=f"{group.label} ({n} seed{'s' if n > 1 else ''})",
            )
            if curve.lower is not None:
                ax.fill_between(curve.x, curve.lower, curve.upper, color=color, alpha=0.2, lw=0)
            drawn += 1
        if not drawn:
            ax.text(0.5, 0.5, "not logged", ha="center", va="center", transform=ax.transAxes)
        ax.set_xlabel(X_LABELS[x])
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(metric)
    if axes[0].get_legend_handles_labels()[0]:
        axes[0].legend(fontsize="small")
    band = "95% bootstrap CI" if any(len(g.seeds) > 1 for g in groups) else "one seed"
    if any(1 < len(g.seeds) < 5 for g in groups):
        band += ", fewer than 5 seeds: close to their range"
    fig.suptitle(f"{metric}: {aggregate} over seeds ({band})")
    path = os.fspath(path)
    fig.savefig(path, dpi=DPI)
    return path


def _check(ok: bool, message: str) -> None:
    if not ok:
        raise RunError(message)


def plot_runs(
    paths: Sequence[str | os.PathLike],
    metrics: Sequence[str] = (RETURN,),
    out: str | os.PathLike | None = None,
    aggregate: str = "mean",
    target: float | None = None,
    show_seeds: bool = False,
    labels: Sequence[str] | None = None,
    final_fraction: float = 0.1,
    num_points: int = 200,
    reps: int = 2000,
    seed: int = 0,
    group_by: Sequence[str] = (),
) -> PlotResult:
    """Loads and groups the runs, writes a PNG per metric and `summary.csv` into `out`.

    `out` defaults to `<run>/plots` when the paths hold one run dir, else `./plots`.
    Raises RunError (one-line message) for a path that is not a run, a run without
    metrics or a metric no run logged.
    """
    metrics = list(dict.fromkeys(metrics))  # once each, in order
    _check(bool(metrics), "no metric given")
    _check(aggregate in AGGREGATES, f"aggregate must be one of {AGGREGATES}, got {aggregate!r}")
    _check(0 < final_fraction <= 1, f"final fraction must be in (0, 1], got {final_fraction}")
    _check(reps >= 1, f"bootstrap reps must be >= 1, got {reps}")
    _check(num_points >= 2, f"grid points must be >= 2, got {num_points}")
    runs = load_runs(paths)
    known = available_metrics(runs)
    for metric in metrics:
        _check(metric in known, f"unknown metric {metric!r}; the runs log: {', '.join(known)}")
    groups = group_runs(runs, labels, group_by)
    if out is None:
        dirs = {run.path for run in runs}
        out = os.path.join(dirs.pop(), "plots") if len(dirs) == 1 else "plots"
    out = os.fspath(out)
    _check(not os.path.exists(out) or os.path.isdir(out), f"out {out!r} is a file, not a folder")
    os.makedirs(out, exist_ok=True)
    pngs = tuple(
        plot_metric(
            groups,
            metric,
            os.path.join(out, figure_name(metric)),
            aggregate,
            show_seeds,
            num_points,
            reps,
            seed,
        )
        for metric in metrics
    )
    summaries = tuple(summarize(g, metrics[0], target, final_fraction, reps, seed) for g in groups)
    csv_path = write_csv(summaries, os.path.join(out, SUMMARY_FILE))
    return PlotResult(tuple(groups), summaries, format_table(summaries), pngs, csv_path)


def build_parser(prog: str = "podracer plot") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Learning curves (PNG) and a summary table (text, CSV) of run directories.",
    )
    parser.add_argument(
        "runs", nargs="+", metavar="RUN", help="a run directory, or a folder holding run dirs"
    )
    parser.add_argument(
        "--metric",
        action="append",
        dest="metrics",
        metavar="NAME",
        help=f"metric to plot, repeatable; the table summarises the first (default {RETURN})",
    )
    parser.add_argument("--aggregate", choices=AGGREGATES, default="mean", help="over seeds")
    parser.add_argument(
        "--target", type=float, help="reference value: env steps and seconds to first reach it"
    )
    parser.add_argument(
        "--out", metavar="DIR", help="output folder (default RUN/plots for one run, else ./plots)"
    )
    parser.add_argument("--seeds", action="store_true", help="draw each seed as a thin line")
    parser.add_argument("--labels", nargs="+", metavar="LABEL", help="one per group, in order")
    parser.add_argument(
        "--group-by", action="append", default=[], metavar="FIELD",
        help="group by this config field only (repeatable), e.g. a sweep's ppo.learning_rate",
    )  # fmt: skip
    parser.add_argument(
        "--final-fraction",
        type=float,
        default=0.1,
        help="final value: each seed's mean over this last part of its env steps",
    )
    parser.add_argument("--reps", type=int, default=2000, help="bootstrap resamples")
    parser.add_argument("--points", type=int, default=200, help="interpolation grid size")
    parser.add_argument("--bootstrap-seed", type=int, default=0, help="fixes the bands")
    return parser


def main(argv: list[str] | None = None) -> int:
    """The `podracer plot` command: prints the table and the written paths."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        result = plot_runs(
            args.runs,
            metrics=args.metrics or [RETURN],
            out=args.out,
            aggregate=args.aggregate,
            target=args.target,
            show_seeds=args.seeds,
            labels=args.labels,
            final_fraction=args.final_fraction,
            num_points=args.points,
            reps=args.reps,
            seed=args.bootstrap_seed,
            group_by=args.group_by,
        )
    except RunError as e:
        print(f"{parser.prog}: error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"{parser.prog}: error: {e}", file=sys.stderr)
        return 1
    print(result.table)
    for path in (*result.pngs, result.csv):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
