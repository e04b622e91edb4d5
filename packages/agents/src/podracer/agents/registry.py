"""Agents by name: a config class and a factory each; both command lines read this table.

Importing the registry does not import JAX: factories are named by import path and
loaded when an agent is built, so a CLI can list agents and their configs' flags fast.
A registered agent (`register_agent`) reaches `anakin` and `sebulba` with its flags
(`--agent NAME --NAME.field ...`) and no edit to either runtime.
"""

from __future__ import annotations

import dataclasses
import difflib
import importlib
from collections.abc import Callable
from typing import Any
from typing import NamedTuple

from podracer.agents.configs import ImpalaConfig
from podracer.agents.configs import MuZeroConfig
from podracer.agents.configs import PPOConfig
from podracer.agents.configs import PQNConfig
from podracer.agents.configs import QLambdaConfig
from podracer.agents.validation import ConfigError


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
        "MuZero: Gumbel search on a learned model, prioritised sequence replay",
    ),
}  # fmt: skip


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
    if not name or not name.replace("_", "").replace("-", "").isalnum():
        raise ConfigError(f"agent names are letters, digits, '-' and '_', got {name!r}")
    if not dataclasses.is_dataclass(config_cls):
        raise ConfigError(f"register_agent({name!r}): config_cls must be a dataclass")
    AGENTS[name] = AgentEntry(config_cls, factory, description, tuple(action_spaces))


def agent_entry(name: str) -> AgentEntry:
    """The registered agent `name`; an unknown name fails naming the close ones."""
    if name not in AGENTS:
        close = difflib.get_close_matches(name, AGENTS, n=3)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigError(f"unknown agent {name!r}; available: {sorted(AGENTS)}.{hint}")
    return AGENTS[name]


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


def _factory(entry: AgentEntry) -> Callable[..., Any]:
    if callable(entry.factory):
        return entry.factory
    module, _, function = entry.factory.partition(":")
    return getattr(importlib.import_module(module), function)


def make_agent(name: str, spec: Any, config: Any = None, total_updates: int | None = None):
    """Builds agent `name` for the env `spec`; `total_updates` lets schedules anneal.

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
    return _factory(entry)(spec, config, total_updates=total_updates)
