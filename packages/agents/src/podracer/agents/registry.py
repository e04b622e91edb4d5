"""Agents by name: a config class and a factory each; both command lines read this table.

Importing the registry does not import JAX: factories are named by import path and
loaded when an agent is built, so a CLI can list agents and their configs' flags fast.
Your own agent is named one of three ways, and reaches `anakin` and `sebulba` with its
flags (`--agent NAME --NAME.field ...`) and no edit to either runtime:

* a call: `register_agent("tiny", TinyConfig, make_tiny)`;
* an import path: `agent_entry("my_pkg.agents:make_tiny")` (the command lines'
  `--agent my_pkg.agents:make_tiny`, flags `--tiny.*`), which any process can rebuild;
* an entry point of an installed package, group `podracer.agents`:
  `tiny = "my_pkg.agents:make_tiny"`.

An import path or entry point names an `AgentEntry`, or a factory
`make_tiny(spec, config: TinyConfig, total_updates=None) -> Agent` whose `config`
annotation is its config class (its docstring's first line describes it). Import paths
resolve in `podracer.envs.imports`, as environments' do: what one names is checked
before it is called (a factory must be annotated `-> Agent`; an `AgentEntry`'s factory
string too), so `os:system` is refused, never run.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import importlib.metadata
import inspect
import sys
import typing
from collections.abc import Callable
from collections.abc import Mapping
from typing import Any
from typing import NamedTuple

from podracer.agents.configs import ImpalaConfig
from podracer.agents.configs import MuZeroConfig
from podracer.agents.configs import PPOConfig
from podracer.agents.configs import PQNConfig
from podracer.agents.configs import QLambdaConfig
from podracer.agents.hyper import check_hyper
from podracer.agents.validation import ConfigError
from podracer.envs.imports import import_path_of
from podracer.envs.imports import resolve
from podracer.envs.imports import split_import_path


class AgentEntry(NamedTuple):
    """One registered agent."""

    config_cls: type  # a frozen dataclass of hyperparameters (its defaults: a valid agent)
    # factory(spec, config, total_updates=None) -> Agent, or "module:function" to import
    # on first use.
    factory: Callable[..., Any] | str
    description: str = ""  # one line, shown as the title of the agent's flag group
    action_spaces: tuple[str, ...] = ("discrete",)  # "discrete" and/or "continuous"


AGENTS: dict[str, AgentEntry] = {
    "qlambda": AgentEntry(
        QLambdaConfig, "podracer.agents.qlambda:make_qlambda",
        "Q(lambda): Peng's Q(lambda) returns, epsilon-greedy (the Podracer demo agent)",
    ),
    "pqn": AgentEntry(
        PQNConfig, "podracer.agents.qlambda:make_qlambda",
        "PQN: Q(lambda) with LayerNorm, minibatch epochs, an epsilon schedule (Gallici et al.)",
    ),
    "impala": AgentEntry(
        ImpalaConfig, "podracer.agents.impala:make_impala",
        "IMPALA: V-trace actor-critic (Espeholt et al., 2018)",
        ("discrete", "continuous"),
    ),
    "ppo": AgentEntry(
        PPOConfig, "podracer.agents.ppo:make_ppo",
        "PPO: clipped surrogate and GAE (Schulman et al., 2017)",
        ("discrete", "continuous"),
    ),
    "muzero": AgentEntry(
        MuZeroConfig, "podracer.agents.muzero:make_muzero",
        "MuZero: Gumbel search on a learned model, prioritised sequence replay (Sampled "
        "MuZero in action boxes)",
        ("discrete", "continuous"),
    ),
}  # fmt: skip


_BUILT_IN = frozenset(AGENTS)


def register_agent(
    name: str,
    config_cls: type,
    factory: Callable[..., Any] | str,
    description: str = "",
    action_spaces: tuple[str, ...] = ("discrete",),
) -> None:
    """Adds an agent: `factory(spec, config, total_updates=None) -> Agent`.

    `config_cls` must be a dataclass whose defaults build a valid agent; its fields
    become the `--NAME.*` flags of both command lines.
    """
    if not name or not name.replace("_", "").isalnum() or not name[0].isalpha():
        raise ConfigError(f"agent names are letters, digits and '_' (a flag prefix), "
                          f"starting with a letter, got {name!r}")  # fmt: skip
    if not dataclasses.is_dataclass(config_cls):
        raise ConfigError(f"register_agent({name!r}): config_cls must be a dataclass")
    AGENTS[name] = AgentEntry(config_cls, factory, description, tuple(action_spaces))


ENTRY_POINT_GROUP = "podracer.agents"
_BROKEN: dict[str, str] = {}  # entry-point agents that failed to load: name -> why


def agent_entry(name: str) -> AgentEntry:
    """The agent `name`: registered by call, an installed package's entry point, or an
    import path "module:attr" (imported and registered under that name); an unknown name
    fails naming the close ones."""
    if name not in AGENTS:
        load_entry_points()
    if name not in AGENTS and name in _BROKEN:
        raise ConfigError(f"agent {name!r} cannot load ({_BROKEN[name]})")
    if name not in AGENTS and _is_import_path(name):
        AGENTS[name] = as_agent_entry(_import(name, f"agent {name!r}"), name)
    if name not in AGENTS:
        close = difflib.get_close_matches(name, AGENTS, n=3)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"unknown agent {name!r}; available: {sorted(AGENTS)}.{hint}")
    return AGENTS[name]


@functools.cache
def load_entry_points() -> None:
    """Adds the agents of installed packages' `podracer.agents` entry points (once per
    process; a name registered by call keeps its own)."""
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ep.name not in AGENTS:
            owner = f"agent {ep.name!r} (entry point {ep.value!r})"
            try:
                AGENTS[ep.name] = as_agent_entry(_import(f"{ep.module}:{ep.attr}", owner),
                                                 ep.name)  # fmt: skip
            except Exception as e:  # noqa: BLE001 - reported when the agent is asked for
                # One broken package must not stop runs of every other agent.
                _BROKEN[ep.name] = f"entry point {ep.value!r}: {type(e).__name__}: {e}"


def as_agent_entry(obj: Any, name: str) -> AgentEntry:
    """An `AgentEntry`, or a factory whose `config` parameter is annotated with its
    config dataclass, as an `AgentEntry`."""
    if isinstance(obj, AgentEntry):
        return obj
    if not callable(obj):
        raise ConfigError(f"agent {name!r}: expected an AgentEntry or a factory, got "
                          f"{type(obj).__name__}")  # fmt: skip
    try:
        config_cls = typing.get_type_hints(obj).get("config")
    except Exception:  # noqa: BLE001 - unresolvable annotations: reported as missing
        config_cls = None
    if not (isinstance(config_cls, type) and dataclasses.is_dataclass(config_cls)):
        raise ConfigError(
            f"agent {name!r}: its factory's `config` parameter must be annotated with its "
            f"config dataclass (def make(spec, config: MyConfig, total_updates=None)), or "
            f"name an AgentEntry(config_cls, factory)"
        )
    doc = (obj.__doc__ or "").strip().splitlines()
    return AgentEntry(config_cls, obj, doc[0] if doc else "", ("discrete", "continuous"))


def _is_import_path(name: str) -> bool:
    return split_import_path(name) is not None


def is_agent_class(cls: type) -> bool:
    """Whether `cls` is `podracer.agents.Agent` or a subclass (loaded, as any annotation
    naming it was; never imported here: the registry imports no JAX)."""
    types_module = sys.modules.get("podracer.agents.types")
    return types_module is not None and issubclass(cls, types_module.Agent)


ACCEPTED = (
    "an AgentEntry, or a factory annotated to return an Agent "
    "(def make(spec, config: MyConfig, total_updates=None) -> Agent)"
)


def _is_config_class(cls: type) -> bool:
    return dataclasses.is_dataclass(cls)


def _import(path: str, owner: str, config_class: bool = False) -> Any:
    """What `path` names, checked before anything calls it: an `AgentEntry` or a factory
    annotated `-> Agent` (`config_class`: a config dataclass); a one-line ConfigError."""
    try:
        if config_class:
            return resolve(path, owner, _is_config_class, "a config dataclass",
                           names=())  # fmt: skip
        return resolve(path, owner, is_agent_class, ACCEPTED, names=("Agent",), classes=False,
                       instance=lambda obj: isinstance(obj, AgentEntry))  # fmt: skip
    except (ImportError, ValueError) as e:
        raise ConfigError(str(e)) from None


def flag_group(name: str) -> str:
    """The command lines' flag prefix of agent `name` (`--NAME.field`): the name itself,
    or for an import path its attribute, less a `make_` prefix (`my.mod:make_tiny` ->
    `tiny`)."""
    if ":" not in name:
        return name
    attr = name.rpartition(":")[2].rpartition(".")[2]
    return (attr[len("make_") :] if attr.startswith("make_") else attr).lower()


def agent_import_paths(name: str) -> dict[str, Any] | None:
    """What rebuilds an agent registered by call in another process: its config class's
    and factory's import paths (None for built-in, entry-point and import-path agents,
    which any process finds by name, and where either path is not importable)."""
    if name in _BUILT_IN or _is_import_path(name) or name not in AGENTS:
        return None
    entry = AGENTS[name]
    factory = entry.factory if isinstance(entry.factory, str) else import_path_of(entry.factory)
    config_cls = import_path_of(entry.config_cls)
    if factory is None or config_cls is None:
        return None
    return {"config_cls": config_cls, "factory": factory, "description": entry.description,
            "action_spaces": list(entry.action_spaces)}  # fmt: skip


def register_from_paths(name: str, paths: dict[str, Any]) -> None:
    """Registers agent `name` from `agent_import_paths`'s record, unless it is registered."""
    if name in AGENTS:
        return
    spaces = tuple(paths.get("action_spaces", ("discrete",)))
    config_cls = _import(paths["config_cls"], f"agent {name!r}: its config class",
                         config_class=True)  # fmt: skip
    register_agent(name, config_cls, paths["factory"], paths.get("description", ""), spaces)


