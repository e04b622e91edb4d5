"""The host side of Anakin: chunks in a loop, with metrics, evaluation and checkpoints.

The host acts only between chunks. Everything it needs to continue a run exactly (env
states, keys, train state) is in `RunnerState`, which is what gets checkpointed.
"""

from __future__ import annotations

import math
import time
from typing import Any
from typing import NamedTuple

import jax
import numpy as np

from podracer.agents import Checkpointer
from podracer.agents import MetricWriter
from podracer.agents import Progress
from podracer.agents import RunDir
from podracer.agents import abstract_like
from podracer.agents import initialize_distributed
from podracer.agents import make_agent
from podracer.anakin.config import AnakinConfig
from podracer.anakin.runtime import RunnerState
from podracer.anakin.runtime import make_chunk
from podracer.anakin.runtime import make_evaluate
from podracer.anakin.runtime import make_init
from podracer.anakin.runtime import make_mesh
from podracer.anakin.runtime import state_shardings
from podracer.envs import make as make_env


class TrainResult(NamedTuple):
    state: RunnerState  # final state (params in state.train.params)
    history: list[dict[str, float]]  # one entry per chunk, as written to metrics.jsonl
    env_steps: int
    sps: float  # training frames per second after the first (compiling) chunk
    compile_seconds: float  # wall time of the first chunk beyond a steady-state chunk


def _metadata(config: AnakinConfig, spec, env_steps: int, chunk: int) -> dict[str, Any]:
    from podracer.agents import to_jsonable

    return {
        "runtime": "anakin",
        "agent": config.agent,
        "config": to_jsonable(config),
        "env_spec": spec.to_json(),
        "env_steps": env_steps,
        "chunk": chunk,
    }


def train(config: AnakinConfig) -> TrainResult:
    """Runs Anakin to `config.total_env_steps`; resumes when `config.resume`.

    With `config.cluster.distributed`, joins the multi-process run first: the mesh then
    spans every process's devices and gradients are averaged across hosts.
    """
    start = time.perf_counter()  # for timing/elapsed: wall time of this call, compile included
    env = make_env(config.env)  # validates the name before JAX starts
    initialize_distributed(config.cluster)
    num_devices = config.check_devices(len(jax.devices()))
    total_updates = config.num_chunks * config.updates_per_chunk
    replay = getattr(config.agent_config, "replay", None)
    if replay is not None and replay.enabled:  # learner updates, not actor rollouts
        total_updates *= replay.updates_per_rollout
    agent = make_agent(config.agent, env.spec, config.agent_config, total_updates=total_updates)

    mesh = make_mesh(num_devices)
    init = make_init(agent, env, config.num_envs, mesh, config.rollout_length)
    chunk_fn = make_chunk(agent, env, config.rollout_length, config.updates_per_chunk, mesh)
    evaluate = (
        make_evaluate(agent, env, config.eval_envs, config.eval_max_steps, mesh)
        if config.eval_every_chunks
        else None
    )

    run_dir = RunDir(config.runs_root, config.run_name) if config.run_name else None
    is_writer = jax.process_index() == 0
    checkpointer = Checkpointer(run_dir.checkpoints, config.keep_checkpoints) if run_dir else None

    key = jax.random.PRNGKey(config.seed)
    start_chunk, env_steps = 0, 0
    if config.resume and checkpointer is not None and checkpointer.latest_step() is not None:
        abstract = jax.eval_shape(init, key)
        target = abstract_like(abstract, state_shardings(mesh, abstract))
        state, meta = checkpointer.restore(target)
        if not env.spec.compatible_with(type(env.spec).from_json(meta["env_spec"])):
            raise ValueError(f"checkpoint env spec {meta['env_spec']} does not match {env.spec}")
        start_chunk, env_steps = int(meta["chunk"]), int(meta["env_steps"])
    else:
        state = init(key)
    writer = MetricWriter(
        run_dir if is_writer else None,
        config.tensorboard,
        truncate_after=env_steps if config.resume else None,
    )
    if run_dir is not None and is_writer:
        run_dir.write_config(config)

    progress = Progress(
        config.num_chunks * config.steps_per_chunk, enabled=config.progress and is_writer
    )
    history: list[dict[str, float]] = []
    steady_seconds, steady_chunks, first_seconds = 0.0, 0, None
    recent_return = math.nan
    try:
        for chunk in range(start_chunk, config.num_chunks):
            t0 = time.perf_counter()
            state, metrics = chunk_fn(state)
            metrics = jax.device_get(metrics)
            seconds = time.perf_counter() - t0
            if first_seconds is None:
                first_seconds = seconds
            else:
                steady_seconds += seconds
                steady_chunks += 1
            env_steps += config.steps_per_chunk
            count = float(metrics.episode_count)
            if count > 0:
                recent_return = float(metrics.episode_return_sum) / count
            row = {
                "charts/episodic_return": recent_return,
                "charts/episodic_length": float(metrics.episode_length_sum) / count
                if count
                else math.nan,
                "charts/episodes": count,
                "charts/SPS": config.steps_per_chunk / seconds,
                "timing/chunk": seconds,
                **{k: float(v) for k, v in metrics.losses.items()},
            }
            if evaluate is not None and (chunk + 1) % config.eval_every_chunks == 0:
                eval_key = jax.random.fold_in(jax.random.PRNGKey(config.seed + 1), chunk)
                row["eval/episodic_return"] = float(evaluate(state.train.params, eval_key))
            row["timing/elapsed"] = time.perf_counter() - start
            writer.write(env_steps, row)
            history.append({"env_steps": env_steps, **row})
            progress.update(env_steps, row["charts/SPS"], recent_return)
            out_of_time = 0 < config.max_wall_seconds <= row["timing/elapsed"]
            last = chunk + 1 == config.num_chunks or out_of_time
            every = config.checkpoint_every_chunks
            if checkpointer is not None and (last or (every and (chunk + 1) % every == 0)):
                checkpointer.save(
                    chunk + 1, state, _metadata(config, env.spec, env_steps, chunk + 1)
                )
            if out_of_time:
                break
    finally:
        progress.close()
        writer.close()
        if checkpointer is not None:
            checkpointer.close()

    sps = steady_chunks * config.steps_per_chunk / steady_seconds if steady_chunks else math.nan
    if steady_chunks == 0 and first_seconds:
        sps = config.steps_per_chunk / first_seconds
    compile_seconds = (first_seconds or 0.0) - (
        steady_seconds / steady_chunks if steady_chunks else 0.0
    )
    return TrainResult(state, history, env_steps, float(sps), float(compile_seconds))


def final_return(result: TrainResult, last: int = 3) -> float:
    """Mean training return over the last `last` chunks that saw an episode end."""
    returns = [
        h["charts/episodic_return"]
        for h in result.history
        if not math.isnan(h["charts/episodic_return"])
    ]
    return float(np.mean(returns[-last:])) if returns else math.nan
