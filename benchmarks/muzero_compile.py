"""MuZero's compile time on Anakin: trace, lower and compile seconds of the training chunk.

Builds the chunk each preset's command line would (`anakin --env ENV --agent muzero`,
`AnakinConfig.from_preset`) and times its stages on the abstract state, with nothing
trained: `trace` (Python running the agent into a jaxpr), `lower` (jaxpr to StableHLO)
and `compile` (XLA). Also prints the size of the lowered program (StableHLO lines,
`while` loops) and of the optimized one (HLO lines, fusions), and JAX's own stage
counters (`jax.monitoring` durations) summed over everything compiled, as a check.

Runs unchanged on CPU or an accelerator (whatever `jax.devices()` gives):

    uv run python benchmarks/muzero_compile.py                   # catch and minatar
    uv run python benchmarks/muzero_compile.py --tasks catch --repeats 2
    uv run python benchmarks/muzero_compile.py --profile 25      # cProfile of the trace

`compile` here is XLA alone; a run's summary line reports its first chunk call beyond the
second (trace, lower, compile, and the one update's run), so it reads a little higher.
`cpu s`: the compile's process CPU time, all threads (less moved by other load on the
machine than the wall seconds).
Figures: benchmarks/results/muzero_compile.md.
"""

from __future__ import annotations

import argparse
import collections
import re
import time

TASKS = {  # name -> the env the preset is for
    "catch": "catch",
    "minatar": "gymnax:Breakout-MinAtar",
}

EVENTS = {  # jax.monitoring duration events -> short names
    "/jax/core/compile/tracing_duration": "trace",
    "/jax/core/compile/jaxpr_trace_duration": "trace",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
    "/jax/core/compile/backend_compile_duration": "compile",
}


def measure(env: str, profile: int = 0) -> dict:
    import jax
    import jax.extend

    from podracer.anakin import AnakinConfig
    from podracer.anakin.run import build
    from podracer.anakin.run import make_env

    config, _ = AnakinConfig.from_preset(env, "muzero", progress=False, tensorboard=False)
    _, program = build(config, make_env(config))
    # A fresh jitted function each time: nothing cached in-process (the persistent
    # compilation cache is not on here unless the environment turns it on).
    jax.clear_caches()
    out = {"sizes": f"{config.num_envs} envs x {config.rollout_length} steps"}
    start = time.perf_counter()
    if profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        traced = profiler.runcall(program.chunk.trace, program.abstract)
        out["trace"] = time.perf_counter() - start
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(profile)
    else:
        traced = program.chunk.trace(program.abstract)
        out["trace"] = time.perf_counter() - start
    start = time.perf_counter()
    lowered = traced.lower()
    out["lower"] = time.perf_counter() - start
    text = lowered.as_text()
    out["hlo_lines"] = text.count("\n")
    out["while_loops"] = len(re.findall(r"stablehlo\.while", text))
    out["eqns"] = _count_eqns(traced.jaxpr)
    start, cpu = time.perf_counter(), time.process_time()
    compiled = lowered.compile()
    out["compile"] = time.perf_counter() - start
    out["compile_cpu"] = time.process_time() - cpu  # all threads: less moved by other load
    optimized = compiled.as_text() or ""
    out["opt_lines"] = optimized.count("\n")
    out["fusions"] = len(re.findall(r"^\s*(?:ROOT )?%?\S+ = \S+ fusion\(", optimized, re.M))
    return out


def _count_eqns(jaxpr) -> int:
    """Equations of a closed jaxpr, those of every sub-jaxpr (loop bodies, calls) included."""
    import jax
    import jax.extend

    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    total = 0
    for eqn in jaxpr.eqns:
        total += 1
        for sub in jax.extend.core.jaxprs_in_params(eqn.params):
            total += _count_eqns(sub)
    return total


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", default="catch,minatar", help=f"of {', '.join(TASKS)}")
    parser.add_argument("--repeats", type=int, default=1, help="best of this many")
    parser.add_argument("--profile", type=int, default=0, help="cProfile's top N of the trace")
    args = parser.parse_args()

    import jax
    import jax.extend
    import jax.monitoring

    counters: collections.Counter = collections.Counter()

    def listener(event: str, seconds: float, **_) -> None:
        if event in EVENTS:
            counters[EVENTS[event]] += seconds

    jax.monitoring.register_event_duration_secs_listener(listener)
    print(f"jax {jax.__version__}, {jax.device_count()} x {jax.devices()[0].device_kind}")
    header = (f"{'task':<8} {'layout':<20} {'trace s':>8} {'lower s':>8} {'compile s':>9} "
              f"{'total s':>8} {'cpu s':>6} {'eqns':>7} {'hlo lines':>9} {'whiles':>6} "
              f"{'opt lines':>9} {'fusions':>7} | jax counters: trace/lower/compile s")  # fmt: skip
    print(header)
    for task in args.tasks.split(","):
        best = None
        for _ in range(args.repeats):
            counters.clear()
            r = measure(TASKS[task], args.profile)
            r["counters"] = "/".join(f"{counters[k]:.1f}" for k in ("trace", "lower", "compile"))
            r["total"] = r["trace"] + r["lower"] + r["compile"]
            if best is None or r["total"] < best["total"]:
                best = r
        r = best
        print(f"{task:<8} {r['sizes']:<20} {r['trace']:>8.1f} {r['lower']:>8.1f} "
              f"{r['compile']:>9.1f} {r['total']:>8.1f} {r['compile_cpu']:>6.1f} {r['eqns']:>7,} "
              f"{r['hlo_lines']:>9,} {r['while_loops']:>6} {r['opt_lines']:>9,} "
              f"{r['fusions']:>7,} | "
              f"{r['counters']}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
