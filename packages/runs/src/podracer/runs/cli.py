"""The command line of a runtime (`anakin`, `sebulba`), generated from its config by tyro.

    anakin --env gymnax:CartPole-v1 --agent ppo --ppo.learning-rate 1e-3 --seed 1

The flags are the runtime config's fields plus one group per registered agent
(`--ppo.*`, `--muzero.*`, ... and any `register_agent`ed one). Defaults come, in order:
from the runtime config's field defaults; then the agent's preset for the env's task, else
its family (`--preset NAME` to pick another); or, instead of both, a config file
(`--config runs/X/config.json` reruns a run's exact config) or, with `--resume`, the run's
own config.json; explicit flags always win. A bad value ends with one line naming the
field, exit status 2, before anything compiles; so does anything the run refuses.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import difflib
import inspect
import json
import math
import os
import sys
import typing
from collections.abc import Callable
from typing import Annotated
from typing import Any

import tyro

from podracer.agents import AGENTS
from podracer.agents import ConfigError
from podracer.agents import flag_group
from podracer.agents.registry import load_entry_points
from podracer.runs import signals
from podracer.runs.config import RunConfig
from podracer.runs.config import config_from_json
from podracer.runs.directory import RunDir


def parse_int(text: str) -> int:
    """An int flag's value: a plain integer, or a whole number in the notation the README
    writes budgets in (`1e6`, `2.5e5`, `1_000_000`). A fraction (`1.5`) or anything else
    raises ValueError, which tyro turns into one line naming the flag."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{text!r} is not an integer") from None
    if not math.isfinite(value) or value != int(value):
        raise ValueError(f"{text!r} is not a whole number")
    return int(value)


def _int_rule(type_info: tyro.constructors.PrimitiveTypeInfo):
    if type_info.type is not int:
        return None
    return tyro.constructors.PrimitiveConstructorSpec(
        nargs=1, metavar="INT", instance_from_str=lambda args: parse_int(args[0]),
        is_instance=lambda x: isinstance(x, int) and not isinstance(x, bool),
        str_from_instance=lambda instance: [str(instance)],
    )  # fmt: skip


# Every int field of every config (a budget, a size, a seed) takes `1e6`-style values.
REGISTRY = tyro.constructors.ConstructorRegistry()
REGISTRY.primitive_rule(_int_rule)


def _pre_parse(argv: list[str]) -> argparse.Namespace:
    """The flags that choose the defaults, read before the full parse."""
    pre = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    for flag in ("--env", "--agent", "--preset", "--config", "--run-name", "--runs-root"):
        pre.add_argument(flag, dest=flag[2:].replace("-", "_"))
    pre.add_argument("--resume", action="store_true")
    pre.add_argument("--trust-code", action="store_true")
    known, _ = pre.parse_known_args(argv)
    return known


def _load_config(config_cls: type, runtime: str, path: str, known: argparse.Namespace) -> RunConfig:
    try:
        with open(path) as f:
            data = json.load(f)
    except OSError as e:
        raise ConfigError(f"--config {path}: {e.strerror}") from None
    except json.JSONDecodeError as e:
        raise ConfigError(f"--config {path} is not valid JSON ({e})") from None
    stored_runtime = data.pop("runtime", runtime) if isinstance(data, dict) else runtime
    if isinstance(data, dict):  # what the run did, not what a config asks: --resume says it
        data.pop("resume", None)
    if stored_runtime != runtime:
        raise ConfigError(
            f"--config {path} is a {stored_runtime} run's config; {runtime} cannot use it "
            f"(start from that run's checkpoint with --init-from instead)"
        )
    # The code a file names is imported only if trusted: --trust-code, or an --env/--agent
    # of this command line naming it (podracer.runs.trust).
    typed = [name for name in (known.env, known.agent) if name]
    return config_from_json(config_cls, data, path, known.trust_code, typed)


