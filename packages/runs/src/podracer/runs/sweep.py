"""Hyperparameter sweeps as one program: the grid, its members, and their configs.

    --sweep ppo.learning_rate=1e-4,3e-4 --sweep ppo.entropy_cost=0,0.01 --num-seeds 4

is a grid of 2 x 2 points, each trained with 4 seeds: 16 members on one leading axis
of the runtime's state, as a multi-seed run's seeds are. Member m is grid point
`m // num_seeds` with seed `seed + m % num_seeds`, so it trains as the single run with
that point's values and that seed would.

Only the numbers an agent's config class declares sweepable (`SWEEPABLE`,
`podracer.agents.hyper`) can be swept: the runtime builds each member's agent inside the
traced program from its values (arrays, one per member), handed to the agent's factory
as `hyper`, which shapes, loop counts and Python branches cannot read. The config itself
stays the run's Python value.

This module is JAX-free: the command lines validate sweeps before anything imports JAX,
and the tools read a sweep's run directory without it.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import itertools
import math
from collections.abc import Mapping
from typing import Any

from podracer.agents import ConfigError
from podracer.agents import flag_group
from podracer.agents import sweepable

OWNER = "AnakinConfig.sweep"
PREFIX = "sweep/"  # a row's swept values: sweep/ppo.learning_rate


@dataclasses.dataclass(frozen=True)
class Sweep:
    """A parsed `--sweep` list: swept fields (`agent_config` paths such as
    `learning_rate` or `search.pb_c_init`) and each one's values, in the order given."""

    group: str  # the agent's flag group, how the command line names its fields (`ppo`)
    fields: tuple[str, ...] = ()
    values: tuple[tuple[float, ...], ...] = ()

    @property
    def points(self) -> list[dict[str, float]]:
        """The grid: every combination of values, the first field varying slowest."""
        return [dict(zip(self.fields, p, strict=True)) for p in itertools.product(*self.values)]

    def names(self) -> list[str]:
        """The swept fields as the command line and the rows name them (`ppo.learning_rate`)."""
        return [f"{self.group}.{f}" for f in self.fields]

    def members(self, num_seeds: int) -> list[dict[str, Any]]:
        """Each member's identity as its rows carry it: `member` (its index on the
        program's leading axis), `seed` (its seed index) and the point's values as
        `sweep/<group>.<field>`."""
        out = []
        for p, point in enumerate(self.points):
            for k in range(num_seeds):
                named = {f"{PREFIX}{self.group}.{f}": v for f, v in point.items()}
                out.append({"member": p * num_seeds + k, "seed": k, **named})
        return out


def parse_sweep(specs: tuple[str, ...], agent: str, agent_config: Any) -> Sweep:
    """`FIELD=V1,V2,...` specs -> a `Sweep`, every value checked as the config checks it;
    a bad spec fails in one line naming it and what is allowed."""
    group = flag_group(agent)
    fields: list[str] = []
    values: list[tuple[float, ...]] = []
    for spec in specs:
        if not isinstance(spec, str) or "=" not in spec:
            raise ConfigError(f"{OWNER}: {spec!r} must be FIELD=V1,V2,... ({group}.learning_rate"
                              "=1e-4,3e-4)")  # fmt: skip
        name, _, text = spec.partition("=")
        name = name.strip().removeprefix("--").replace("-", "_")
        head, dot, path = name.partition(".")
        if not dot or head != group:
            raise ConfigError(
                f"{OWNER}: {name!r} must name a field of the agent's config as "
                f"{group}.FIELD (the run's agent is {agent!r})"
            )
        _check_sweepable(agent_config, path, group)
        if path in fields:
            raise ConfigError(f"{OWNER}: {name} is swept twice; give its values in one list")
        parsed = _values(name, text)
        for v in parsed:  # each value as the config itself would take it
            _with_checked(agent_config, path, v, name)
        fields.append(path)
        values.append(parsed)
    return Sweep(group, tuple(fields), tuple(values))


