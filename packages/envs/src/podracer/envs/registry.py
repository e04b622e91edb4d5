"""Environments by name: `make("catch")`, `make("gymnax:CartPole-v1")`, `make("brax:ant")`,
`make("craftax:Craftax-Symbolic-v1")`, `make("jumanji:Snake-v1")`,
`make_host("envpool:Pong-v5", num_envs=64)`, `make_host("ale:Pong", num_envs=64)`,
`make_host("gymnasium:CartPole-v1", 8)`, `make_host("catch", num_envs=8)`.

Built-in names are `<source>:<task>` (or "catch"). `make` builds a pure-JAX `JaxEnv`
(Anakin): gymnax, brax, craftax (`CRAFTAX_ENVS`), jumanji (its registered ids). `make_host`
builds a batched `HostEnv` (Sebulba): envpool's C++ pools, ale-py's native Atari vector
env (`ale:<Game>`), a gymnasium vector env of any id in gymnasium's registry
(`gymnasium:<module>:<id>` imports the module that registers it first), or any `make` name
run by `as_host_env`. envpool, ale and gymnasium names are host only: `make` refuses them,
naming the JaxEnv of the same task where there is one.

Your own environments are found the same way, named one of three ways:

* a call: `register("corridor", Corridor)` (a factory, a class, or a gymnax
  `Environment` class or instance, adapted);
* an import path: `make("my_pkg.envs:Corridor", size=8)`, which is also a name any
  process can rebuild (the command lines' `--env my_pkg.envs:Corridor`);
* an entry point of an installed package, group `podracer.envs`:
  `corridor = "my_pkg.envs:Corridor"`.

A factory is called with the env's keyword arguments. It makes a `JaxEnv`, or a
`HostEnv` when it takes a `num_envs` argument (it gets `num_envs`, `seed` and, if it
takes one, `batch_size`). What an import path (or an entry point, or a run's recorded
`sources`) names is checked before it is called (`podracer.envs.imports`): an env class
(`reset` and `step`), a gymnax `Environment`, or a function annotated to return one
(`def corridor(size: int = 5) -> JaxEnv`); `os:system` is refused, never run. Every
refusal is one line and comes before anything is built or compiled: a host env asked of
`make`, a missing extra, an unknown name (with close matches from the names that call
accepts), an unsupported space, an import path to something else, a module that fails
to import.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import importlib.metadata
import importlib.util
import inspect
from collections.abc import Callable
from typing import Any
from typing import Literal

from podracer.envs.checks import check_sizes
from podracer.envs.extras import install_command
from podracer.envs.imports import import_path_of
from podracer.envs.imports import resolve
from podracer.envs.imports import split_import_path
from podracer.envs.names import unknown_name
from podracer.envs.types import HostEnv
from podracer.envs.types import JaxEnv

_GYMNAX = "gymnax:"
_ENVPOOL = "envpool:"
_BRAX = "brax:"
_GYMNASIUM = "gymnasium:"
_CRAFTAX = "craftax:"
_JUMANJI = "jumanji:"
_ALE = "ale:"
_OWN_JAX_ENVS = ("catch",)
_EXTRAS = {
    _GYMNAX: "gymnax",
    _ENVPOOL: "envpool",
    _BRAX: "brax",
    _GYMNASIUM: "gymnasium",
    _CRAFTAX: "craftax",
    _JUMANJI: "jumanji",
    _ALE: "atari",
}
_MODULES = {_ALE: "ale_py"}  # an extra's module, where its name differs from the extra's
_JAX_SOURCES = (_GYMNAX, _BRAX, _CRAFTAX, _JUMANJI)  # `make` names, also run by make_host
_HOST_SOURCES = (_ENVPOOL, _GYMNASIUM, _ALE)  # `make_host` names only

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
    if not _installed(_MODULES.get(prefix, extra)):
        raise ImportError(
            f"{name} needs the {extra} extra, which is not installed: "
            + install_command("podracer-envs", extra)
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


def _gymnasium_names() -> list[str]:
    """Every id in gymnasium's registry (none is built to list it; `make_host` refuses one
    whose spaces it does not support, in one line)."""
    if not _installed("gymnasium"):
        return []
    import gymnasium

    return [_GYMNASIUM + n for n in gymnasium.registry]


def _ale_names() -> list[str]:
    """ale-py's games, `ale:<Game>` (from its ROM list; no emulator is started)."""
    if not _installed("ale_py"):
        return []
    from podracer.envs.ale_env import ale_games

    return [_ALE + g for g in ale_games()]