def defaults(config_cls: type, argv: list[str]) -> tuple[RunConfig, str]:
    """The config the flags apply to, and a line saying where it came from."""
    runtime = config_cls.RUNTIME
    known = _pre_parse(argv)
    if known.resume:  # a resume's defaults are the run's own config.json, nothing else
        for flag in ("preset", "config"):
            if getattr(known, flag):
                raise ConfigError(
                    f"--{flag} does not apply to --resume: a resume continues with the run's "
                    f"own config.json (flags may change what may change); drop --{flag}"
                )
    base = None
    if known.config:
        base = (_load_config(config_cls, runtime, known.config, known),
                f"config from {known.config}")  # fmt: skip
    elif known.resume and known.run_name:
        run = RunDir(known.runs_root or config_cls().runs_root, known.run_name)
        if run.exists():
            stored = _load_config(config_cls, runtime, run.config_file, known)
            base = stored, f"resuming {run.path} with its config"
    if base is None:
        return config_cls.from_preset(known.env, known.agent, known.preset)
    config, source = base
    if known.agent and known.agent != config.agent:  # another agent: its own defaults
        config = dataclasses.replace(config, agent=known.agent, agent_config=None)
    return config, source


def parse_cli(config_cls: type, argv: list[str], description: str = "") -> tuple[RunConfig, str]:
    """`(config, where its defaults came from)` for `argv`; `--help` exits here."""
    runtime = config_cls.RUNTIME
    load_entry_points()  # installed packages' agents get their flag groups too
    base, source = defaults(config_cls, argv)
    # Flags win over the defaults, a repeatable flag too: tyro appends a `--sweep` to the
    # default's (the loaded config's, the resumed run's), which would sweep its fields twice
    # or multiply the grid. The command line's sweeps replace them.
    if any(a == "--sweep" or a.startswith("--sweep=") for a in argv) and hasattr(base, "sweep"):
        base = dataclasses.replace(base, sweep=())
    fields = _runtime_groups(config_cls, base)
    names = {f.name for f in dataclasses.fields(config_cls)}
    for name in AGENTS:  # every agent's flag group must be free, whichever one runs
        group = flag_group(name)
        if group in names or group in ("preset", "config") or not group.isidentifier():
            raise ConfigError(f"agent {name!r}: its flags --{group}.* clash with a {runtime} "
                              f"flag or are not a name")  # fmt: skip
    # Only the run's agent's flags: another agent's would be ignored (and --help would
    # list every agent's). `--agent NAME` (read before this parse) chooses the group.
    entry, group = AGENTS[base.agent], flag_group(base.agent)
    title = f"{entry.description} (with --agent {base.agent})" if entry.description else (
        f"with --agent {base.agent}")  # fmt: skip
    fields.append(
        (group, Annotated[entry.config_cls, tyro.conf.arg(help=title)],
         dataclasses.field(default=base.agent_config))
    )  # fmt: skip
    others = sorted(n for n in AGENTS if ":" not in n and n != base.agent)
    description = (f"{description}\n\n" if description else "") + (
        f"The agent's flags are --{group}.*; another agent's: --agent NAME --help "
        f"(NAME: {', '.join(others)}, or a registered one).")  # fmt: skip
    fields += [
        ("preset", Annotated[str | None, tyro.conf.arg(
            help="defaults for a task family (catch, classic, minatar, atari, ...); "
                 "default: the env's family")], dataclasses.field(default=None)),
        ("config", Annotated[str | None, tyro.conf.arg(
            help="a run's config.json to start from (its exact config; flags still win)")],
         dataclasses.field(default=None)),
    ]  # fmt: skip
    _check_agent_flags(argv, base.agent, entry.config_cls)
    flags_cls = dataclasses.make_dataclass(runtime, fields, frozen=True)
    flags = tyro.cli(flags_cls, args=argv, description=description, registry=REGISTRY)
    values = {}
    for group, _, _ in fields:
        if group not in HELP_GROUPS:
            continue
        parsed = getattr(flags, group)
        for name in _group_fields(config_cls, group):
            nested = _nested_type(config_cls, name)
            values[name] = (
                getattr(parsed, name) if nested is None
                else nested(**{f.name: getattr(parsed, f.name) for f in dataclasses.fields(nested)})
            )  # fmt: skip
    agent_config = getattr(flags, flag_group(values["agent"]))
    return dataclasses.replace(base, **values, agent_config=agent_config), source


