"""The run config both runtimes share: one name per concept, in both command lines.

`AnakinConfig` and `SebulbaConfig` extend `RunConfig` with their own sizes (Anakin's
global `num_envs`, Sebulba's `envs_per_thread`, ...), so the flags the two have in common
(`--env`, `--seed`, `--eval-interval`, `--checkpoint-interval`, `--run-name`, ...) mean
the same thing on both. Every interval counts environment steps, whatever the runtime's
loop step is (an Anakin chunk, a Sebulba update): it fires after the first loop step at
or past each multiple.

`MAY_CHANGE_ON_RESUME` lists the fields a resumed run may change (budget, logging,
evaluation, placement, the compile cache); every other field changes what is learned,
and a resume that changes one is refused naming it.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import types
import typing
from collections.abc import Collection
from typing import Annotated
from typing import Any
from typing import ClassVar
from typing import Literal
from typing import Self

import tyro
from tyro.constructors import PrimitiveConstructorSpec

from podracer.agents import ConfigError
from podracer.agents import agent_entry
from podracer.agents import flag_group
from podracer.agents.validation import check_finite
from podracer.agents.validation import check_int
from podracer.agents.validation import fail
from podracer.runs.distributed import DistributedConfig

ROWS_PER_RUN = 100  # metric rows of a run by default (log_interval=0)


def to_jsonable(obj: Any) -> Any:
    """Dataclasses, tuples, numpy scalars -> JSON values (dataclass fields in order)."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_jsonable(v) for v in obj]
    if hasattr(obj, "item") and hasattr(obj, "shape") and obj.shape == ():  # numpy/jax scalar
        return obj.item()
    return obj


def _json_object(args: list[str]) -> dict[str, Any]:
    try:
        value = json.loads(args[0])
    except json.JSONDecodeError as e:
        raise ValueError(f"--env-kwargs must be a JSON object, got {args[0]!r} ({e})") from None
    if not isinstance(value, dict):
        raise ValueError(f"--env-kwargs must be a JSON object, got {args[0]!r}")
    return value