def agent_config(name: str, **overrides: Any) -> Any:
    """The default config of agent `name`, with `overrides` (validated)."""
    config_cls = agent_entry(name).config_cls
    fields = {f.name for f in dataclasses.fields(config_cls)}
    unknown = set(overrides) - fields
    if unknown:
        raise ConfigError(
            f"{config_cls.__name__} has no field(s) {sorted(unknown)}; fields: {sorted(fields)}"
        )
    return config_cls(**overrides)


def _factory(entry: AgentEntry, name: str) -> Callable[..., Any]:
    if callable(entry.factory):
        return entry.factory
    factory = _import(entry.factory, f"agent {name!r}: its factory")
    if isinstance(factory, AgentEntry):
        raise ConfigError(f"agent {name!r}: its factory {entry.factory!r} is an AgentEntry, "
                          f"not a factory")  # fmt: skip
    return factory


def make_agent(
    name: str,
    spec: Any,
    config: Any = None,
    total_updates: int | None = None,
    hyper: Mapping[str, Any] | None = None,
):
    """Builds agent `name` for the env `spec`; `total_updates` lets schedules anneal;
    `hyper`, a sweep's or a population's member's values of the config's `SWEEPABLE`
    numbers (`podracer.agents.hyper`; traced scalars inside its program).

    Fails with a `ConfigError` before anything compiles where the config cannot serve
    the env (a convolutional torso on vector observations, say).
    """
    entry = agent_entry(name)
    config = entry.config_cls() if config is None else config
    if not isinstance(config, entry.config_cls):
        raise TypeError(
            f"agent {name!r} takes a {entry.config_cls.__name__}, got {type(config).__name__}"
        )
    kind = "continuous" if getattr(spec, "is_continuous", False) else "discrete"
    if kind not in entry.action_spaces:
        able = sorted(n for n, e in AGENTS.items() if kind in e.action_spaces)
        raise ConfigError(
            f"agent {name!r} acts in {' or '.join(entry.action_spaces)} action spaces; "
            f"{spec.name} has {kind} actions"
            + (f" (agents for them: {able})" if able else " (no registered agent handles them)")
        )
    factory = _factory(entry, name)
    if not hyper:  # a factory need not take `hyper` unless its config declares SWEEPABLE
        return factory(spec, config, total_updates=total_updates)
    check_hyper(config, hyper)
    if "hyper" not in inspect.signature(factory).parameters:
        raise ConfigError(f"agent {name!r}: {entry.config_cls.__name__} declares SWEEPABLE "
                          f"but its factory takes no `hyper` (def make(spec, config, "
                          f"total_updates=None, hyper=None))")  # fmt: skip
    return factory(spec, config, total_updates=total_updates, hyper=hyper)