# The runtime's flags in --help, box by box: the fields each group holds (a runtime's own
# fields, its layout, fall in "layout"). The flags keep their names (no group prefix).
HELP_GROUPS = {
    "run": ("what to train, for how long, and where the run is kept", (
        "env", "env_kwargs", "agent", "seed", "total_env_steps", "max_wall_seconds", "run_name",
        "runs_root", "resume", "init_from", "init_opt_state", "trust_code", "compile_cache")),
    "layout": ("how the work is laid out on the devices and host", ()),
    "populations": ("several seeds or hyperparameter points in one run", (
        "num_seeds", "sweep", "pbt_interval", "pbt_fraction", "members_at_once")),
    "logging": ("metric rows, checkpoints and their writers (checkpoints at the first loop step "
                "at or past each multiple of their interval)", (
        "log_interval", "checkpoint_interval", "keep_checkpoints", "tensorboard",
        "wandb_project", "wandb_entity", "wandb_mode", "progress")),
    "evaluation": ("greedy evaluations and videos, at the first loop step (an Anakin chunk, "
                   "a Sebulba update) at or past each multiple of their interval", (
        "eval_interval", "eval_episodes", "eval_max_steps", "video_interval", "video_episodes")),
    "cluster": ("several processes (hosts) as one run (podracer.runs.distributed)", ("cluster",)),
}  # fmt: skip
_GROUPED = {name for _, names in HELP_GROUPS.values() for name in names}


def _group_fields(config_cls: type, group: str) -> list[str]:
    """`config_cls`'s fields in `group`, in the class's order ("layout": the ungrouped)."""
    names = [f.name for f in dataclasses.fields(config_cls) if f.name != "agent_config"]
    if group == "layout":
        return [n for n in names if n not in _GROUPED]
    return [n for n in names if n in HELP_GROUPS[group][1]]


def _runtime_groups(config_cls: type, base: Any) -> list[tuple[str, Any, Any]]:
    """One flattened (`OmitArgPrefixes`) dataclass field per `HELP_GROUPS` entry holding
    `config_cls`'s fields with `base`'s values as defaults: tyro draws a box per group and
    the flags keep their names. Each field keeps its type and its help, which tyro would
    read from the class's source (comments and docstrings) and cannot from a made class."""
    out = []
    for group, (title, _) in HELP_GROUPS.items():
        members = []
        for name in _group_fields(config_cls, group):
            nested = _nested_type(config_cls, name)
            if nested is None:
                members.append(_member(config_cls, name, getattr(base, name)))
            else:  # its fields flat in the group: built (and checked) after the parse
                value = getattr(base, name)
                members += [_member(nested, f.name, getattr(value, f.name))
                            for f in dataclasses.fields(nested)]  # fmt: skip
        if members:
            cls = dataclasses.make_dataclass(group, members, frozen=True)
            kind = Annotated[cls, tyro.conf.OmitArgPrefixes, tyro.conf.arg(help=title)]
            out.append((group, kind, dataclasses.field(default=cls())))
    return out


def _nested_type(config_cls: type, name: str) -> type | None:
    """The dataclass a field holds (`cluster`: DistributedConfig), else None. Its fields
    are flags of the field's group, and the parse builds it outside tyro: tyro would draw
    a validation error of a nested dataclass as a box, not one line."""
    kind = typing.get_type_hints(config_cls)[name]
    return kind if dataclasses.is_dataclass(kind) else None


