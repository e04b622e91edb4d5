"""JAX's persistent compilation cache, on for every run unless told otherwise.

A run compiles its programs (Anakin's chunk, a Sebulba rollout and update, evaluation)
on every start and every resume: seconds on CPU, minutes for MuZero's chunk. JAX can
keep compiled executables on disk, keyed by the program, the JAX version, the backend
and the compiler flags, so a second start with the same programs loads them instead; a
hit runs exactly what a fresh compile would, so nothing learned changes.
`RunConfig.compile_cache` chooses the folder (`Run.open` applies it before anything
compiles):

* "auto" (the default): `$JAX_COMPILATION_CACHE_DIR` if set, else
  `$XDG_CACHE_HOME/podracer/jax`, else `~/.cache/podracer/jax`;
* a folder: that one (created if missing), whatever `$JAX_COMPILATION_CACHE_DIR` says;
* "none": no persistent cache for the run.

A program that configured JAX's cache itself (`jax.config.update(
"jax_compilation_cache_dir", ...)` to another folder than the environment variable's,
or `jax_enable_compilation_cache=False`) keeps its own setting: the field then changes
nothing. Programs that compile in under `MIN_COMPILE_SECONDS` are not written (unless
`jax_persistent_cache_min_compile_time_secs` was set by the program or its environment).

Several processes may share one folder (a sweep's runs started together, a run and its
evaluation). In JAX 0.10 (`jax/_src/lru_cache.py`, `LRUCache.put`) an entry is written
in place, `if cache_path.exists(): return` then `cache_path.write_bytes(value)`: no
temporary file and rename, and no lock unless `jax_compilation_cache_max_size` is set.
What that allows, and why it is still safe on a local disk:

* Two writers of one key write the same bytes (one program, one compiler), each in one
  write call, so the entry ends whole.
* A reader that opens an entry mid-write reads a truncated one: entries are
  zlib-compressed (zstd where installed), whose end checks reject it, and JAX's
  `_cache_read` (`jax/_src/compiler.py`) catches the error, warns ("Error reading
  persistent compilation cache entry") and compiles; it never runs a torn executable.
* A process killed while writing an entry can leave it torn for good, as `put` never
  replaces an existing key: each later start then warns and compiles that one program.
  Deleting the folder is always safe; it is only a cache.
* In a multi-process run only process 0 writes (`_cache_write` in `compiler.py`).

Entries are machine code for the host's CPU (and the accelerator's runtime): share a
folder between machines of one kind only, and only with users you trust (loading an
entry runs its code).
"""

from __future__ import annotations

import os
import threading
from typing import Any

AUTO = "auto"
OFF = "none"

# Programs that compile faster than this are not written. On a 2-core CPU a tiny Catch
# run compiles ~15 programs: two (init, the chunk) in 4-5 s each, the rest in 30-50 ms,
# and loading an entry took 1-15 ms for those small ones (0.26 s for the chunk). JAX's
# default (1 s) would skip a program that compiles in 0.5 s and loads in a few ms, as an
# evaluation or a small network's step does on CPU; below 0.1 s the saving is a few
# tens of ms per program, not worth a file and a write each. There is no minimum entry
# size (JAX's default, `jax_persistent_cache_min_entry_size_bytes=0`): on a local disk a
# small entry costs nothing to keep, and it is compile time that an entry saves.
MIN_COMPILE_SECONDS = 0.1
_JAX_MIN_COMPILE_SECONDS = 1.0  # JAX's default, which only then is replaced

HIT_EVENT = "/jax/compilation_cache/cache_hits"  # jax.monitoring: one per program loaded

_UNSET = object()
_ours: Any = _UNSET  # the folder the last run of this process set (None: off)


def default_dir() -> str:
    """Where "auto" keeps the cache without `$JAX_COMPILATION_CACHE_DIR`."""
    root = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(root, "podracer", "jax")


def resolve(setting: str) -> str | None:
    """The folder `setting` (a `compile_cache` value) names here; None: no cache."""
    if setting == OFF:
        return None
    if setting == AUTO:
        return os.environ.get("JAX_COMPILATION_CACHE_DIR") or default_dir()
    if "://" in setting:  # a remote path (gs://...): JAX's own (etils) to check
        return setting
    return os.path.abspath(os.path.expanduser(setting))


def _check_folder(path: str, setting: str, owner: str) -> None:
    """The folder exists (made now) and can be written, or a one-line ConfigError."""
    from podracer.agents import ConfigError

    allowed = f"{owner}.compile_cache must be a folder, {AUTO!r} or {OFF!r}, got {setting!r}"
    if "://" in path:
        return
    if os.path.exists(path) and not os.path.isdir(path):
        raise ConfigError(f"{allowed}: {path} is a file")
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise ConfigError(f"{allowed}: cannot create {path} ({e.strerror or e})") from None
    if not os.access(path, os.W_OK | os.X_OK):
        raise ConfigError(f"{allowed}: {path} is not writable")


def apply(setting: str, owner: str = "RunConfig") -> str | None:
    """Points JAX's persistent cache at `setting`'s folder (see the module doc) and
    returns the folder compiles now use (None: none). Call it before anything compiles;
    a later change also takes effect, as JAX's cache is reset when the folder changes."""
    global _ours
    import jax
    from jax.experimental.compilation_cache import compilation_cache

    current = jax.config.jax_compilation_cache_dir
    from_env = os.environ.get("JAX_COMPILATION_CACHE_DIR") or None
    if not jax.config.jax_enable_compilation_cache:
        return None  # the program turned JAX's cache off
    if current is not None and current != from_env and current != _ours:
        return current  # the program's own folder
    target = resolve(setting)
    if target is not None:
        _check_folder(target, setting, owner)
    if target != current:
        jax.config.update("jax_compilation_cache_dir", target)
        # JAX opens its cache once, at the first compile, and remembers it (or that there
        # was none): forget it, so the next compile uses this folder.
        compilation_cache.reset_cache()
    _ours = target
    if (
        target is not None
        and "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS" not in os.environ
        and jax.config.jax_persistent_cache_min_compile_time_secs == _JAX_MIN_COMPILE_SECONDS
    ):
        jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
    return target


class CacheHits:
    """Counts the programs JAX loads from its persistent cache while open (every thread
    of the process: one run's compiles, as a process runs one at a time)."""

    def __init__(self, path: str | None):
        import jax.monitoring

        self.path = path
        self.hits = 0
        self._lock = threading.Lock()
        self._listening = path is not None
        if self._listening:
            jax.monitoring.register_event_listener(self._on_event)

    def _on_event(self, event: str, **kwargs: Any) -> None:
        if event == HIT_EVENT:
            with self._lock:
                self.hits += 1

    def close(self) -> None:
        if self._listening:
            import jax.monitoring

            self._listening = False
            jax.monitoring.unregister_event_listener(self._on_event)