# A dict field given on the command line as one JSON object: --env-kwargs '{"size": 8}'.
JsonObject = Annotated[
    dict[str, Any],
    PrimitiveConstructorSpec(
        nargs=1, metavar="JSON", instance_from_str=_json_object,
        is_instance=lambda x: isinstance(x, dict), str_from_instance=lambda x: [json.dumps(x)],
    ),
]  # fmt: skip


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """A training run: what to train, for how long, and what it writes."""

    # An environment: a built-in name (podracer.envs.list_envs), a registered one, an entry
    # point's, or an import path module:attr (your own; see podracer.envs.registry).
    env: str = "catch"
    # Keyword arguments of the environment's factory, a JSON object on the command line:
    # --env-kwargs '{"size": 8}'.
    env_kwargs: JsonObject = dataclasses.field(default_factory=dict)
    # An agent: a built-in or registered name, an entry point's, or an import path
    # module:attr (podracer.agents.registry).
    agent: str = "qlambda"
    # The agent's hyperparameters, an instance of its registered config class (None: its
    # defaults). Command lines fill it from `--<agent>.*` flags over the env's preset.
    agent_config: Annotated[Any, tyro.conf.Suppress] = None
    seed: int = 0  # seeds the agent, its acting and the environments
    total_env_steps: int = 500_000  # rounded up to whole updates (`update_size`), said in a line
    # Wall-clock budget in seconds of this session (compile included); 0: none. The run
    # stops after the loop step that passes it, with its final checkpoint, as if that were
    # the last one; `--resume` with it runs another such session.
    max_wall_seconds: float = 0.0
    run_name: str | None = None  # the run directory runs_root/run_name; None: a new unique name
    runs_root: str = "runs"
    resume: bool = False  # continue runs_root/run_name from its newest checkpoint
    # Start from another run's params (either runtime): RUN[@STEP][:SEED], STEP latest
    # (default), best or a number, SEED a multi-seed run's seed index. The same agent and
    # network, an env of the same spec.
    init_from: str | None = None
    init_opt_state: bool = False  # with init_from: its optimizer state too (same optimizer)
    # Import the code a run directory's files name (`resume` and `--config` of a
    # config.json, `init_from`'s checkpoint) where it is not podracer's, an installed
    # plugin's, registered, imported or typed on this command line: as Hugging Face's
    # trust_remote_code (podracer.runs.trust). Never stored: a file cannot grant it.
    trust_code: bool = False
    log_interval: int = 0  # env steps between metric rows; 0: about 100 over the run
    # Evaluations, videos and checkpoints happen between the runtime's loop steps (an
    # Anakin chunk, a Sebulba update): at the first one at or past each multiple of their
    # interval, named by the env steps trained then.
    eval_interval: int = 0  # env steps between greedy evaluations; 0: none
    eval_episodes: int = 32  # episodes per evaluation
    eval_max_steps: int = 10_000  # per-episode step cap for envs without a time limit
    video_interval: int = 0  # env steps between videos of greedy episodes (videos/<steps>.mp4)
    video_episodes: int = 1  # episodes per video, one after another
    checkpoint_interval: int = 0  # env steps between checkpoints; 0: only the final one
    keep_checkpoints: int = 3  # newest checkpoints kept (with evaluation: also the best)
    tensorboard: bool = True  # TensorBoard events in the run directory
    wandb_project: str | None = None  # log to Weights & Biases (the wandb extra) when set
    wandb_entity: str | None = None
    wandb_mode: Literal["online", "offline"] = "online"  # offline: files only, no network
    # A status line with steps, SPS, return, elapsed time and ETA, and the start-up line
    # saying where the config came from (the preset chosen, a config file, a resume).
    progress: bool = True
    # JAX's persistent compilation cache, so a rerun or a resume loads its compiled
    # programs instead of compiling them again: a folder; "auto":
    # $JAX_COMPILATION_CACHE_DIR, else $XDG_CACHE_HOME/podracer/jax (~/.cache/...);
    # "none": off. A cache dir the program set in jax.config wins (podracer.runs.compile_cache).
    compile_cache: str = "auto"
    # Multi-host: --distributed, --coordinator-address, --num-processes, --process-id.
    cluster: Annotated[DistributedConfig, tyro.conf.arg(name="")] = DistributedConfig()

    RUNTIME: ClassVar[str] = "run"  # the runtime's name (its command): "anakin", "sebulba"
    # (agent, preset name) -> this runtime's sizes for that preset (podracer.runs.layouts).
    LAYOUTS: ClassVar[dict[tuple[str, str], dict[str, Any]]] = {}
    # Fields a resume may change; the rest define what is learned and must match.
    MAY_CHANGE_ON_RESUME: ClassVar[frozenset[str]] = frozenset({
        "total_env_steps", "max_wall_seconds", "run_name", "runs_root", "resume", "init_from",
        "init_opt_state", "trust_code",
        "log_interval", "eval_interval", "eval_episodes", "eval_max_steps", "video_interval",
        "video_episodes",
        "checkpoint_interval", "keep_checkpoints", "tensorboard", "wandb_project",
        "wandb_entity", "wandb_mode", "progress", "compile_cache", "cluster",
    })  # fmt: skip

    @property
    def num_members(self) -> int:
        """Trainings on a runtime's leading member axis (seeds, and Anakin's sweep points)."""
        return 1

    def member_tags(self) -> list[dict[str, Any]]:
        """What each member's rows carry to tell them apart (`Run.log`); [{}]: one."""
        return [{}]

    def check_members_at_once(self, members_are: str) -> None:
        """A runtime's `members_at_once` (members trained side by side; the others take
        turns, so that a program's temporaries fit the device) is 0 (all) or divides
        `num_members` (`members_are`: what they are, for the error), or a one-line
        ConfigError; the runtime's `__post_init__` calls it once its members are known. A
        divisor: a remainder would trace and compile a program twice (the last, smaller
        group's; `podracer.agents.vmap_in_turns`)."""
        check_int(self, "members_at_once", minimum=0)
        members, at_once = self.num_members, self.members_at_once
        if at_once and members % at_once:  # also: more than all of them
            divisors = ", ".join(str(k) for k in range(1, members + 1) if members % k == 0)
            fail(self, "members_at_once", f"0 (all) or a divisor of the run's {members} members "
                 f"({members_are}): {divisors}")  # fmt: skip

    @property
    def row_interval(self) -> int:
        """Env steps between metric rows: `log_interval`, or a hundredth of the run."""
        return self.log_interval or max(1, self.planned_env_steps() // ROWS_PER_RUN)

    def update_size(self, num_processes: int = 1) -> tuple[int, str]:
        """The env steps of one update of the whole run (every process's), and the fields
        that make them, for the line that says the budget rounds: a runtime's override.
        The harness's own loop makes single steps."""
        return 1, ""

    def planned_env_steps(self, num_processes: int = 1) -> int:
        """The env steps the run makes: `total_env_steps` rounded up to whole updates
        (the same unit on both runtimes, whatever calls or chunks make them)."""
        unit, _ = self.update_size(num_processes)
        return -(-self.total_env_steps // unit) * unit

    def rounding_line(self, num_processes: int = 1) -> str | None:
        """What a run prints before it compiles when its budget is not whole updates."""
        planned = self.planned_env_steps(num_processes)
        if planned == self.total_env_steps:
            return None
        unit, fields = self.update_size(num_processes)
        return (
            f"total_env_steps={self.total_env_steps:,} rounds up to {planned:,}: whole "
            f"updates of {unit:,} env steps ({fields})"
        )

    def __post_init__(self) -> None:
        check_finite(self)
        if not isinstance(self.env, str) or not self.env:
            fail(self, "env", "an environment name")
        if not isinstance(self.env_kwargs, dict) or not all(
            isinstance(k, str) for k in self.env_kwargs
        ):
            fail(self, "env_kwargs", "a dict of keyword arguments (str keys)", self.env_kwargs)
        try:
            json.dumps(self.env_kwargs, allow_nan=False)
        except (TypeError, ValueError):
            fail(self, "env_kwargs", "JSON values (numbers, strings, lists, dicts; finite): "
                 "config.json stores them", self.env_kwargs)  # fmt: skip
        try:  # an unknown name fails naming the close ones; an import path is checked
            entry = agent_entry(self.agent)
        except ConfigError as e:
            raise ConfigError(f"{type(self).__name__}.agent: {e}") from None
        if self.agent_config is None:
            object.__setattr__(self, "agent_config", entry.config_cls())
        elif not isinstance(self.agent_config, entry.config_cls):
            fail(self, "agent_config", f"a {entry.config_cls.__name__} for agent {self.agent!r}",
                 type(self.agent_config).__name__)  # fmt: skip
        check_int(self, "seed", minimum=0)
        check_int(self, "total_env_steps", "eval_episodes", "eval_max_steps", "keep_checkpoints",
                  "video_episodes")  # fmt: skip
        check_int(self, "log_interval", "eval_interval", "video_interval", "checkpoint_interval",
                  minimum=0)  # fmt: skip
        if not isinstance(self.max_wall_seconds, int | float) or self.max_wall_seconds < 0:
            fail(self, "max_wall_seconds", ">= 0 (0: no budget)")  # finite: check_finite
        if self.run_name is not None and (
            not self.run_name or "/" in self.run_name or self.run_name in (".", "..")
        ):
            fail(self, "run_name", "a folder name (no '/')")
        if self.resume and not self.run_name:
            fail(self, "resume", "used with run_name (the run to resume)", self.resume)
        if self.wandb_mode not in ("online", "offline"):
            fail(self, "wandb_mode", "'online' or 'offline'")
        if not isinstance(self.compile_cache, str) or not self.compile_cache:
            # The folder itself is checked (made, writable) when a run opens, not here:
            # a config read back from another machine's run must load.
            fail(self, "compile_cache", "a folder, 'auto' or 'none'")
        if not isinstance(self.cluster, DistributedConfig):
            fail(self, "cluster", "a DistributedConfig", type(self.cluster).__name__)

    @classmethod
    def from_preset(cls, env: str | None = None, agent: str | None = None,
                    preset: str | None = None, **overrides: Any) -> tuple[Self, str]:  # fmt: skip
        """The config the command line starts from for `env` and `agent` (the preset of the
        env's task or family, or `preset`; the agent's defaults where there is none), with
        `overrides` (fields of this config) on top. Returns `(config, source)`, `source`
        a line saying which preset applied."""
        from podracer.agents import find_preset
        from podracer.runs.layouts import apply_preset

        plain = cls()
        env, agent = env or plain.env, agent or plain.agent
        base = dataclasses.replace(plain, env=env, agent=agent, agent_config=None)
        found = find_preset(agent, env, preset)
        if found is None:
            source = f"no preset for {agent} on {env}: the agent's defaults"
        else:
            name, chosen = found
            base = apply_preset(base, chosen, name)
            source = f"preset {name!r} for {agent}: {chosen.source}"
        return base.replace(overrides), source

    def replace(self, changes: dict[str, Any] | None = None, /, **fields: Any) -> Self:
        """This config with fields changed, nested ones by dotted names as the command
        lines spell them (`-` or `_`): the agent's under its flag group, other nested
        configs under their field, the cluster's by their flag names::

            config.replace({"ppo.learning_rate": 1e-3, "num_envs": 64}, seed=3)

        A new `agent` starts from its defaults, then takes its dotted fields. An unknown
        name fails in one line, naming close ones; values are checked as the command
        lines' are."""
        changes = {k.replace("-", "_"): v for k, v in {**(changes or {}), **fields}.items()}
        base = self
        if changes.get("agent", self.agent) != self.agent:
            base = dataclasses.replace(self, agent=changes.pop("agent"), agent_config=None)
        group = flag_group(base.agent)
        flat = {f.name for f in dataclasses.fields(base.cluster)}  # flags without a prefix
        renamed = {}
        for key, value in changes.items():
            head, dot, rest = key.partition(".")
            if dot and head == group:
                key = f"agent_config.{rest}"
            elif not dot and key in flat and key not in _field_names(base):
                key = f"cluster.{key}"
            renamed[key] = value
        return _replace_fields(base, renamed, type(base).__name__, {group: "agent_config"})

    def check_rollout(
        self,
        rollout_length: int,
        envs_per_device: int,
        field: str = "rollout_length",
        envs_field: str = "num_envs",
    ) -> None:
        """Fails naming both fields when the agent splits rollouts into minibatches that
        do not divide them: the rollout's time steps (PPO, PQN), or each device's envs
        (`envs_per_device`, set by `envs_field`) where minibatches are whole sequences (a
        recurrent core, IMPALA); called by runtimes before compiling."""
        minibatches = getattr(self.agent_config, "num_minibatches", None)
        if not minibatches:
            return
        # Each minibatch splits again into num_microbatches slices (Q(lambda), PQN).
        slices = getattr(self.agent_config, "num_microbatches", 1)
        parts = minibatches * slices
        owner = type(self.agent_config).__name__
        what = f"{owner}.num_minibatches={minibatches}" + (
            f" x num_microbatches={slices}" if slices > 1 else "")  # fmt: skip
        if self.agent_config.minibatch_split == "envs":
            if envs_per_device % parts:
                fail(self, envs_field, f"such that each device's {envs_per_device} envs are "
                     f"divisible by {what} (its minibatches are whole sequences: they split "
                     "the envs)")  # fmt: skip
        elif rollout_length % parts:
            fail(self, field, f"divisible by {what}", rollout_length)

    def to_json(self) -> dict[str, Any]:
        """The config as written to `config.json` (field order kept), with a `sources`
        entry where the env or agent was registered by a call: the import paths that
        register it again in any other process (eval, resume, `--init-from`). `trust_code`
        is left out: a permission of this process, not part of the run."""
        data = {k: v for k, v in to_jsonable(self).items() if k != "trust_code"}
        sources = registered_sources(self.env, self.agent)
        return {**data, "sources": sources} if sources else data


def _field_names(obj: Any) -> list[str]:
    return [f.name for f in dataclasses.fields(obj)]


def _replace_fields(
    obj: Any, changes: dict[str, Any], owner: str, aliases: dict[str, str] | None = None
) -> Any:
    """`obj` (a dataclass) with `changes`, dotted keys replacing inside nested dataclasses."""
    names = _field_names(obj)
    top: dict[str, Any] = {}
    nested: dict[str, dict[str, Any]] = {}
    for key, value in changes.items():
        head, dot, rest = key.partition(".")
        if dot and head in names and not dataclasses.is_dataclass(getattr(obj, head)):
            raise ConfigError(f"{owner}.{head} is not a nested config: {key!r} names nothing")
        if head not in names:
            shown = [*(aliases or {}), *names]
            close = difflib.get_close_matches(head, shown, n=3)
            hint = f"; did you mean {close}?" if close else f"; its fields: {shown}"
            raise ConfigError(f"{owner} has no field {head!r}{hint}")
        if dot:
            nested.setdefault(head, {})[rest] = value
        else:
            top[head] = value
    for head, sub in nested.items():
        inner = top.get(head, getattr(obj, head))
        shown_as = {v: k for k, v in (aliases or {}).items()}.get(head, head)
        top[head] = _replace_fields(inner, sub, f"{owner}.{shown_as}")
    return dataclasses.replace(obj, **top)


def registered_sources(env: str, agent: str) -> dict[str, Any]:
    """Import paths of an env and an agent registered by call in this process (see
    `RunConfig.to_json`); empty for names every process finds by itself."""
    from podracer.agents.registry import agent_import_paths
    from podracer.envs import env_import_path

    sources: dict[str, Any] = {}
    env_path = env_import_path(env)
    if env_path is not None:
        sources["env"] = {"name": env, "factory": env_path}
    agent_paths = agent_import_paths(agent)
    if agent_paths is not None:
        sources["agent"] = {"name": agent, **agent_paths}
    return sources


def register_sources(
    data: dict[str, Any],
    owner: str = "config",
    trust_code: bool = False,
    typed: Collection[str] = (),
) -> None:
    """Registers what a stored config's `sources` name (an env or an agent registered by
    call where the run was trained), unless this process has them already. First, every
    piece of code the config names (sources, an import-path env or agent) must be trusted
    (`podracer.runs.trust.check_trusted`: `trust_code`, or `typed` on this command line),
    else a one-line ConfigError, before anything is imported."""
    from podracer.agents.registry import register_from_paths
    from podracer.envs import register
    from podracer.envs import registered_envs
    from podracer.runs.trust import check_trusted

    check_trusted(data, owner, trust_code, typed)
    sources = data.get("sources") or {}
    if not isinstance(sources, dict):
        raise ConfigError(f"{owner}.sources must be a JSON object")
    env = sources.get("env")
    if isinstance(env, dict) and env.get("name") not in registered_envs():
        try:
            register(env["name"], env["factory"])
        except (KeyError, ValueError) as e:
            raise ConfigError(f"{owner}.sources.env: {e}") from None
    agent = sources.get("agent")
    if isinstance(agent, dict):
        try:
            register_from_paths(agent["name"], agent)
        except KeyError as e:
            raise ConfigError(f"{owner}.sources.agent: missing {e}") from None


def changed_fields(stored: dict[str, Any], config: RunConfig) -> dict[str, tuple[Any, Any]]:
    """`{field: (stored value, new value)}` for every top-level field that differs.

    `agent_config` is compared field by field (`agent_config.learning_rate`, ...). A field
    the stored config lacks was added by a later version of the code: its default keeps
    the old behaviour, so it does not count as a change.
    """
    new = config.to_json()
    out = {}
    for name in sorted(set(stored) | set(new)):
        if name not in stored or name == "sources":  # where code lives, not what is learned
            continue
        old_value, new_value = stored.get(name), new.get(name)
        if name == "agent_config" and isinstance(old_value, dict) and isinstance(new_value, dict):
            old_value = renamed_fields(type(config.agent_config), old_value, "stored config")
            for sub in sorted(old_value):
                if _canonical(old_value[sub]) != _canonical(new_value.get(sub)):
                    out[f"agent_config.{sub}"] = (old_value[sub], new_value.get(sub))
        elif _canonical(old_value) != _canonical(new_value):
            out[name] = (old_value, new_value)
    return out


def renamed_fields(cls: type, data: dict[str, Any], owner: str) -> dict[str, Any]:
    """`data` (a stored `cls` config) with the fields `cls.RENAMED` maps from an earlier
    name under their present one, so that runs of earlier versions load and resume."""
    renamed = getattr(cls, "RENAMED", None) or {}
    if not any(old in data for old in renamed):
        return data
    out: dict[str, Any] = {}
    for key, value in data.items():
        name = renamed.get(key, key)
        if name != key and name in data:
            raise ConfigError(f"{owner} has both {key!r} and its present name {name!r}")
        out[name] = value
    return out


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def config_from_json(
    cls: type,
    data: dict[str, Any],
    owner: str = "config",
    trust_code: bool = False,
    typed: Collection[str] = (),
) -> Any:
    """Rebuilds a config dataclass from its `to_jsonable` form (e.g. a run's config.json).

    Nested dataclasses, tuples and optionals are restored from the field types; a run
    config's `agent_config` from the registered agent's config class. An unknown key
    fails naming it (a config written by another runtime or version). The code a run
    config names is imported only if trusted (`register_sources`: `trust_code`, `typed`);
    its `trust_code` stays False whatever the file says.
    """
    if not isinstance(data, dict):
        raise ConfigError(f"{owner} must be a JSON object, got {type(data).__name__}")
    if issubclass(cls, RunConfig):
        register_sources(data, owner, trust_code, typed)
        data = {k: v for k, v in data.items() if k not in ("sources", "trust_code")}
    data = renamed_fields(cls, data, owner)
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError(f"{owner} has fields {unknown} that {cls.__name__} does not have")
    values = {}
    for name, value in data.items():
        if name == "agent_config" and issubclass(cls, RunConfig):
            entry = agent_entry(data.get("agent", cls.agent))
            values[name] = config_from_json(entry.config_cls, value, f"{owner}.agent_config")
        else:
            values[name] = _from_json_value(hints[name], value, f"{owner}.{name}")
    return cls(**values)


def _from_json_value(hint: Any, value: Any, owner: str) -> Any:
    """`value` (from JSON) as the field typed `hint` holds it, or a one-line ConfigError
    naming the field and what it allows: a config file is checked field by field."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Annotated:
        return _from_json_value(args[0], value, owner)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is not type(None):
                try:
                    return _from_json_value(arg, value, owner)
                except ConfigError as e:
                    errors.append(str(e).partition(" must be ")[2].rpartition(", got")[0])
        allowed = " or ".join([*errors, *(["null"] if type(None) in args else [])])
        raise ConfigError(f"{owner} must be {allowed}, got {value!r}")
    if dataclasses.is_dataclass(hint):
        return config_from_json(hint, value, owner)
    if origin is Literal:
        if value not in args:
            raise ConfigError(f"{owner} must be one of {list(args)}, got {value!r}")
        return value
    if origin is tuple:
        if not isinstance(value, list | tuple):
            raise ConfigError(f"{owner} must be a list, got {value!r}")
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_from_json_value(args[0], v, owner) for v in value)
        if len(args) != len(value):
            raise ConfigError(f"{owner} must be a list of {len(args)} values, got {value!r}")
        return tuple(_from_json_value(a, v, owner) for a, v in zip(args, value, strict=True))
    if origin is dict or hint is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"{owner} must be a JSON object, got {value!r}")
        return value
    if hint is bool and not isinstance(value, bool):
        raise ConfigError(f"{owner} must be true or false, got {value!r}")
    is_number = isinstance(value, int | float) and not isinstance(value, bool)
    if hint is int and not (is_number and float(value).is_integer()):
        raise ConfigError(f"{owner} must be an integer, got {value!r}")
    if hint is int:
        return int(value)
    if hint is float and not is_number:
        raise ConfigError(f"{owner} must be a number, got {value!r}")
    if hint is float:
        return float(value)
    if hint is str and not isinstance(value, str):
        raise ConfigError(f"{owner} must be a string, got {value!r}")
    return value
