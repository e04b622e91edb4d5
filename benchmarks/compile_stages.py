"""Where a command's start-up goes: runs `anakin` or `sebulba` with its arguments and
prints, at exit, JAX's own duration counters summed over the process (figures, not
assertions): tracing, lowering, XLA compiles, compilation-cache reads and the compile
time the cache saved, with how many events of each.

A run's summary line gives one "compile" figure (its first chunk call beyond the
second); this splits the process's whole start into JAX's stages, e.g. to see what a
resume that loads every program from the cache still spends (issue 53):

    uv run python benchmarks/compile_stages.py anakin --env catch --agent muzero
    uv run python benchmarks/compile_stages.py anakin --resume --run-name NAME
"""

from __future__ import annotations

import collections
import sys
import time

TRACE = "/jax/core/compile/jaxpr_trace_duration"
COMPILE = "/jax/core/compile/backend_compile_duration"
EVENTS = {  # jax.monitoring duration events -> what they measure
    "/jax/core/compile/jaxpr_trace_duration": "trace (Python -> jaxpr)",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower (jaxpr -> StableHLO)",
    "/jax/core/compile/backend_compile_duration": "XLA compile",
    "/jax/compilation_cache/cache_retrieval_time_sec": "cache reads",
    "/jax/compilation_cache/compile_time_saved_sec": "compile time the cache saved",
}


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in ("anakin", "sebulba"):
        sys.exit("usage: compile_stages.py {anakin,sebulba} [ARGS...]")
    import jax.monitoring

    seconds: collections.Counter = collections.Counter()
    counts: collections.Counter = collections.Counter()
    traced: collections.Counter = collections.Counter()  # trace seconds by function name
    compiled: collections.Counter = collections.Counter()  # compile seconds by function name

    def listen(event: str, duration: float, **kwargs) -> None:
        seconds[event] += duration
        counts[event] += 1
        if event == TRACE:
            traced[kwargs.get("fun_name", "?")] += duration
        elif event == COMPILE:  # a compile, or a read of its entry from the cache
            compiled[kwargs.get("fun_name", "?")] += duration

    jax.monitoring.register_event_duration_secs_listener(listen)
    _time_cache_read_parts(seconds, counts)
    runtime, args = sys.argv[1], sys.argv[2:]
    if runtime == "anakin":
        from podracer.anakin.cli import main as command
    else:
        from podracer.sebulba.cli import main as command
    start = time.perf_counter()
    sys.argv = [runtime, *args]
    status = command()
    print(f"compile_stages: {time.perf_counter() - start:.1f} s in all; JAX's counters:")
    for event, what in EVENTS.items():
        print(f"  {what:30s} {seconds[event]:7.2f} s  ({counts[event]} events)")
    read = seconds["/jax/compilation_cache/cache_retrieval_time_sec"]
    parts = seconds[FILE_READ] + seconds[DECOMPRESS]
    if counts[FILE_READ]:  # what a cache read is made of; the rest is XLA's deserialize
        print(f"    of which file reads {seconds[FILE_READ]:.2f} s "
              f"({counts['bytes'] / 2**20:.1f} MiB compressed), decompress "
              f"{seconds[DECOMPRESS]:.2f} s ({zlib_or_zstd()}), deserialize "
              f"{read - parts:.2f} s; cache keys {seconds[KEY]:.2f} s "
              f"({counts[KEY]})")  # fmt: skip
    print("  traced longest:", ", ".join(f"{f} {s:.2f} s" for f, s in traced.most_common(6)))
    # XLA compile's figure includes reading a program from the cache (both are
    # `compile_or_get_cached`): a hit shows here at its read time.
    print("  compiled longest:", ", ".join(f"{f} {s:.2f} s" for f, s in compiled.most_common(6)))
    return status


FILE_READ, DECOMPRESS, KEY = "cache file read", "cache decompress", "cache key"


def _time_cache_read_parts(seconds, counts) -> None:
    """Times the parts of JAX's cache read (jax 0.10's private functions: a benchmark's
    look inside, not something the library relies on): the entry's file read, its
    decompression, and the key's hash of the lowered program. Silently skipped when
    JAX's internals moved."""
    try:
        from jax._src import compilation_cache
        from jax._src import lru_cache
    except ImportError:
        return

    def timed(name, fn, size=False):
        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            out = fn(*args, **kwargs)
            seconds[name] += time.perf_counter() - start
            counts[name] += 1
            if size and out is not None:
                counts["bytes"] += len(out)
            return out

        return wrapper

    if hasattr(lru_cache, "LRUCache") and hasattr(compilation_cache, "decompress_executable"):
        lru_cache.LRUCache.get = timed(FILE_READ, lru_cache.LRUCache.get, size=True)
        compilation_cache.decompress_executable = timed(
            DECOMPRESS, compilation_cache.decompress_executable
        )
        compilation_cache.get_cache_key = timed(KEY, compilation_cache.get_cache_key)


def zlib_or_zstd() -> str:
    from jax._src import compilation_cache

    zstd = getattr(compilation_cache, "zstd", None) or getattr(compilation_cache, "zstandard", None)
    return "zstd" if zstd else "zlib"


if __name__ == "__main__":
    sys.exit(main())
