"""`train(config)`: build envs, agent and threads, run learner updates, log, checkpoint.

The learner runs in the calling thread; actors run in worker threads. Everything that
can fail on bad input (devices, env name, agent options) fails before the first compile.

Multi-host (`--distributed`): every process runs this same function on its own devices
(device ids are local indices, the same on every process) and its own environments; the
learner mesh spans every process's learner devices, so one update trains on the
trajectories of all hosts and `total_env_steps` counts all of them. Metrics are
aggregated over processes and written by process 0; checkpoints are saved by every
process through Orbax.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from typing import Any
from typing import NamedTuple

import jax
import numpy as np
from jax.sharding import Mesh

from podracer.agents import Agent
from podracer.agents import Checkpointer
from podracer.agents import MetricWriter
from podracer.agents import Progress
from podracer.agents import RunDir
from podracer.agents import TrainState
from podracer.agents import abstract_like
from podracer.agents import initialize_distributed
from podracer.agents import make_agent
from podracer.agents import to_jsonable
from podracer.envs import EnvSpec
from podracer.envs import HostEnv
from podracer.envs import make_host
from podracer.sebulba.actor import Actor
from podracer.sebulba.actor import deterministic_schedule
from podracer.sebulba.config import SebulbaConfig
from podracer.sebulba.evaluate import Evaluator
from podracer.sebulba.learner import Learner
from podracer.sebulba.learner import global_learner_mesh
from podracer.sebulba.learner import init_state
from podracer.sebulba.learner import learner_mesh
from podracer.sebulba.learner import local_replica
from podracer.sebulba.learner import process_devices
from podracer.sebulba.learner import replicated
from podracer.sebulba.learner import trajectory_sharding
from podracer.sebulba.lifetime import Stopped
from podracer.sebulba.lifetime import Supervisor
from podracer.sebulba.lifetime import stop_on_signals
from podracer.sebulba.params import ParameterServer
from podracer.sebulba.rollout import PythonLoop
from podracer.sebulba.rollout import XlaLoop
from podracer.sebulba.rollout import has_xla
from podracer.sebulba.stats import MetricAccumulator
from podracer.sebulba.timing import PhaseTimer

# (num_envs, seed) -> a HostEnv with batch_size == num_envs; the default is make_host(config.env).
EnvFn = Callable[[int, int], HostEnv]


class TrainResult(NamedTuple):
    state: TrainState  # the final train state, replicated over the learner devices
    history: list[dict[str, float]]  # one row per log interval, as written to metrics.jsonl
    env_steps: int  # env steps consumed by the learner (all processes), resumed runs included
    updates: int  # learner updates applied, resumed runs included
    sps: float  # env steps per second after the first update (compiles excluded)
    interrupted: bool  # stopped by SIGINT/SIGTERM (a final checkpoint was written)
    run_dir: str | None


def final_return(result: TrainResult, last: int = 3) -> float:
    """Mean training return over the last `last` logged rows that saw an episode end."""
    values = [
        h["charts/episodic_return"] for h in result.history if h.get("charts/episodes", 0) > 0
    ]
    return float(np.mean(values[-last:])) if values else math.nan


def _default_env_fn(name: str) -> EnvFn:
    def make(num_envs: int, seed: int) -> HostEnv:
        try:
            return make_host(name, num_envs=num_envs, seed=seed)
        except ValueError as e:
            raise ValueError(f"SebulbaConfig.env: {e}") from e

    return make


def _metadata(config: SebulbaConfig, spec: EnvSpec, env_steps: int, update: int) -> dict[str, Any]:
    return {
        "runtime": "sebulba",
        "agent": config.agent,
        "config": to_jsonable(config),
        "env_spec": spec.to_json(),
        "env_steps": env_steps,
        "update": update,
    }


def choose_loop(config: SebulbaConfig, env: HostEnv, device: jax.Device) -> type:
    """The rollout loop class an actor on `device` uses for `env` (`config.actor_loop`)."""
    xla_ok = has_xla(env) and device.platform == "cpu"
    if config.actor_loop == "xla" and not xla_ok:
        raise ValueError(
            f"SebulbaConfig.actor_loop='xla' needs an envpool env on a CPU actor device; "
            f"env {env.spec.name!r} on {device.platform}"
        )
    return (
        XlaLoop
        if config.actor_loop == "xla" or (config.actor_loop == "auto" and xla_ok)
        else PythonLoop
    )


def _initial_state(
    config: SebulbaConfig, agent: Agent, mesh: Mesh, checkpointer: Checkpointer | None
) -> tuple[TrainState, int, int]:
    """`(state, update, env_steps)`: fresh, or the last checkpoint's with `config.resume`."""
    key = jax.random.PRNGKey(config.seed)
    if not (config.resume and checkpointer is not None and checkpointer.latest_step() is not None):
        return init_state(agent, key, mesh), 0, 0
    abstract = jax.eval_shape(lambda k: init_state(agent, k, mesh), key)
    state, meta = checkpointer.restore(abstract_like(abstract, replicated(mesh)))
    saved = EnvSpec.from_json(meta["env_spec"])
    if not agent.spec.compatible_with(saved):
        raise ValueError(f"checkpoint env spec {saved} does not match {agent.spec}")
    return state, int(meta["update"]), int(meta["env_steps"])


