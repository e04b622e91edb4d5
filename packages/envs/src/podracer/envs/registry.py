"""Environments by name: `make("catch")`, `make("gymnax:CartPole-v1")`, `make("brax:ant")`,
`make_host("envpool:Pong-v5", num_envs=64)`, `make_host("catch", num_envs=8)`.

Names are `<source>:<task>` (or "catch"). `make` builds a pure-JAX `JaxEnv` (Anakin),
`make_host` a batched `HostEnv` (Sebulba): envpool's C++ pools, or any `make` name run
by `as_host_env`. Every refusal is one line and comes before anything is built or
compiled: a host env asked of `make`, a missing extra, an unknown name (with close
matches from the names that call accepts), an unsupported space.
"""

from __future__ import annotations

import difflib
import functools
import importlib.util
from typing import Any

from podracer.envs.checks import check_sizes
from podracer.envs.types import HostEnv
from podracer.envs.types import JaxEnv

_GYMNAX = "gymnax:"
_ENVPOOL = "envpool:"
_BRAX = "brax:"
_OWN_JAX_ENVS = ("catch",)
_EXTRAS = {_GYMNAX: "gymnax", _ENVPOOL: "envpool", _BRAX: "brax"}

# envpool tasks that exist as a JaxEnv too, suggested when `make` is given the envpool one:
# classic control in gymnax, and brax's versions of the gym MuJoCo tasks.
_GYMNAX_TWINS = (
    "CartPole-v1",
    "Acrobot-v1",
    "MountainCar-v0",
    "MountainCarContinuous-v0",
    "Pendulum-v1",
)
_BRAX_TWINS = {  # envpool MuJoCo task (any version) -> brax name
    "Ant": "ant",
    "HalfCheetah": "halfcheetah",
    "Hopper": "hopper",
    "Humanoid": "humanoid",
    "HumanoidStandup": "humanoidstandup",
    "InvertedDoublePendulum": "inverted_double_pendulum",
    "InvertedPendulum": "inverted_pendulum",
    "Pusher": "pusher",
    "Reacher": "reacher",
    "Walker2d": "walker2d",
}


def _jax_twin(task: str) -> str | None:
    if task in _GYMNAX_TWINS:
        return _GYMNAX + task
    brax = _BRAX_TWINS.get(task.rsplit("-v", 1)[0])
    return None if brax is None else _BRAX + brax