def _member(owner: type, name: str, value: Any) -> tuple[str, Any, Any]:
    """A made dataclass's field for `owner`'s field `name`: its type, help and `value`."""
    kind = typing.get_type_hints(owner, include_extras=True)[name]
    doc = _field_help(owner, name)
    if doc:
        kind = Annotated[kind, tyro.conf.arg(help=doc)]
    if isinstance(value, dict | list | set):  # a dataclass takes no mutable default
        return name, kind, dataclasses.field(default_factory=lambda v=value: copy.deepcopy(v))
    return name, kind, dataclasses.field(default=value)


def _field_help(config_cls: type, name: str) -> str | None:
    # tyro's own reading of a field's comment or docstring (not public API; a test checks
    # that the help still shows).
    get = getattr(getattr(tyro, "_docstrings", None), "get_field_docstring", None)
    for cls in config_cls.__mro__:
        if get is None or name not in getattr(cls, "__dataclass_fields__", {}):
            continue
        try:
            doc = get(cls, name, ())
        except Exception:  # noqa: BLE001 - a help text is never worth failing the command
            return None
        if doc:
            return doc
    return None


def _initials(name: str) -> str:
    return "".join(word[0] for word in name.split("_") if word)


def _check_agent_flags(argv: list[str], agent: str, config_cls: type) -> None:
    """An unknown `--GROUP.NAME` is refused in one line naming the fields it may mean: by
    their initials (`lr`: `learning_rate`) as well as by spelling (tyro's guess is by
    spelling alone, and offers `--ppo.anneal-lr` for `--ppo.lr`)."""
    if not dataclasses.is_dataclass(config_cls):
        return
    group = flag_group(agent)
    names = sorted(f.name for f in dataclasses.fields(config_cls))
    for arg in argv:
        if not arg.startswith(f"--{group}."):
            continue
        flag = arg.split("=", 1)[0]
        head = flag[len(group) + 3 :].split(".")[0].replace("-", "_")  # nested: its field
        if head in names or (head.startswith("no_") and head[3:] in names) or head == "help":
            continue
        renamed = getattr(config_cls, "RENAMED", {}).get(head)
        if renamed:  # an earlier version's name
            new = f"--{group}.{renamed.replace('_', '-').rstrip('-')}{'_' * renamed.endswith('_')}"
            raise ConfigError(f"{flag} is now {new}")
        close = [n for n in names if _initials(n) == head]
        close += [n for n in difflib.get_close_matches(head, names, n=3) if n not in close]
        hint = (f"did you mean {' or '.join(f'--{group}.' + n.replace('_', '-') for n in close)}?"
                if close else f"`--agent {agent} --help` lists them")  # fmt: skip
        raise ConfigError(f"{flag} is not a flag of {config_cls.__name__}: {hint}")


def out_of_memory(error: BaseException, config: Any) -> str | None:
    """One line for a run whose programs do not fit the device's memory (XLA's
    RESOURCE_EXHAUSTED, raised at the first call of a program, on a TPU after minutes of
    compiling): what XLA asked for, and the sizes of this run that set it. None for any
    other error, which keeps its traceback."""
    seen = error
    while seen is not None and not str(seen).startswith("RESOURCE_EXHAUSTED"):
        seen = seen.__cause__ or seen.__context__
    if seen is None:
        return None
    asked = str(seen).splitlines()[0].removeprefix("RESOURCE_EXHAUSTED:").strip().rstrip(".")
    sizes = [f"{config.num_members} members (num_seeds x sweep points)"] * (config.num_members > 1)
    sizes += [f"{name} {getattr(config, name)}" for name in ("num_envs", "envs_per_thread")
              if hasattr(config, name)]  # fmt: skip
    holds = f"; this run holds {', '.join(sizes)}" if sizes else ""
    turns = " (or fewer at once: members_at_once)" * (config.num_members > 1)
    return (f"out of device memory ({asked}){holds}: fewer members{turns} or envs, or a "
            "smaller agent batch, need less")  # fmt: skip


