"""Run directories -> seeds -> groups: what the plot and eval tools read of a run.

    paths --load_runs--> SeedRun (one per seed) --group_runs--> Group (one config)

Only config.json and metrics.jsonl are read, so runs of either runtime mix; seeds of a
multi-seed run are split into one SeedRun each, a sweep's members into one each with the
config of their point (so a member groups with the single run of its values), and runs
whose configs differ only in bookkeeping (seed, cadence, placement) are seeds of one
group.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import os
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from podracer.runs.config import RunConfig
from podracer.runs.directory import read_jsonl
from podracer.runs.sweep import PREFIX
from podracer.runs.sweep import member_config

RETURN = "charts/episodic_return"
STEPS = "env_steps"
ELAPSED = "timing/elapsed"
SPS = "charts/SPS"

# Top-level config fields that say how a run was run, not what it learns: runs differing
# only in these (and the seed) are seeds of one group. The run harness's own list (what a
# resume may change), the seed, and the runtimes' placement fields.
BOOKKEEPING = RunConfig.MAY_CHANGE_ON_RESUME | {
    "seed", "num_seeds", "num_devices", "actor_device_ids", "learner_device_ids",
    "actor_loop", "queue_size", "stage_timeout_s", "video_interval",
    # A sweep's members are read with their point's config and no sweep (`member_config`).
    "sweep",
}  # fmt: skip
BOOKKEEPING_SUFFIXES = ("_interval",)  # log/eval/checkpoint/video cadence
BOOKKEEPING_PREFIXES = ("wandb_",)


class RunError(ValueError):
    """A path, run or metric the tools cannot use; the message is one line for the user."""


@dataclasses.dataclass(frozen=True, eq=False)
class SeedRun:
    """One seed's rows: a run directory, or one seed of a multi-seed run directory."""

    path: str  # the run directory
    config: Mapping[str, Any]  # its config.json
    seed: int  # the seed value (config seed + index in a multi-seed run)
    index: int | None  # the seed (or sweep member) index in its run; None for a one-seed run
    rows: tuple[Mapping[str, Any], ...]  # metrics.jsonl rows of this seed, in order
    kind: str = "seed"  # what `index` counts: "seed", or "member" of a sweep

    @property
    def name(self) -> str:
        base = os.path.basename(self.path)
        if self.index is None:
            return base
        return f"{base}[{self.kind} {self.index}]"


@dataclasses.dataclass(frozen=True, eq=False)
class Group:
    """Seeds of one config (the config without seed and bookkeeping fields)."""

    label: str
    key: Mapping[str, Any]  # flattened config fields that define the group
    seeds: tuple[SeedRun, ...]


def number(value: Any) -> float | None:
    """`value` as a float when it is a number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


# --- Reading run directories ----------------------------------------------------------


def read_metrics(path: str | os.PathLike) -> list[dict[str, Any]]:
    """The rows of a metrics.jsonl (`podracer.runs.directory.read_jsonl`'s rules)."""
    try:
        return read_jsonl(path)
    except ValueError as e:
        raise RunError(str(e)) from None


def _is_run(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "config.json"))


def _run_dirs(path: str) -> list[str]:
    """`path` if it is a run dir, else the run dirs below it (not below a run dir)."""
    if _is_run(path):
        return [path]
    found = []
    for name in sorted(os.listdir(path)):
        sub = os.path.join(path, name)
        if os.path.isdir(sub) and not name.startswith("."):
            found.extend(_run_dirs(sub))
    return found


def _read_config(path: str) -> dict[str, Any]:
    try:
        with open(os.path.join(path, "config.json")) as f:
            config = json.load(f)
    except json.JSONDecodeError as e:
        raise RunError(f"{path}/config.json: not valid JSON ({e.msg})") from None
    if not isinstance(config, dict):
        raise RunError(f"{path}/config.json: not a JSON object")
    return config


def _seeds_of(path: str) -> list[SeedRun]:
    config = _read_config(path)
    metrics = os.path.join(path, "metrics.jsonl")
    rows = read_metrics(metrics) if os.path.isfile(metrics) else []
    rows = [r for r in rows if isinstance(r, dict) and number(r.get(STEPS)) is not None]
    if not rows:
        raise RunError(f"{path} has no metrics (metrics.jsonl missing or empty)")
    base_seed = int(config.get("seed") or 0)
    if config.get("sweep"):
        members: dict[int, list] = {}
        for r in rows:
            if number(r.get("member")) is not None:
                members.setdefault(int(r["member"]), []).append(r)
        if not members:
            raise RunError(f"{path}: a sweep, but no row has a member key")
        return [
            SeedRun(path, member_config(config, rs[0]), base_seed + int(rs[0].get("seed", 0)),
                    m, tuple(rs), "member")
            for m, rs in sorted(members.items())
        ]  # fmt: skip
    per_seed = [r for r in rows if number(r.get("seed")) is not None]
    if int(config.get("num_seeds") or 1) <= 1 and not per_seed:
        return [SeedRun(path, config, base_seed, None, tuple(rows))]
    if not per_seed:
        raise RunError(f"{path}: num_seeds is {config['num_seeds']} but no row has a seed key")
    indices = sorted({int(r["seed"]) for r in per_seed})
    return [
        SeedRun(path, config, base_seed + i, i, tuple(r for r in per_seed if int(r["seed"]) == i))
        for i in indices
    ]


