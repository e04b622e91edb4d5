"""`podracer sweep-best RUN`: a sweep's final return by grid point, and its best point's
config to rerun alone.

    podracer sweep-best runs/NAME [--metric eval/episodic_return] [--write PATH]

Each member's final value is the one `podracer plot` reports (its mean over the rows of
its last 10% of env steps that saw an episode end); a point's is the mean over its seeds.
The best point's config (its values in `agent_config`, no sweep, the same seeds) goes to
`RUN/best_config.json`, which `anakin --config RUN/best_config.json` reruns: its seeds
train as the sweep's members of that point did.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

import numpy as np

from podracer.runs.result import FINAL_FRACTION
from podracer.runs.sweep import PREFIX
from podracer.runs.sweep import member_config
from podracer.runs.tools.records import RETURN
from podracer.runs.tools.records import RunError
from podracer.runs.tools.records import read_metrics


def point_finals(
    history: Sequence[Mapping[str, Any]], metric: str = RETURN, fraction: float = FINAL_FRACTION
) -> list[tuple[dict[str, float], list[float]]]:
    """`(point, finals of its seeds)` for each grid point of a sweep's rows, in grid order
    (a member's point is that of its first row: where PBT started it)."""
    from podracer.runs.tools.aggregate import final_value

    points: dict[tuple, tuple[dict[str, float], dict[int, list]]] = {}
    first: dict[int, dict[str, float]] = {}
    for row in history:
        if "member" not in row:
            continue
        point = first.setdefault(
            row["member"], {k: v for k, v in row.items() if k.startswith(PREFIX)}
        )
        entry = points.setdefault(tuple(sorted(point.items())), (point, {}))
        value = row.get(metric, math.nan)
        if (
            isinstance(value, int | float)
            and math.isfinite(value)
            and (metric != RETURN or row.get("charts/episodes", 1) > 0)
        ):
            entry[1].setdefault(row["member"], []).append((row["env_steps"], value))
    out = []
    for point, members in points.values():
        finals = [final_value(*np.asarray(r, np.float64).T, fraction) for r in members.values()]
        out.append((point, finals))
    return out


def sweep_table(finals: list[tuple[dict[str, float], list[float]]], metric: str) -> str:
    """One line per grid point: its values, the mean final value over its seeds and their
    range; the best point marked."""
    if not finals:
        return "(no sweep rows)"
    means = [float(np.mean(f)) if f else math.nan for _, f in finals]
    best = int(np.nanargmax(means)) if not all(math.isnan(m) for m in means) else -1
    names = [k.removeprefix(PREFIX) for k in finals[0][0]]
    header = [*names, f"final {metric}", "seeds (min..max)"]
    lines = []
    for i, ((point, f), mean) in enumerate(zip(finals, means, strict=True)):
        spread = f"{len(f)} ({min(f):.4g}..{max(f):.4g})" if f else "0"
        mark = "  <- best" if i == best else ""
        cells = [f"{point[PREFIX + n]:g}" for n in names]
        lines.append([*cells, f"{mean:.4g}", spread + mark])
    widths = [max(len(r[c]) for r in [header, *lines]) for c in range(len(header))]
    fmt = lambda r: "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()  # noqa: E731
    return "\n".join([fmt(header), *(fmt(r) for r in lines)])


def best_config(config: Mapping[str, Any], finals, metric: str) -> dict[str, Any]:
    """The sweep's config as its best point alone, with the sweep's seeds."""
    means = [float(np.mean(f)) if f else -math.inf for _, f in finals]
    if not finals or all(m == -math.inf for m in means):
        raise RunError(f"no member logged a finite {metric}")
    point = finals[int(np.argmax(means))][0]
    out = member_config(config, point)
    out["seed"], out["num_seeds"] = config.get("seed", 0), config.get("num_seeds", 1)
    out["run_name"], out["resume"] = None, False  # a new run, not the sweep's
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="podracer sweep-best",
        description="A sweep's final return by grid point; writes the best point's config.",
    )
    parser.add_argument("run", metavar="RUN", help="the sweep's run directory")
    parser.add_argument("--metric", default=RETURN, help=f"what ranks the points ({RETURN})")
    parser.add_argument("--write", metavar="PATH", help="where the config goes "
                        "(default RUN/best_config.json)")  # fmt: skip
    args = parser.parse_args(argv)
    try:
        path = os.path.join(args.run, "config.json")
        if not os.path.isfile(path):
            raise RunError(f"{args.run} is not a run directory (no config.json)")
        with open(path) as f:
            config = json.load(f)
        if not config.get("sweep"):
            raise RunError(f"{args.run} is not a sweep (its config has no sweep)")
        metrics = os.path.join(args.run, "metrics.jsonl")
        rows = read_metrics(metrics) if os.path.isfile(metrics) else []
        finals = point_finals(rows, args.metric)
        best = best_config(config, finals, args.metric)
    except (RunError, OSError, json.JSONDecodeError) as e:
        print(f"{parser.prog}: error: {e}", file=sys.stderr)
        return 2
    print(sweep_table(finals, args.metric))
    out = args.write or os.path.join(args.run, "best_config.json")
    tmp = f"{out}.tmp"
    try:
        with open(tmp, "w") as f:
            json.dump(best, f, indent=2)
        os.replace(tmp, out)
    except OSError as e:
        print(f"{parser.prog}: error: cannot write {out}: {e.strerror}", file=sys.stderr)
        return 2
    runtime = config.get("runtime", "anakin")
    print(f"wrote {out}; rerun the best point alone: {runtime} --config {out}")
    return 0
