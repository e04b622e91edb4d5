"""Multi-host cost on one machine: 1 process x 2 devices vs 2 processes x 1 device (figures).

The same global run in both layouts; the two processes join over 127.0.0.1 with gloo
CPU collectives (`podracer launch`), so the difference is the cost of
cross-process collectives (and of a second Python process) on this machine.

* Anakin: Catch with Q(lambda) (the demo), `--anakin-envs` global envs, rollout 16,
  50 updates per chunk: gradients averaged over 2 devices either way.
* Sebulba: envpool CartPole-v1 with IMPALA, 2 actor threads x 16 envs, rollout 32, a
  learner batch of 2 trajectories. 1 process: actor threads on device 0, learner on
  device 1. 2 processes: one actor thread each, and a learner mesh of both processes'
  devices (each process's device acts and learns).

    uv run python benchmarks/multihost.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap

ANAKIN = textwrap.dedent(
    """
    import json, sys, jax
    from podracer.runs import DistributedConfig
    from podracer.anakin import AnakinConfig, train
    envs, steps, dist = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "dist"
    r = train(AnakinConfig(num_envs=envs, total_env_steps=steps, progress=False, tensorboard=False,
                           cluster=DistributedConfig(distributed=dist)))
    if jax.process_index() == 0:
        print("RESULT " + json.dumps({"sps": r.sps, "compile_s": r.compile_seconds}))
    """
)

SEBULBA = textwrap.dedent(
    """
    import json, sys, jax
    from podracer.runs import DistributedConfig, final_return
    from podracer.sebulba import SebulbaConfig, train
    steps, dist = int(sys.argv[1]), sys.argv[2] == "dist"
    if dist:
        layout = dict(actor_threads_per_device=1, trajectories_per_update=1)
    else:
        layout = dict(actor_threads_per_device=2, trajectories_per_update=2,
                      actor_device_ids=(0,), learner_device_ids=(1,))
    config, _ = SebulbaConfig.from_preset(envs_per_thread=16, rollout_length=32,
                           total_env_steps=steps, progress=False, tensorboard=False,
                           cluster=DistributedConfig(distributed=dist), **layout)
    r = train(config)
    if jax.process_index() == 0:
        print("RESULT " + json.dumps({"sps": r.sps, "return": final_return(r)}))
    """
)


def _run(code: str, args: list[str], processes: int) -> dict:
    script = [sys.executable, "-c", code]
    if processes == 1:
        env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
        out = subprocess.run([*script, *args, "local"], env=env, capture_output=True, text=True)
        text = out.stdout + out.stderr
    else:
        launch = [sys.executable, "-m", "podracer.runs.launch", "-n", str(processes),
                  "-d", "1"]  # fmt: skip
        out = subprocess.run(
            [*launch, "--", *script, *args, "dist"], capture_output=True, text=True
        )
        text = out.stdout
    if out.returncode != 0:
        raise RuntimeError(f"run failed ({out.returncode}):\n{text[-3000:]}")
    line = next(x for x in text.splitlines() if "RESULT " in x)
    return json.loads(line.split("RESULT ", 1)[1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="shorter runs")
    parser.add_argument("--anakin-envs", type=int, default=256)
    args = parser.parse_args()
    anakin_steps = (
        5 * args.anakin_envs * 16 * 50 if not args.quick else 3 * args.anakin_envs * 16 * 50
    )
    sebulba_steps = 300_000 if not args.quick else 100_000

    rows = []
    for label, processes in (("1 process x 2 devices", 1), ("2 processes x 1 device", 2)):
        a = _run(ANAKIN, [str(args.anakin_envs), str(anakin_steps)], processes)
        s = _run(SEBULBA, [str(sebulba_steps)], processes)
        rows.append((label, a["sps"], s["sps"], s["return"]))
    print(f"\n{'layout':<24} {'Anakin SPS':>12} {'Sebulba SPS':>12} {'Sebulba return':>15}")
    for label, a, s, ret in rows:
        print(f"{label:<24} {a:>12,.0f} {s:>12,.0f} {ret:>15.1f}")
    print(
        f"{'2 proc / 1 proc':<24} {rows[1][1] / rows[0][1]:>12.2f} {rows[1][2] / rows[0][2]:>12.2f}"
    )


if __name__ == "__main__":
    main()
