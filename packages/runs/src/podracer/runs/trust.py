"""Which code a run directory may have imported: trust, as Hugging Face's `trust_remote_code`.

A run's config.json, and the config each checkpoint stores, can name code by import path:
its `env` or `agent` (`my_pkg.envs:Corridor`, `gymnasium:my_pkg:MyEnv-v0`), and the
`sources` that register an env or agent registered by call. `--resume`, `--config`,
`--init-from`, `podracer eval` and `podracer.runs.load` rebuild a run from those files,
so a copied run directory would choose which module is imported and run. A path read
from a file is imported only where

* this process trusts its code already: podracer's own, a package installed with a
  `podracer.envs` or `podracer.agents` entry point, or a factory registered by call;
* its module is already imported; or
* the user typed it on this command line (`--env`/`--agent` naming the same path) or
  passed `--trust-code` (`trust_code=True` from Python);

anything else is refused in one line naming the file, the path and the flag, before any
import. A path typed by the user (a flag, a config built in Python) is theirs: never
asked about.
"""

from __future__ import annotations

import functools
import importlib.metadata
import sys
from collections.abc import Collection
from typing import Any

from podracer.agents import ConfigError

FLAG = "--trust-code"
_GROUPS = ("podracer.envs", "podracer.agents")
_GYMNASIUM = "gymnasium:"


def named_code(data: dict[str, Any]) -> list[tuple[str, str]]:
    """`(field, name)` of each piece of code a stored run config names: an import path,
    or a gymnasium env whose id names a module to import."""
    from podracer.envs import is_import_path
    from podracer.envs.imports import split_import_path

    found = []
    env, agent = data.get("env"), data.get("agent")
    if isinstance(env, str) and is_import_path(env):
        found.append(("env", env))
    elif isinstance(env, str) and env.startswith(_GYMNASIUM) and env.count(":") >= 2:
        found.append(("env", env))  # gymnasium:<module>:<id> imports <module>
    if isinstance(agent, str) and split_import_path(agent) is not None:
        found.append(("agent", agent))
    sources = data.get("sources")
    for kind, keys in (("env", ("factory",)), ("agent", ("config_cls", "factory"))):
        entry = sources.get(kind) if isinstance(sources, dict) else None
        if not isinstance(entry, dict) or _registered(kind, entry.get("name")):
            continue  # a name this process registered keeps its own: nothing is imported
        for key in keys:
            if isinstance(entry.get(key), str):
                found.append((f"sources.{kind}.{key}", entry[key]))
    return found


def _registered(kind: str, name: Any) -> bool:
    from podracer.agents import AGENTS
    from podracer.envs import registered_envs

    return isinstance(name, str) and name in (registered_envs() if kind == "env" else AGENTS)


@functools.cache
def _plugin_packages() -> frozenset[str]:
    """Top-level packages of installed distributions' podracer entry points."""
    packages = set()
    for group in _GROUPS:
        for ep in importlib.metadata.entry_points(group=group):
            packages.add(ep.value.partition(":")[0].split(".")[0].strip())
    return frozenset(packages)


def _registered_paths() -> set[str]:
    """Import paths of what this process registered by call."""
    from podracer.agents import AGENTS
    from podracer.envs import registered_envs
    from podracer.envs.imports import import_path_of

    paths = {entry.import_path for entry in registered_envs().values()}
    for entry in AGENTS.values():
        factory = entry.factory if isinstance(entry.factory, str) else import_path_of(entry.factory)
        paths |= {factory, import_path_of(entry.config_cls)}
    return {p for p in paths if p}


def is_trusted(path: str, typed: Collection[str] = ()) -> bool:
    """Whether `path` (`module:attr`, or `gymnasium:<module>:<id>`) may be imported without
    `--trust-code`."""
    if path.startswith(_GYMNASIUM):
        module = path.removeprefix(_GYMNASIUM).rpartition(":")[0]
    else:
        module = path.partition(":")[0]
    top = module.split(".")[0]
    return (
        path in typed
        or module in sys.modules
        or top == "podracer"
        or top in _plugin_packages()
        or path in _registered_paths()
    )


def check_trusted(
    data: dict[str, Any], owner: str, trust_code: bool = False, typed: Collection[str] = ()
) -> None:
    """Refuses, in one line and before any import, a stored run config (`data`, read from
    `owner`) that names code this process does not trust, unless `trust_code`; `typed`:
    the env and agent names typed on this command line (or in Python), trusted."""
    if trust_code:
        return
    for field, path in named_code(data):
        if not is_trusted(path, typed):
            raise ConfigError(
                f"{owner}: its {field} names {path!r}, code that is not podracer's, an "
                f"installed plugin's (entry point), registered or imported; importing it "
                f"would run it. If you trust where this run came from, pass {FLAG} "
                f"(trust_code=True in Python)"
            )