def run_cli(config_cls: type, train: Callable[[Any], Any], argv: list[str] | None = None) -> int:
    """The command `config_cls.RUNTIME`: parses `argv`, trains, prints a summary (process
    0); returns the exit status."""
    signals.install()  # before anything slow: a signal during start-up is one line
    try:
        return _run_cli(config_cls, train, argv)
    except BrokenPipeError:  # `anakin --help | head`: the reader has gone, say nothing
        # Python's recipe: point stdout at devnull so the exit's flush cannot fail too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    finally:
        signals.uninstall()


def _run_cli(config_cls: type, train: Callable[[Any], Any], argv: list[str] | None) -> int:
    runtime = config_cls.RUNTIME
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        config, source = parse_cli(config_cls, argv, inspect.cleandoc(config_cls.__doc__ or ""))
    except ValueError as e:  # a field's validation (ConfigError or a config's own)
        print(f"{runtime}: error: {e}", file=sys.stderr)
        return 2
    # JAX and Orbax start here, after parsing (`--help` never waits for them).
    from podracer.runs.checkpoint import CheckpointError
    from podracer.runs.distributed import is_main_process
    from podracer.runs.distributed import shutdown_distributed
    from podracer.runs.result import FINAL_FRACTION
    from podracer.runs.result import final_return
    from podracer.runs.tools.aggregate import format_number

    if config.progress:
        print(f"{runtime}: {source}", file=sys.stderr, flush=True)
    try:
        result = train(config)
        main_process = is_main_process()
    except (ConfigError, CheckpointError) as e:
        print(f"{runtime}: error: {e}", file=sys.stderr)
        return 2
    except signals.Interrupted as e:  # its line was printed as the signal came
        return 128 + e.signum
    except RuntimeError as e:
        if (line := out_of_memory(e, config)) is None:
            raise
        print(f"{runtime}: error: {line}", file=sys.stderr)
        return 1
    finally:
        shutdown_distributed()  # after the final checkpoint, which train() wrote
    if main_process:
        ret = final_return(result)
        members = len({(r.get("member"), r.get("seed")) for r in result.history}) or 1
        kind = "members" if any("member" in r for r in result.history) else "seeds"
        over = f", mean of {members} {kind}" if members > 1 else ""
        hits = result.compile_cache_hits
        cached = f" ({hits} program{'s' * (hits != 1)} from the cache)" if hits else ""
        # SPS counts one member's env steps, as every row does; the sum over members too.
        each = f" each, {result.sps * members:,.0f} over all {members}" if members > 1 else ""
        print(
            f"{runtime}: {config.agent} on {config.env}"
            f"{' (interrupted)' if result.interrupted else ''}: {result.env_steps:,} env steps, "
            f"{result.sps:,.0f} SPS{each} after {result.compile_seconds:.1f}s compile{cached}, "
            f"final return {'n/a' if math.isnan(ret) else format_number(ret)} (last "
            f"{FINAL_FRACTION:.0%} of "
            f"steps{over}); run {result.run_dir}"
        )
        if kind == "members":  # a sweep: its points ranked
            from podracer.runs.tools.sweep_best import point_finals
            from podracer.runs.tools.sweep_best import sweep_table

            if getattr(config, "pbt_interval", 0):
                print(f"{runtime}: PBT's members by the values they started from (each "
                      "member's values since: pbt.jsonl in the run)")  # fmt: skip
            # The whole run's rows, as the return above and `podracer sweep-best` read them
            rows = [*result.earlier, *result.history]
            print(sweep_table(point_finals(rows), "charts/episodic_return"))
            print(f"{runtime}: `podracer sweep-best {result.run_dir}` writes the best point's "
                  "config")  # fmt: skip
    return 0