def _craftax_names() -> list[str]:
    if not _installed("craftax"):
        return []
    from podracer.envs.craftax_env import CRAFTAX_ENVS  # no craftax import: the list is ours

    return [_CRAFTAX + n for n in CRAFTAX_ENVS]


def _jumanji_names() -> list[str]:
    """jumanji's registered ids (none is built to list it: `make` refuses the action specs
    it does not support, in one line)."""
    if not _installed("jumanji"):
        return []
    import jumanji

    return [_JUMANJI + n for n in sorted(jumanji.registered_environments())]


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


ENTRY_POINT_GROUP = "podracer.envs"
_SOURCES = (*_JAX_SOURCES, *_HOST_SOURCES)


@dataclasses.dataclass(frozen=True)
class EnvEntry:
    """One of the user's environments: how to build it, and where it came from."""

    name: str
    factory: Callable[..., Any] | str  # or "module:attr", imported on first use
    kind: Literal["jax", "host"] | None = None  # None: decided from the factory
    origin: str = "register"  # "register", "entry point" or "import path"

    def load(self) -> Callable[..., Any]:
        return _import(self.factory, self.name) if isinstance(self.factory, str) else self.factory

    @property
    def import_path(self) -> str | None:
        """`module:attr` that rebuilds the factory in another process, if there is one."""
        return self.factory if isinstance(self.factory, str) else import_path_of(self.factory)


_REGISTERED: dict[str, EnvEntry] = {}


def is_import_path(name: str) -> bool:
    """Whether `name` is `module:attr` rather than a built-in `<source>:<task>` name."""
    return split_import_path(name) is not None and not name.startswith(_SOURCES)


ACCEPTED = (
    "a JaxEnv or HostEnv class (with reset and step), a gymnax Environment, or a "
    "function annotated to return one (def make(...) -> JaxEnv, or -> HostEnv)"
)


def is_env_class(cls: type) -> bool:
    """Whether `cls` makes envs: it has `reset` and `step` (the `JaxEnv` and `HostEnv`
    protocols, gymnax's `Environment`, and every class that implements one)."""
    return callable(getattr(cls, "reset", None)) and callable(getattr(cls, "step", None))


def _import(path: str, name: str) -> Any:
    """The factory `path` names, checked before it is called (`podracer.envs.imports`)."""
    return resolve(path, f"environment {name!r}", is_env_class, ACCEPTED,
                   names=("JaxEnv", "HostEnv"), instance=_is_gymnax_env)  # fmt: skip


def register(
    name: str,
    factory: Callable[..., Any] | str | Any,
    *,
    kind: Literal["jax", "host"] | None = None,
) -> None:
    """Makes `name` an environment `make` / `make_host` (and both command lines) accept.

    `factory(**env_kwargs)` returns a `JaxEnv`; a factory taking `num_envs` returns a
    `HostEnv` (or say which with `kind`). A gymnax `Environment` class or instance is
    adapted (`env_kwargs` then are its `EnvParams` fields). `factory` may be a
    "module:attr" string, imported on first use. A run records the factory's import path
    in its config.json, so eval, resume and `--init-from` find it in other processes;
    there it is checked as every import path is, so annotate a factory function's return
    (`-> JaxEnv`, `-> HostEnv`).
    """
    if not isinstance(name, str) or not name or ":" in name or name in _OWN_JAX_ENVS:
        raise ValueError(f"register: env names are non-empty, without ':' and not a built-in "
                         f"name, got {name!r}")  # fmt: skip
    if kind not in (None, "jax", "host"):
        raise ValueError(f"register({name!r}): kind must be 'jax', 'host' or None, got {kind!r}")
    if not (callable(factory) or isinstance(factory, str) or _is_gymnax_env(factory)):
        got = type(factory).__name__
        raise ValueError(f"register({name!r}): factory must be callable, a 'module:attr' "
                         f"string or a gymnax Environment, got {got}")  # fmt: skip
    _REGISTERED[name] = EnvEntry(name, factory, kind)


def registered_envs() -> dict[str, EnvEntry]:
    """The user's environments: registered by call, then those of installed packages'
    `podracer.envs` entry points (a call wins over an entry point of the same name)."""
    return {**_entry_points(), **_REGISTERED}


@functools.cache
def _entry_points() -> dict[str, EnvEntry]:
    found = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    return {ep.name: EnvEntry(ep.name, ep.value, origin="entry point") for ep in found}


def _user_entry(name: str) -> EnvEntry | None:
    entry = registered_envs().get(name)
    if entry is None and is_import_path(name):
        entry = EnvEntry(name, name, origin="import path")
    return entry