def _make_actors(
    config: SebulbaConfig,
    agent: Agent,
    loop_cls: type,
    lanes: list[list[HostEnv]],
    devices: list[jax.Device],
    mesh: Mesh,
    params: ParameterServer,
    supervisor: Supervisor,
    start_update: int,
    first_thread: int,
) -> list[Actor]:
    """One actor per lane group, `config.actor_threads_per_device` per actor device.

    `mesh` is this process's learner devices; `first_thread` the global index of this
    process's first actor thread (each thread's key depends on its global index)."""
    key = jax.random.fold_in(jax.random.PRNGKey(config.seed), start_update + 1)
    actors = []
    for i, group in enumerate(lanes):
        device = devices[i // config.actor_threads_per_device]
        timer = PhaseTimer()
        actor_key = jax.random.fold_in(key, first_thread + i)
        loop = loop_cls(agent, group, config.rollout_length, device, actor_key, timer)
        schedule = None
        if config.deterministic:
            schedule = deterministic_schedule(
                i, len(lanes), config.trajectories_per_update, start_update
            )
        actors.append(Actor(i, loop, device, trajectory_sharding(mesh), params, supervisor,
                            config.queue_size, timer, schedule))  # fmt: skip
    return actors


def train(config: SebulbaConfig, env_fn: EnvFn | None = None) -> TrainResult:
    """Runs Sebulba to `config.total_env_steps`; resumes when `config.resume`.

    `env_fn(num_envs, seed)` builds every HostEnv of the run (actors' and evaluation's);
    by default `podracer.envs.make_host(config.env, ...)`. With `config.cluster.distributed`
    it joins the multi-process run first.
    """
    initialize_distributed(config.cluster)
    process, num_processes = jax.process_index(), jax.process_count()
    is_writer = process == 0
    devices = process_devices(process)
    actor_ids, learner_ids = config.device_ids(len(devices))
    env_fn = env_fn or _default_env_fn(config.env)
    num_threads = config.num_actor_threads(len(actor_ids))
    first_thread = process * num_threads  # global index of this process's first thread
    lane_envs = config.envs_per_thread // config.num_lanes
    envs: list[HostEnv] = []
    stuck: list[str] = []

    def close_envs() -> None:
        if not stuck:  # an env blocked in a call is left alone rather than closed under it
            for env in envs:
                env.close()

    with contextlib.ExitStack() as cleanup:
        cleanup.callback(close_envs)
        # Every env is built here, in the calling thread: a bad name fails before compiling.
        lanes = []
        for i in range(first_thread, first_thread + num_threads):
            lanes.append([])
            for k in range(config.num_lanes):
                envs.append(env_fn(lane_envs, config.seed + (i * config.num_lanes + k) * lane_envs))
                lanes[-1].append(envs[-1])
        spec = envs[0].spec
        if config.eval_interval and is_writer:  # process 0 evaluates
            envs.append(env_fn(config.eval_episodes, config.seed + 1_000_003))
        actor_devices = [devices[i] for i in actor_ids]
        loop_cls = choose_loop(config, envs[0], actor_devices[0])

        num_updates = config.num_updates(num_processes)
        steps_per_update = config.steps_per_update(num_processes)
        agent = make_agent(config.agent, spec, config.agent_config, total_updates=num_updates)
        mesh = global_learner_mesh(learner_ids)  # every process's learner devices
        local_mesh = learner_mesh([devices[i] for i in learner_ids])  # actors ship here

        run_dir = RunDir(config.runs_root, config.run_name) if config.run_name else None
        checkpointer = None
        if run_dir is not None:
            checkpointer = cleanup.enter_context(
                Checkpointer(run_dir.checkpoints, config.keep_checkpoints)
            )
        state, start_update, env_steps = _initial_state(config, agent, mesh, checkpointer)
        # Counted in env steps, not updates: a run resumed on another number of processes
        # (another global batch) still stops at `total_env_steps`.
        end_update = start_update + max(
            0, -(-(config.total_env_steps - env_steps) // steps_per_update)
        )
        writer = MetricWriter(
            run_dir if is_writer else None, config.tensorboard,
            truncate_after=env_steps if config.resume else None,
        )  # fmt: skip
        cleanup.callback(writer.close)
        if run_dir is not None and is_writer:
            run_dir.write_config(config)

        supervisor = Supervisor(config.stage_timeout_s)
        params = ParameterServer(local_replica(state.params), start_update)
        actors = _make_actors(config, agent, loop_cls, lanes, actor_devices, local_mesh, params,
                              supervisor, start_update, first_thread)  # fmt: skip
        learner = Learner(agent, mesh, actors, supervisor)
        evaluator = None
        if config.eval_interval and is_writer:
            evaluator = Evaluator(agent, envs[-1], actor_devices[0])

        total_steps = env_steps + (end_update - start_update) * steps_per_update
        progress = Progress(total_steps, enabled=config.progress and is_writer)
        cleanup.callback(progress.close)
        metrics = MetricAccumulator(num_processes)
        history: list[dict[str, float]] = []
        update, interrupted = start_update, False
        steady: tuple[float, int] | None = None  # (time, env steps) when the first update ended
        try:
            # With several processes a signal only casts this process's stop vote; all stop
            # after the update that carries it, so they save the same final checkpoint.
            with stop_on_signals(supervisor, stop=num_processes == 1):
                for actor in actors:
                    actor.start()
                g = 0
                while update < end_update:
                    t0 = time.perf_counter()
                    try:
                        rollouts = learner.collect(g, config.trajectories_per_update)
                    except Stopped:
                        interrupted = supervisor.interrupted is not None
                        break
                    waited = time.perf_counter() - t0
                    g += len(rollouts)
                    vote = supervisor.interrupted is not None
                    state, losses, update_s, stop = learner.update(state, rollouts, vote)
                    t1 = time.perf_counter()
                    params.publish(local_replica(state.params), update + 1)
                    metrics.add_update(
                        update, rollouts, losses, waited, update_s, time.perf_counter() - t1
                    )
                    update += 1
                    env_steps += steps_per_update
                    if steady is None:
                        steady = (time.perf_counter(), env_steps)
                    if stop:  # some process was interrupted: all stop after this update
                        supervisor.interrupted = supervisor.interrupted or "a peer's signal"
                        interrupted = True
                    last = update == end_update or interrupted
                    if update % config.log_interval == 0 or last:
                        row = metrics.row()
                        if evaluator is not None and (update % config.eval_interval == 0 or last):
                            row["eval/episodic_return"] = evaluator(local_replica(state.params))
                        writer.write(env_steps, row)
                        history.append({"env_steps": env_steps, **row})
                        progress.update(env_steps, row["charts/SPS"], metrics.recent_return)
                    every = config.checkpoint_interval
                    if checkpointer is not None and every and update % every == 0 and not last:
                        checkpointer.save(update, state, _metadata(config, spec, env_steps, update))
                    if interrupted:
                        break
        finally:
            end_time = time.perf_counter()
            stuck[:] = supervisor.join(min(10.0, config.stage_timeout_s))
        # Reached only without an error: the end, or SIGINT/SIGTERM.
        if checkpointer is not None and update > start_update:
            checkpointer.save(update, state, _metadata(config, spec, env_steps, update))

    sps = math.nan
    if steady is not None and env_steps > steady[1]:
        sps = (env_steps - steady[1]) / (end_time - steady[0])
    return TrainResult(
        state,
        history,
        env_steps,
        update,
        float(sps),
        interrupted,
        run_dir.path if run_dir else None,
    )
