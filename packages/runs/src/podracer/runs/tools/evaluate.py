"""`podracer eval RUN[@STEP][:SEED]`: episodes of a saved agent, on any env whose spec matches.

    podracer eval runs/cartpole                          # the newest checkpoint, its own env
    podracer eval runs/cartpole@best --episodes 100      # the best by greedy evaluation
    podracer eval runs/cartpole --env envpool:CartPole-v1 --video 2
    podracer eval runs/seeds                             # every seed of a multi-seed run
    podracer eval runs/seeds@latest:3 --sampled          # seed 3 of it, sampled

A JaxEnv (catch, gymnax:..., brax:...) plays on device in one compiled loop; a host env
(envpool:...) from Python, so a checkpoint of either runtime evaluates on either kind of
env. A run of several seeds, or a sweep, is evaluated member by member unless `:K` names
one; each line and record names its member, its training seed and its swept values.
Prints the return's mean, std, min and max over the episodes and appends one record per
member to the run's `eval.json` (a list, one entry per evaluation; `seed` is the member's
training seed, `eval_seed` the one the episodes were played with); `--video N` also
writes the first N episodes to `videos/eval_<step>[_<member>]_<env>.mp4`. Code the run
names (an env or agent of your own, by import path) is imported only where trusted:
an installed plugin's, this command's `--env`, or with `--trust-code` (podracer.runs.trust).
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
    trust_code: bool = False,
) -> list[dict[str, Any]]:
    """Plays `episodes` episodes of each member of the agent saved at `source` (the one
    `:K` names, else every one) and records them (in the run's eval.json and, with
    `video`, an MP4); returns the records, one per member. Code the run's files name is
    imported only if trusted (`trust_code`, or `env` naming it; `podracer.runs.trust`)."""
    from podracer.runs.source import parse_source
    from podracer.runs.sweep import num_members

    where = parse_source(source, runs_root, owner="podracer eval")
    stored = where.run.read_config()
    count = num_members(stored)
    records = []
    trust = (trust_code, (env,) if env else ())  # --env typed here names trusted code
    for k in range(count) if where.seed_index is None else [where.seed_index]:
        # A fresh env for each member: member K plays the same episodes alone or not.
        env_name, env_kwargs, jax_env, host_env = _eval_env(where.run, env, episodes, seed,
                                                            trust)  # fmt: skip
        try:
            records.append(_evaluate_member(
                where._replace(seed_index=k), stored, count, env_name, env_kwargs, jax_env,
                host_env, episodes, greedy, max_steps, seed, video, trust,
            ))  # fmt: skip
        finally:
            if host_env is not None:
                host_env.close()
    return records


def _evaluate_member(where, stored, count, env_name, env_kwargs, jax_env, host_env, episodes,
                     greedy, max_steps, seed, video, trust) -> dict[str, Any]:  # fmt: skip
    import jax

    from podracer.agents import env_keys
    from podracer.agents import host_episodes
    from podracer.agents import jax_episodes
    from podracer.runs.source import load
    from podracer.runs.sweep import member_label

    spec = (jax_env or host_env).spec
    loaded = load(where, spec, "podracer eval", *trust)
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
    returns, lengths = np.asarray(returns, np.float64), np.asarray(lengths)
    tags = member_label(stored, count, where.seed_index)
    suffix = f":{tags['member']}" if "member" in tags else ""
    record = {
        "time": time.time(),
        "source": f"{where.run.name}@{loaded.step}{suffix}",
        "step": loaded.step,
        "env_steps": loaded.metadata["env_steps"],
        **tags,
        "env": env_name,
        **({"env_kwargs": env_kwargs} if env_kwargs else {}),
        "episodes": int(returns.size),
        "policy": "greedy" if greedy else "sampled",
        "eval_seed": seed,
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
        member = f"_{tags['member']}" if "member" in tags else ""
        name = f"eval_{loaded.step}{member}_{env_name.replace(':', '-').replace('/', '-')}.mp4"
        record["video"] = recorder.record(os.path.join(where.run.videos, name), params, seed)
        recorder.close()
    _append(os.path.join(where.run.path, "eval.json"), record)
    return record


def _eval_env(run: Any, env: str | None, episodes: int, seed: int, trust=(False, ())):
    """`(name, kwargs, jax_env, host_env)` to evaluate in: the run's env with its keyword
    arguments, or another (`--env`, with its own); a JaxEnv where the name has one, else
    a host env of `episodes` envs. The run's own env and agent are registered first."""
    from podracer.agents import ConfigError
    from podracer.envs import is_jax_env
    from podracer.envs import make
    from podracer.envs import make_host
    from podracer.runs.config import register_sources

    stored = run.read_config()
    name = env or stored["env"]
    # The code it names is imported only if trusted: refused here in one line otherwise.
    register_sources({**stored, "env": name}, run.config_file, *trust)
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
    parser.add_argument(
        "--trust-code", action="store_true",
        help="import the code the run names (its env, agent, registered sources) even where "
             "it is not podracer's, an installed plugin's, or this command's --env",
    )  # fmt: skip
    args = parser.parse_args(argv)
    for name in ("episodes", "max_steps"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    from podracer.agents import ConfigError
    from podracer.runs.checkpoint import CheckpointError

    try:
        if args.video:  # before the checkpoint loads and the episodes play
            from podracer.runs.video import check_video_extra

            check_video_extra()
        records = evaluate(args.source, args.env, args.episodes, not args.sampled,
                           args.max_steps, args.seed, args.video, args.runs_root,
                           args.trust_code)  # fmt: skip
    except (ConfigError, CheckpointError) as e:
        message = str(e).removeprefix("podracer eval: ")
        print(f"podracer eval: error: {message}", file=sys.stderr)
        return 2
    from podracer.runs.tools.aggregate import format_number as num

    for r in records:
        label = f"seed {r['seed']}" + "".join(
            f", {name} {num(value)}" for name, value in r.get("values", {}).items()
        )
        print(
            f"{r['source']} ({label}) on {r['env']}: {r['episodes']} {r['policy']} episodes, "
            f"return {num(r['mean'])} +- {num(r['std'])} (min {num(r['min'])}, max "
            f"{num(r['max'])}), length {r['length_mean']:,.1f}"
            + (f"; video {r['video']}" if "video" in r else "")
            + ("" if math.isfinite(r["mean"]) else " (no finite return)")
        )
    if len(records) > 1:
        means = [r["mean"] for r in records]
        print(f"{len(records)} members: mean of their returns {num(float(np.mean(means)))}")
    return 0
