"""Where an Anakin chunk's time goes: per-HLO-op time from a `jax.profiler` trace.

Builds the chunk the command line would (`AnakinConfig.from_preset`: the env's preset,
then the sizes given here), runs it `--repeats` times under `jax.profiler.trace`, reads
the trace back in-process (`jax.profiler.ProfileData`, no TensorBoard needed) and prints,
per chunk call: the time each kind of HLO op took summed over XLA:CPU's worker threads,
then the costliest ops with their shapes and the JAX source line that made them (from
the compiled HLO's metadata). `--save-hlo` writes the optimized HLO beside the trace.

    uv run python benchmarks/profile_chunk.py --env gymnax:CartPole-v1 --agent ppo --num-envs 64
    uv run python benchmarks/profile_chunk.py --env catch --agent qlambda --num-envs 1024

Read the shares with care: XLA:CPU records every thunk when tracing, which inflates
programs of many tiny ops (a rolled while loop, small-batch steps) relative to a few
large ones; compare variants by untraced wall time (benchmarks/anakin_vs_plain.py).
"""

from __future__ import annotations

import argparse
import collections
import glob
import os
import re
import tempfile


def hlo_index(hlo_text: str) -> dict[str, str]:
    """op name -> 'shape  op  where', `where` the JAX name stack that made it (e.g.
    `transpose(jvp(ActorCritic))/critic_torso/MLP_0/Dense_1`: a weight gradient), from
    the optimized HLO's metadata."""
    index = {}
    for line in hlo_text.splitlines():
        m = re.match(r"\s*(?:ROOT )?%?([\w.\-]+) = (\(.*?\)|\S+) ([\w\-]+)\(", line)
        if not m:
            continue
        name, shape, op = m.groups()
        where = re.search(r'op_name="([^"]+)"', line)
        # The loop nesting (chunk loop, scans) is in every name: keep what follows it.
        where = re.sub(r"^jit\([^)]*\)/|(?:while/body/|closed_call/|shmap_body/)", "",
                       where.group(1)) if where else ""  # fmt: skip
        shape = shape if len(shape) <= 30 else shape[:27] + "..."
        index[name] = f"{shape:<30} {op:<8} {where[-90:]}"
    return index


def op_times(trace_dir: str) -> collections.Counter:
    """Self time in nanoseconds per HLO op name, summed over XLA:CPU's worker threads: a
    while loop's or call's time excludes the ops of its body traced inside it."""
    import jax

    (path,) = glob.glob(os.path.join(trace_dir, "**", "*.xplane.pb"), recursive=True)
    data = jax.profiler.ProfileData.from_file(path)
    times: collections.Counter = collections.Counter()
    for plane in data.planes:
        for line in plane.lines:
            ops = sorted(
                (e.start_ns, e.end_ns, dict(e.stats)["hlo_op"])
                for e in line.events
                if "hlo_op" in dict(e.stats) and not e.name.startswith("end:")
            )
            open_ops: list[list] = []  # [end, name] of the enclosing ops, innermost last
            for start, end, name in ops:
                while open_ops and open_ops[-1][0] <= start:
                    open_ops.pop()
                if open_ops:  # nested: not the parent's own time
                    times[open_ops[-1][1]] -= end - start
                times[name] += end - start
                open_ops.append([end, name])
    return times


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--env", default="gymnax:CartPole-v1")
    parser.add_argument("--agent", default="ppo")
    parser.add_argument("--num-envs", type=int, default=None, help="the preset's otherwise")
    parser.add_argument("--rollout-length", type=int, default=None)
    parser.add_argument("--updates-per-chunk", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3, help="traced chunk calls")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--save-hlo", action="store_true")
    args = parser.parse_args()

    import jax

    from podracer.anakin import AnakinConfig
    from podracer.anakin.run import build
    from podracer.anakin.run import make_env

    sizes = {"updates_per_chunk": args.updates_per_chunk}
    if args.num_envs:
        sizes["num_envs"] = args.num_envs
    if args.rollout_length:
        sizes["rollout_length"] = args.rollout_length
    config, source = AnakinConfig.from_preset(
        args.env, args.agent, progress=False, tensorboard=False, **sizes
    )
    print(f"{source}; {config.num_envs} envs x {config.rollout_length} steps, "
          f"{config.updates_per_chunk} updates per chunk")  # fmt: skip
    _, program = build(config, make_env(config))
    state = program.init(jax.random.PRNGKey(config.seed))
    # Compiled once, here; its HLO names the ops the trace records.
    chunk = program.chunk.lower(state).compile()
    hlo = chunk.as_text()
    state, metrics = chunk(state)  # warm up
    jax.block_until_ready(metrics)

    trace_dir = tempfile.mkdtemp(prefix="profile-chunk-")
    with jax.profiler.trace(trace_dir):
        for _ in range(args.repeats):
            state, metrics = chunk(state)
        jax.block_until_ready(metrics)
    if args.save_hlo:
        with open(os.path.join(trace_dir, "chunk.hlo.txt"), "w") as f:
            f.write(hlo)
    times = op_times(trace_dir)
    per_call = lambda ns: ns / args.repeats / 1e6  # noqa: E731  (ms per chunk call)
    total = sum(times.values())
    print(f"trace: {trace_dir}\nop time per chunk call, summed over threads: "
          f"{per_call(total):.1f} ms")  # fmt: skip
    kinds: collections.Counter = collections.Counter()
    for name, ns in times.items():
        kinds[re.sub(r"[.\d]+$", "", name)] += ns
    print("\nby kind of op:")
    for kind, ns in kinds.most_common(12):
        print(f"  {kind:<36} {per_call(ns):>9.1f} ms  {ns / total:>6.1%}")
    index = hlo_index(hlo)
    print(f"\nthe {args.top} costliest ops:")
    for name, ns in times.most_common(args.top):
        print(f"  {per_call(ns):>8.1f} ms {ns / total:>6.1%}  {name:<28} {index.get(name, '')}")


if __name__ == "__main__":
    main()