def _installed(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def _require(prefix: str, name: str) -> None:
    """Raises a one-line ImportError if the extra that `name` needs is not installed."""
    extra = _EXTRAS[prefix]
    if not _installed(extra):
        raise ImportError(
            f"{name} needs the {extra} extra, which is not installed: "
            f"pip install 'podracer-envs[{extra}]'"
        )


def _gymnax_names() -> list[str]:
    if not _installed("gymnax"):
        return []
    import gymnax

    return [_GYMNAX + n for n in gymnax.registered_envs]


def _brax_names() -> list[str]:
    if not _installed("brax"):
        return []
    from podracer.envs.brax_env import BRAX_ENVS  # no brax import: the list is ours

    return [_BRAX + n for n in BRAX_ENVS]


def _envpool_tasks() -> list[str]:
    if not _installed("envpool"):
        return []
    import envpool

    return list(envpool.list_all_envs())


@functools.cache
def _envpool_names() -> tuple[str, ...]:
    """envpool tasks that `make_host` accepts (array observations, Discrete/Box actions).

    Decided from each task's spec, as `make_envpool` does. Atari specs cost ~0.2 s each
    to build (ROM loading) and are all `Discrete` actions over image `Box` observations,
    so Atari tasks are taken from envpool's registry without building their specs.
    """
    import warnings

    from podracer.envs.actions import action_space_fields
    from podracer.envs.envpool_env import check_observation_space

    tasks = _envpool_tasks()
    if not tasks:
        return ()
    import envpool

    registry = getattr(getattr(envpool, "registration", None), "registry", None)
    families = {t: spec[0] for t, spec in getattr(registry, "specs", {}).items()}
    names = []
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*precision lowered.*", category=UserWarning)
        for task in tasks:
            if families.get(task) == "envpool.atari":
                names.append(_ENVPOOL + task)
                continue
            try:
                spec = envpool.make_spec(task)
                action_space_fields(task, spec.action_space)
                check_observation_space(task, spec.observation_space)
            except Exception:  # noqa: BLE001 - any failure means make_host refuses it
                continue
            names.append(_ENVPOOL + task)
    return tuple(names)


def is_jax_env(name: str) -> bool:
    """Whether `name` names a JaxEnv (`make`; also runs on the host through `make_host`),
    as opposed to a host-only env (envpool's)."""
    return name == "catch" or name.startswith((_GYMNAX, _BRAX))


def list_envs(kind: str = "all") -> list[str]:
    """Names `make` ("jax") or `make_host` ("host") accepts; "all" is both. Extras installed only.

    Continuous-action envs are included. Listing envpool names ("host", "all") builds
    envpool's task specs once per process (about a second).
    """
    if kind not in ("all", "jax", "host"):
        raise ValueError(f"kind must be 'all', 'jax' or 'host', got {kind!r}")
    names = [*_OWN_JAX_ENVS, *_gymnax_names(), *_brax_names()]
    return names if kind == "jax" else [*names, *_envpool_names()]


def _close_matches(name: str, names: list[str]) -> list[str]:
    close = difflib.get_close_matches(name, names, n=5, cutoff=0.6)
    if not close:  # match on the task alone, e.g. "gymnax:Cartpole-v1" or "CartPole-v1"
        tasks: dict[str, str] = {}
        for n in names:
            tasks.setdefault(n.split(":", 1)[-1], n)
        task = name.split(":", 1)[-1]
        close = [tasks[t] for t in difflib.get_close_matches(task, tasks, n=5)]
    return close


def _unknown(name: str, names: list[str], what: str = "environment") -> ValueError:
    close = _close_matches(name, names)
    hint = f"did you mean {close}? " if close else ""
    shown = names if len(names) <= 60 else [*names[:60], f"... ({len(names) - 60} more)"]
    return ValueError(f"unknown {what} {name!r}; {hint}available: {shown}")


def _host_only(name: str) -> ValueError:
    twin = _jax_twin(name[len(_ENVPOOL) :])
    also = f"; the same task as a JaxEnv: make({twin!r})" if twin else ""
    return ValueError(
        f"{name!r} is a host environment (envpool, stepped on the CPU), not a JaxEnv: "
        f"run it with Sebulba or podracer.envs.make_host({name!r}, num_envs=...){also}"
    )


def make(name: str, **kwargs: Any) -> JaxEnv:
    """A pure-JAX environment by name: "catch", "gymnax:<id>" or "brax:<name>".

    `kwargs` go to `Catch(...)`, to `make_gymnax` (gymnax params such as
    `max_steps_in_episode`, and `env_kwargs` for the gymnax constructor) or to
    `make_brax` (`max_episode_steps`, and brax constructor arguments such as `backend`).
    """
    if name == "catch":
        from podracer.envs.catch import Catch

        return Catch(**kwargs)
    if name.startswith(_ENVPOOL):
        raise _host_only(name)
    if name.startswith(_GYMNAX):
        _require(_GYMNAX, name)
        from podracer.envs.gymnax_env import make_gymnax

        if name not in _gymnax_names():
            raise _unknown(name, list_envs("jax"))
        return make_gymnax(name[len(_GYMNAX) :], **kwargs)
    if name.startswith(_BRAX):
        _require(_BRAX, name)
        from podracer.envs.brax_env import make_brax

        return make_brax(name[len(_BRAX) :], **kwargs)
    raise _unknown(name, list_envs("jax"))


def make_host(
    name: str, num_envs: int, batch_size: int | None = None, seed: int = 0, **kwargs: Any
) -> HostEnv:
    """A batched host environment by name: "envpool:<task>" or any `make` name.

    `kwargs` go to `make_envpool` (e.g. `max_episode_steps`, `atari=AtariOptions(...)`,
    `episodic_life=True`) or to `make` (a JaxEnv, then run by `as_host_env`).
    """
    batch_size = check_sizes(num_envs, batch_size)
    if name.startswith(_ENVPOOL):
        _require(_ENVPOOL, name)
        from podracer.envs.envpool_env import make_envpool

        if name[len(_ENVPOOL) :] not in _envpool_tasks():
            raise _unknown(name, list(_envpool_names()))
        return make_envpool(name[len(_ENVPOOL) :], num_envs, batch_size, seed, **kwargs)
    if name in _OWN_JAX_ENVS or name.startswith((_GYMNAX, _BRAX)):
        from podracer.envs.host import as_host_env

        return as_host_env(make(name, **kwargs), num_envs, seed=seed, batch_size=batch_size)
    raise _unknown(name, list_envs("host"))