def env_import_path(name: str) -> str | None:
    """What rebuilds env `name` in a process that did not register it: the import path of
    a factory registered by call; None for built-in names, entry points and import paths
    (which every process finds by name) and for factories no other process can import."""
    entry = _REGISTERED.get(name)
    return None if entry is None else entry.import_path


def _is_gymnax_env(obj: Any) -> bool:
    """A gymnax `Environment` subclass or instance (gymnax need not be installed)."""
    if not _installed("gymnax"):
        return False
    from gymnax.environments.environment import Environment

    return isinstance(obj, Environment) or (isinstance(obj, type) and issubclass(obj, Environment))


def _entry_kind(entry: EnvEntry, factory: Any) -> str:
    if entry.kind is not None:
        return entry.kind
    if _is_gymnax_env(factory):
        return "jax"
    try:
        parameters = inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return "jax"
    return "host" if "num_envs" in parameters else "jax"


def _build_user_jax(entry: EnvEntry, kwargs: dict[str, Any]) -> JaxEnv:
    factory = entry.load()
    if _entry_kind(entry, factory) == "host":
        raise ValueError(
            f"environment {entry.name!r} is a host environment (its factory takes num_envs), "
            f"not a JaxEnv: run it with Sebulba or podracer.envs.make_host"
        )
    if _is_gymnax_env(factory):
        from podracer.envs.gymnax_env import wrap_gymnax

        return wrap_gymnax(factory, entry.name, **kwargs)
    try:
        env = factory(**kwargs)
    except TypeError as e:
        raise ValueError(f"environment {entry.name!r}: {e}") from None
    if _is_gymnax_env(env):
        from podracer.envs.gymnax_env import wrap_gymnax

        return wrap_gymnax(env, entry.name)
    missing = [a for a in ("spec", "reset", "step") if not hasattr(env, a)]
    if missing or isinstance(env, HostEnv):
        raise ValueError(f"environment {entry.name!r}: its factory returned a "
                         f"{type(env).__name__}, not a JaxEnv (spec, reset(key), "
                         f"step(state, action, key))")  # fmt: skip
    return env


def _build_user_host(
    entry: EnvEntry, num_envs: int, batch_size: int, seed: int, kwargs: dict[str, Any]
) -> HostEnv:
    factory = entry.load()
    if _entry_kind(entry, factory) == "jax":
        from podracer.envs.host import as_host_env

        return as_host_env(_build_user_jax(entry, kwargs), num_envs, seed=seed,
                           batch_size=batch_size)  # fmt: skip
    sizes: dict[str, Any] = {"num_envs": num_envs, "seed": seed}
    try:
        if "batch_size" in inspect.signature(factory).parameters:
            sizes["batch_size"] = batch_size
    except (TypeError, ValueError):
        pass
    if batch_size != num_envs and "batch_size" not in sizes:
        raise ValueError(f"environment {entry.name!r}: its factory takes no batch_size, so it "
                         f"cannot step {batch_size} of its {num_envs} envs at a time")  # fmt: skip
    try:
        env = factory(**sizes, **kwargs)
    except TypeError as e:
        raise ValueError(f"environment {entry.name!r}: {e}") from None
    if not isinstance(env, HostEnv):
        raise ValueError(f"environment {entry.name!r}: its factory returned a "
                         f"{type(env).__name__}, not a HostEnv")  # fmt: skip
    return env


def is_jax_env(name: str) -> bool:
    """Whether `name` names a JaxEnv (`make`; also runs on the host through `make_host`),
    as opposed to a host-only env (envpool's, a host factory's)."""
    entry = _user_entry(name)
    if entry is not None:
        return _entry_kind(entry, entry.load()) == "jax"
    return name == "catch" or name.startswith(_JAX_SOURCES)


def list_envs(kind: str = "all") -> list[str]:
    """Names `make` ("jax") or `make_host` ("host") accepts; "all" is both. Extras installed only.

    Continuous-action envs are included. Listing envpool names ("host", "all") builds
    envpool's task specs once per process (about a second); gymnasium's and jumanji's
    names are their registries' ids, listed without building them.
    """
    if kind not in ("all", "jax", "host"):
        raise ValueError(f"kind must be 'all', 'jax' or 'host', got {kind!r}")
    names = [*_OWN_JAX_ENVS, *_gymnax_names(), *_brax_names(), *_craftax_names(),
             *_jumanji_names()]  # fmt: skip
    # The user's envs by name (their factories are not imported to tell jax from host).
    own = sorted(registered_envs())
    if kind == "jax":
        return [*names, *own]
    return [*names, *_envpool_names(), *_ale_names(), *_gymnasium_names(), *own]


