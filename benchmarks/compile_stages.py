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
    print("  traced longest:", ", ".join(f"{f} {s:.2f} s" for f, s in traced.most_common(6)))
    # XLA compile's figure includes reading a program from the cache (both are
    # `compile_or_get_cached`): a hit shows here at its read time.
    print("  compiled longest:", ", ".join(f"{f} {s:.2f} s" for f, s in compiled.most_common(6)))
    return status


if __name__ == "__main__":
    sys.exit(main())