def load_runs(paths: Sequence[str | os.PathLike]) -> list[SeedRun]:
    """Every seed of the given run dirs; a folder holding run dirs stands for all of them.

    A multi-seed run dir (rows with a `seed` key) gives one SeedRun per seed index. A run
    dir named twice (itself and through its folder) is read once.
    """
    if not paths:
        raise RunError("no run directory given")
    seeds: list[SeedRun] = []
    seen: set[str] = set()
    for raw in paths:
        path = os.path.abspath(os.fspath(raw))
        if not os.path.isdir(path):
            raise RunError(f"{os.fspath(raw)}: no such run directory")
        runs = _run_dirs(path)
        if not runs:
            raise RunError(
                f"{os.fspath(raw)} is not a run directory (no config.json) and holds none"
            )
        for run in runs:
            if run not in seen:
                seen.add(run)
                seeds.extend(_seeds_of(run))
    return seeds


def available_metrics(runs: Sequence[SeedRun]) -> list[str]:
    """Names of the numeric columns the runs logged (env steps, seed, unix time excluded)."""
    names = set()
    for run in runs:
        for row in run.rows:
            names.update(k for k, v in row.items() if number(v) is not None)
    names = {n for n in names if not n.startswith(PREFIX)}  # a sweep's values, not metrics
    return sorted(names - {STEPS, "seed", "member", "time"})


# --- Grouping ------------------------------------------------------------------------


def _flatten(config: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    flat = {}
    for k, v in config.items():
        if isinstance(v, Mapping):
            flat.update(_flatten(v, f"{prefix}{k}."))
        else:
            flat[f"{prefix}{k}"] = json.dumps(v, sort_keys=True) if isinstance(v, list) else v
    return flat


def _is_bookkeeping(top_level: str) -> bool:
    return (
        top_level in BOOKKEEPING
        or top_level.endswith(BOOKKEEPING_SUFFIXES)
        or top_level.startswith(BOOKKEEPING_PREFIXES)
    )


def group_key(config: Mapping[str, Any]) -> dict[str, Any]:
    """The flattened config fields that tell groups apart (seed and bookkeeping left out)."""
    return {k: v for k, v in _flatten(config).items() if not _is_bookkeeping(k.split(".", 1)[0])}


_MISSING = object()  # a field one group's config does not have


def _show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return "-" if value is _MISSING else str(value)


def _labels(keys: list[dict[str, Any]]) -> list[str]:
    """`agent on env`, plus the fields that differ between groups sharing both."""
    bases = [f"{k.get('agent', '?')} on {k.get('env', '?')}" for k in keys]
    labels = []
    for i, key in enumerate(keys):
        peers = [keys[j] for j, b in enumerate(bases) if b == bases[i]]
        if len(peers) == 1:
            labels.append(bases[i])
            continue
        fields = sorted({f for peer in peers for f in peer})
        differ = [f for f in fields if len({repr(p.get(f, _MISSING)) for p in peers}) > 1]
        shown = ", ".join(
            f"{f.removeprefix('agent_config.')}={_show(key.get(f, _MISSING))}" for f in differ
        )
        labels.append(f"{bases[i]} ({shown})")
    return labels


def _by_fields(runs: Sequence[SeedRun], by: Sequence[str]) -> list[str]:
    """`--group-by` names as flattened config keys: a field of the agent's config by its
    flag name (`ppo.learning_rate`) or its path (`agent_config.learning_rate`), or any
    other config field (`num_envs`)."""
    known = set().union(*(_flatten(r.config) for r in runs))
    out = []
    for name in by:
        name = name.replace("-", "_").removeprefix(PREFIX)
        head, dot, rest = name.partition(".")
        agents = {str(r.config.get("agent", "")).rpartition(":")[2] for r in runs}
        key = f"agent_config.{rest}" if dot and head in agents else name
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=3)
            raise RunError(f"no run has a config field {name!r}" +
                           (f"; did you mean {', '.join(close)}?" if close else ""))  # fmt: skip
        out.append(key)
    return out


def group_runs(
    runs: Sequence[SeedRun], labels: Sequence[str] | None = None, by: Sequence[str] = ()
) -> list[Group]:
    """Seeds grouped by config, in order of first appearance; `labels` replace the names.
    With `by` (config fields, see `_by_fields`), by the agent, the env and those fields
    only: the runs that share their values are one group whatever else differs."""
    keys: list[dict[str, Any]] = []
    members: list[list[SeedRun]] = []
    fields = ["agent", "env", *_by_fields(runs, by)] if by else []
    for run in runs:
        key = group_key(run.config)
        if fields:
            flat = _flatten(run.config)
            key = {f: flat.get(f, _MISSING) for f in fields}
        if key in keys:
            members[keys.index(key)].append(run)
        else:
            keys.append(key)
            members.append([run])
    if labels is not None and len(labels) != len(keys):
        raise RunError(f"{len(labels)} labels given for {len(keys)} groups")
    names = list(labels) if labels is not None else _labels(keys)
    return [Group(n, k, tuple(m)) for n, k, m in zip(names, keys, members, strict=True)]
