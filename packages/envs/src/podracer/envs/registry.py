"""Environments by name: `make("catch")`, `make("gymnax:CartPole-v1")`,
`make_host("envpool:Pong-v5", num_envs=64)`, `make_host("catch", num_envs=8)`.
"""

from __future__ import annotations

import difflib
from typing import Any

from podracer.envs.catch import Catch
from podracer.envs.checks import check_sizes
from podracer.envs.host import as_host_env
from podracer.envs.types import HostEnv
from podracer.envs.types import JaxEnv

_GYMNAX = "gymnax:"
_ENVPOOL = "envpool:"
_OWN_JAX_ENVS = ("catch",)


def _gymnax_names() -> list[str]:
    try:
        import gymnax
    except ImportError:
        return []
    return [_GYMNAX + n for n in gymnax.registered_envs]


def _envpool_names() -> list[str]:
    try:
        import envpool
    except ImportError:
        return []
    return [_ENVPOOL + n for n in envpool.list_all_envs()]


def list_envs(kind: str = "all") -> list[str]:
    """Names `make` ("jax") or `make_host` ("host": all of them) accepts; extras installed only.

    gymnax names include its continuous-action environments, which `make` rejects.
    """
    if kind not in ("all", "jax", "host"):
        raise ValueError(f"kind must be 'all', 'jax' or 'host', got {kind!r}")
    names = [*_OWN_JAX_ENVS, *_gymnax_names()]
    return names if kind == "jax" else [*names, *_envpool_names()]


def _unknown(name: str, names: list[str]) -> ValueError:
    close = difflib.get_close_matches(name, names, n=5, cutoff=0.6)
    if not close and ":" in name:  # match on the task alone, e.g. "gymnax:Cartpole-v1"
        tasks = {n.split(":", 1)[-1]: n for n in names}
        close = [tasks[t] for t in difflib.get_close_matches(name.split(":", 1)[1], tasks, n=5)]
    hint = f"did you mean {close}? " if close else ""
    shown = names if len(names) <= 60 else [*names[:60], f"... ({len(names) - 60} more)"]
    return ValueError(f"unknown environment {name!r}; {hint}available: {shown}")


def make(name: str, **kwargs: Any) -> JaxEnv:
    """A pure-JAX environment by name: "catch" or "gymnax:<id>".

    `kwargs` go to `Catch(...)` or to `make_gymnax` (gymnax params such as
    `max_steps_in_episode`, and `env_kwargs` for the gymnax constructor).
    """
    if name == "catch":
        return Catch(**kwargs)
    if name.startswith(_GYMNAX):
        from podracer.envs.gymnax_env import make_gymnax

        gymnax_names = _gymnax_names()
        if gymnax_names and name not in gymnax_names:
            raise _unknown(name, list_envs("jax"))
        return make_gymnax(name[len(_GYMNAX) :], **kwargs)
    raise _unknown(name, list_envs("jax" if not name.startswith(_ENVPOOL) else "all"))


def make_host(
    name: str, num_envs: int, batch_size: int | None = None, seed: int = 0, **kwargs: Any
) -> HostEnv:
    """A batched host environment by name: "envpool:<task>" or any `make` name.

    `kwargs` go to `make_envpool` (e.g. `max_episode_steps`, `atari=AtariOptions(...)`,
    `episodic_life=True`) or to `make` (a JaxEnv, then run by `as_host_env`).
    """
    batch_size = check_sizes(num_envs, batch_size)
    if name.startswith(_ENVPOOL):
        from podracer.envs.envpool_env import make_envpool

        envpool_names = _envpool_names()
        if envpool_names and name not in envpool_names:
            raise _unknown(name, envpool_names)
        return make_envpool(name[len(_ENVPOOL) :], num_envs, batch_size, seed, **kwargs)
    if name == "catch" or name.startswith(_GYMNAX):
        return as_host_env(make(name, **kwargs), num_envs, seed=seed, batch_size=batch_size)
    raise _unknown(name, list_envs("host"))