def _host_only(name: str) -> ValueError:
    source, _, task = name.partition(":")
    twin = _jax_twin(task.rpartition(":")[2])  # gymnasium's "module:id" -> id
    also = f"; the same task as a JaxEnv: make({twin!r})" if twin else ""
    return ValueError(
        f"{name!r} is a host environment ({source}, stepped on the CPU), not a JaxEnv: "
        f"run it with Sebulba or podracer.envs.make_host({name!r}, num_envs=...){also}"
    )


def make(name: str, **kwargs: Any) -> JaxEnv:
    """A pure-JAX environment by name: "catch", "gymnax:<id>", "brax:<name>",
    "craftax:<name>", "jumanji:<id>", a registered name or "module:attr" (see the
    module's docstring).

    `kwargs` go to `Catch(...)`, to `make_gymnax` (gymnax params such as
    `max_steps_in_episode`, and `env_kwargs` for the gymnax constructor), to
    `make_brax` (`max_episode_steps`, and brax constructor arguments such as `backend`),
    to `make_craftax` (craftax params such as `max_timesteps`) or to `make_jumanji` (the
    jumanji env's constructor arguments, e.g. `time_limit`).
    """
    if name == "catch":
        from podracer.envs.catch import Catch

        return Catch(**kwargs)
    entry = _user_entry(name)
    if entry is not None:
        return _build_user_jax(entry, kwargs)
    if name.startswith(_HOST_SOURCES):
        raise _host_only(name)
    if name.startswith(_GYMNAX):
        _require(_GYMNAX, name)
        from podracer.envs.gymnax_env import make_gymnax

        if name not in _gymnax_names():
            raise unknown_name(name, list_envs("jax"))
        return make_gymnax(name[len(_GYMNAX) :], **kwargs)
    if name.startswith(_BRAX):
        _require(_BRAX, name)
        from podracer.envs.brax_env import make_brax

        return make_brax(name[len(_BRAX) :], **kwargs)
    if name.startswith(_CRAFTAX):
        _require(_CRAFTAX, name)
        from podracer.envs.craftax_env import make_craftax

        if name not in _craftax_names():
            raise unknown_name(name, _craftax_names(), "craftax environment")
        return make_craftax(name[len(_CRAFTAX) :], **kwargs)
    if name.startswith(_JUMANJI):
        _require(_JUMANJI, name)
        from podracer.envs.jumanji_env import make_jumanji

        if name not in _jumanji_names():
            raise unknown_name(name, _jumanji_names(), "jumanji environment")
        return make_jumanji(name[len(_JUMANJI) :], **kwargs)
    raise unknown_name(name, list_envs("jax"))


def make_host(
    name: str, num_envs: int, batch_size: int | None = None, seed: int = 0, **kwargs: Any
) -> HostEnv:
    """A batched host environment by name: "envpool:<task>", "ale:<Game>", "gymnasium:<id>",
    any `make` name, or one of your own host envs (registered, an entry point, or
    "module:attr").

    `kwargs` go to `make_envpool` (e.g. `max_episode_steps`, `atari=AtariOptions(...)`,
    `episodic_life=True`), to `make_ale` (the same Atari options, `num_threads`,
    `use_fire_reset`), to `make_gymnasium` (`vectorization_mode` "auto",
    "vector_entry_point", "async" or "sync", `max_episode_steps`, the env constructor's
    arguments) or to `make` (a JaxEnv, then run by `as_host_env`).
    """
    batch_size = check_sizes(num_envs, batch_size)
    entry = _user_entry(name)
    if entry is not None:
        return _build_user_host(entry, num_envs, batch_size, seed, kwargs)
    if name.startswith(_ENVPOOL):
        _require(_ENVPOOL, name)
        from podracer.envs.envpool_env import make_envpool

        if name[len(_ENVPOOL) :] not in _envpool_tasks():
            raise unknown_name(name, list(_envpool_names()))
        return make_envpool(name[len(_ENVPOOL) :], num_envs, batch_size, seed, **kwargs)
    if name.startswith(_ALE):
        _require(_ALE, name)
        from podracer.envs.ale_env import make_ale

        return make_ale(name[len(_ALE) :], num_envs, batch_size, seed, **kwargs)
    if name.startswith(_GYMNASIUM):
        _require(_GYMNASIUM, name)
        from podracer.envs.gymnasium_env import make_gymnasium

        return make_gymnasium(name[len(_GYMNASIUM) :], num_envs, batch_size, seed, **kwargs)
    if name in _OWN_JAX_ENVS or name.startswith(_JAX_SOURCES):
        from podracer.envs.host import as_host_env

        return as_host_env(make(name, **kwargs), num_envs, seed=seed, batch_size=batch_size)
    raise unknown_name(name, list_envs("host"))