def _check_sweepable(config: Any, path: str, group: str) -> None:
    allowed = sweepable(type(config))
    if path in allowed:
        return
    shown = ", ".join(f"{group}.{f}" for f in allowed) or "none (its config declares no SWEEPABLE)"
    obj, found = config, True
    for part in path.split("."):
        names = {f.name for f in dataclasses.fields(obj)} if dataclasses.is_dataclass(obj) else ()
        if part not in names:
            found = False
            break
        obj = getattr(obj, part)
    if not found:
        close = difflib.get_close_matches(path, allowed, n=3)
        hint = f"did you mean {', '.join(f'{group}.{c}' for c in close)}? " if close else ""
        raise ConfigError(
            f"{OWNER}: {type(config).__name__} has no field {path!r}; {hint}sweepable: {shown}"
        )
    raise ConfigError(
        f"{OWNER}: {group}.{path} cannot be swept: members of one program share shapes, "
        f"loop counts and choices (run them separately); sweepable: {shown}"
    )


def _values(name: str, text: str) -> tuple[float, ...]:
    parts = [t.strip() for t in text.split(",")]
    if not text.strip() or not all(parts):
        raise ConfigError(f"{OWNER}: {name} needs a comma-separated list of numbers, got {text!r}")
    out = []
    for t in parts:
        try:
            v = float(t)
        except ValueError:
            raise ConfigError(f"{OWNER}: {name} values must be numbers, got {t!r}") from None
        if not math.isfinite(v):
            raise ConfigError(f"{OWNER}: {name} values must be finite, got {t!r}")
        out.append(v)
    if len(set(out)) != len(out):
        raise ConfigError(f"{OWNER}: {name} lists a value twice: {text!r}")
    return tuple(out)


def _with_checked(config: Any, path: str, value: float, name: str) -> Any:
    """`config` with `path` set to `value` through the dataclasses' own checks."""
    head, dot, rest = path.partition(".")
    try:
        if dot:
            inner = _with_checked(getattr(config, head), rest, value, name)
            return dataclasses.replace(config, **{head: inner})
        return dataclasses.replace(config, **{head: value})
    except ConfigError as e:
        raise ConfigError(f"{OWNER}: {name}={value:g}: {e}") from None


def member_config(config: Mapping[str, Any], member: Mapping[str, Any]) -> dict[str, Any]:
    """A sweep run's config.json (a dict) as member `member` (its rows' identity) alone:
    the point's values in `agent_config`, no sweep, its own seed. The same run as a
    single run with that config, which `--config` reruns and the tools group by."""
    out = copy.deepcopy(dict(config))
    group = flag_group(out.get("agent", ""))
    for name, value in member.items():
        head, dot, path = name.removeprefix(PREFIX).partition(".")
        if not name.startswith(PREFIX) or not dot or head != group:
            continue
        node = out.setdefault("agent_config", {})
        *parents, leaf = path.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    out["sweep"] = []
    out["seed"] = int(out.get("seed") or 0) + int(member.get("seed", 0))
    out["num_seeds"] = 1
    if out.get("pbt_interval"):  # one member: no population to train (PBT needs a sweep)
        out["pbt_interval"] = 0
    return out


def num_members(config: Mapping[str, Any]) -> int:
    """Members on a run's leading axis, from its config.json: grid points x seeds."""
    points = 1
    for spec in config.get("sweep") or []:
        points *= len(str(spec).partition("=")[2].split(","))
    return points * int(config.get("num_seeds") or 1)


def tags_of_member(config: Mapping[str, Any], member: int) -> dict[str, Any]:
    """Member `member`'s row tags (`Sweep.members`), from a sweep run's config.json."""
    group = flag_group(config.get("agent", ""))
    fields, values = [], []
    for spec in config.get("sweep") or []:
        name, _, text = str(spec).partition("=")
        fields.append(name.strip().removeprefix("--").replace("-", "_").partition(".")[2])
        values.append(tuple(float(v) for v in text.split(",")))
    return Sweep(group, tuple(fields), tuple(values)).members(int(config.get("num_seeds") or 1))[
        member
    ]


def member_label(config: Mapping[str, Any], count: int, member: int) -> dict[str, Any]:
    """Member `member`'s label, as `podracer eval` and `podracer.runs.load` give it: its
    training seed, and in a run of `count > 1` members its index and swept values."""
    if count == 1:
        return {"seed": int(config.get("seed") or 0)}
    tags = tags_of_member(config, member) if config.get("sweep") else {"seed": member}
    values = {name: v for name, v in tags.items() if name not in ("member", "seed")}
    seed = int(config.get("seed") or 0) + int(tags["seed"])
    return {"member": member, "seed": seed, **({"values": values} if values else {})}
