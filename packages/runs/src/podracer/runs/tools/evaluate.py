"""`podracer eval RUN[@STEP][:SEED]`: episodes of a saved agent, on any env whose spec matches.

    podracer eval runs/cartpole                          # the newest checkpoint, its own env
    podracer eval runs/cartpole@best --episodes 100      # the best by greedy evaluation
    podracer eval runs/cartpole --env envpool:CartPole-v1 --video 2
    podracer eval runs/seeds@latest:3 --sampled          # seed 3 of a multi-seed run, sampled

A JaxEnv (catch, gymnax:..., brax:...) plays on device in one compiled loop; a host env
(envpool:...) from Python, so a checkpoint of either runtime evaluates on either kind of
env. Prints the return's mean, std, min and max over the episodes and appends the same to
the run's `eval.json` (a list, one entry per evaluation); `--video N` also writes the first
N episodes to `videos/eval_<step>_<env>.mp4`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from typing import Any

import numpy as np


def evaluate(
    source: str,
    env: str | None = None,
    episodes: int = 32,
    greedy: bool = True,
    max_steps: int = 10_000,
    seed: int = 0,
    video: int = 0,
    runs_root: str = "runs",
) -> dict[str, Any]:
    """Plays `episodes` episodes of the agent saved at `source` and records them (in the
    run's eval.json and, with `video`, an MP4); returns the record."""
    import jax

    from podracer.agents.evaluation import env_keys
    from podracer.agents.evaluation import host_episodes
    from podracer.agents.evaluation import jax_episodes
    from podracer.runs.source import load
    from podracer.runs.source import parse_source

    where = parse_source(source, runs_root, owner="podracer eval")
    env_name, env_kwargs, jax_env, host_env = _eval_env(where.run, env, episodes, seed)
    spec = (jax_env or host_env).spec
    loaded = load(where, spec, owner="podracer eval")
    params = loaded.params
    start = time.perf_counter()
    if jax_env is not None:
        play = jax.jit(jax_episodes(loaded.agent, jax_env, max_steps, greedy))
        returns, lengths = jax.device_get(
            play(params, env_keys(jax.random.PRNGKey(seed), episodes))
        )
    else:
        played = host_episodes(
            loaded.agent, host_env, params, max_steps, greedy, jax.random.PRNGKey(seed)
        )
        returns, lengths = played.returns, played.lengths
        host_env.close()
    returns, lengths = np.asarray(returns, np.float64), np.asarray(lengths)
    record = {
        "time": time.time(),
        "source": f"{where.run.name}@{loaded.step}"
        + (f":{where.seed_index}" if where.seed_index else ""),
        "step": loaded.step,
        "env_steps": loaded.metadata["env_steps"],
        "env": env_name,
        **({"env_kwargs": env_kwargs} if env_kwargs else {}),
        "episodes": int(returns.size),
        "policy": "greedy" if greedy else "sampled",
        "seed": seed,
        "mean": float(returns.mean()),
        "std": float(returns.std()),
        "min": float(returns.min()),
        "max": float(returns.max()),
        "length_mean": float(lengths.mean()),
        "seconds": time.perf_counter() - start,
    }
    if video:
        from podracer.runs.video import Recorder

        recorder = Recorder(loaded.agent, env_name, episodes=video, greedy=greedy,
                            env_kwargs=env_kwargs)  # fmt: skip
        name = f"eval_{loaded.step}_{env_name.replace(':', '-').replace('/', '-')}.mp4"
        record["video"] = recorder.record(os.path.join(where.run.videos, name), params, seed)
        recorder.close()
    _append(os.path.join(where.run.path, "eval.json"), record)
    return record


def _eval_env(run: Any, env: str | None, episodes: int, seed: int):
    """`(name, kwargs, jax_env, host_env)` to evaluate in: the run's env with its keyword
    arguments, or another (`--env`, with its own); a JaxEnv where the name has one, else
    a host env of `episodes` envs. The run's own env and agent are registered first."""
    from podracer.agents.validation import ConfigError
    from podracer.envs import is_jax_env
    from podracer.envs import make
    from podracer.envs import make_host
    from podracer.runs.config import register_sources

    stored = run.read_config()
    register_sources(stored, owner=run.config_file)
    name = env or stored["env"]
    kwargs = (stored.get("env_kwargs") or {}) if env is None or env == stored["env"] else {}
    try:
        if is_jax_env(name):
            return name, kwargs, make(name, **kwargs), None
        return name, kwargs, None, make_host(name, num_envs=episodes, seed=seed, **kwargs)
    except (ValueError, ImportError) as e:
        raise ConfigError(f"podracer eval --env: {e}") from None


def _append(path: str, record: dict[str, Any]) -> None:
    """Adds `record` to the JSON list at `path`, atomically (earlier entries are kept)."""
    entries = []
    if os.path.exists(path):
        with open(path) as f:
            entries = json.load(f)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump([*entries, record], f, indent=2)
        f.write("\n")
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="podracer eval",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "source", metavar="RUN[@STEP][:SEED]", help="a run dir or name; STEP: latest, best or N"
    )
    parser.add_argument("--env", help="an env with the same spec (default: the run's own)")
    parser.add_argument("--episodes", type=int, default=32)
    parser.add_argument("--sampled", action="store_true", help="act as in training, not greedily")
    parser.add_argument(
        "--max-steps", type=int, default=10_000, help="per episode, for envs without a time limit"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--video", type=int, default=0, metavar="N", help="record the first N episodes"
    )
    parser.add_argument("--runs-root", default="runs")
    args = parser.parse_args(argv)
    for name in ("episodes", "max_steps"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    from podracer.agents.validation import ConfigError
    from podracer.runs.checkpoint import CheckpointError

    try:
        r = evaluate(args.source, args.env, args.episodes, not args.sampled, args.max_steps,
                     args.seed, args.video, args.runs_root)  # fmt: skip
    except (ConfigError, CheckpointError) as e:
        message = str(e).removeprefix("podracer eval: ")
        print(f"podracer eval: error: {message}", file=sys.stderr)
        return 2
    from podracer.runs.tools.aggregate import format_number as num

    print(
        f"{r['source']} on {r['env']}: {r['episodes']} {r['policy']} episodes, return "
        f"{num(r['mean'])} +- {num(r['std'])} (min {num(r['min'])}, max {num(r['max'])}), "
        f"length {r['length_mean']:,.1f}"
        + (f"; video {r['video']}" if "video" in r else "")
        + ("" if math.isfinite(r["mean"]) else " (no finite return)")
    )
    return 0
