"""Agents by name, each a factory from its frozen config dataclass."""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable
from typing import Any

from podracer.agents.impala import ImpalaConfig
from podracer.agents.impala import make_impala
from podracer.agents.muzero import MuZeroConfig
from podracer.agents.muzero import make_muzero
from podracer.agents.ppo import PPOConfig
from podracer.agents.ppo import make_ppo
from podracer.agents.qlambda import QLambdaConfig
from podracer.agents.qlambda import make_qlambda
from podracer.agents.types import Agent
from podracer.envs import EnvSpec

AGENTS: dict[str, tuple[type, Callable[..., Agent]]] = {
    "qlambda": (QLambdaConfig, make_qlambda),
    "impala": (ImpalaConfig, make_impala),
    "ppo": (PPOConfig, make_ppo),
    "muzero": (MuZeroConfig, make_muzero),
}


def register_agent(name: str, config_cls: type, factory: Callable[..., Agent]) -> None:
    """Adds an agent: `factory(spec, config, total_updates=None) -> Agent`."""
    AGENTS[name] = (config_cls, factory)


def _lookup(name: str) -> tuple[type, Callable[..., Agent]]:
    if name not in AGENTS:
        close = difflib.get_close_matches(name, AGENTS, n=3)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ValueError(f"unknown agent {name!r}; available: {sorted(AGENTS)}.{hint}")
    return AGENTS[name]


def agent_config(name: str, **overrides: Any) -> Any:
    """The default config of agent `name`, with `overrides` (validated)."""
    config_cls, _ = _lookup(name)
    fields = {f.name for f in dataclasses.fields(config_cls)}
    unknown = set(overrides) - fields
    if unknown:
        raise ValueError(f"{config_cls.__name__} has no field(s) {sorted(unknown)}; fields: {sorted(fields)}")
    return config_cls(**overrides)


def make_agent(name: str, spec: EnvSpec, config: Any = None, total_updates: int | None = None) -> Agent:
    """Builds agent `name` for `spec`; `total_updates` lets schedules anneal over a run."""
    config_cls, factory = _lookup(name)
    config = config_cls() if config is None else config
    if not isinstance(config, config_cls):
        raise TypeError(f"agent {name!r} takes a {config_cls.__name__}, got {type(config).__name__}")
    return factory(spec, config, total_updates=total_updates)
