"""`train(config)`: build envs, agent and actor threads, then run the learner loop.

The learner runs in the calling thread (`learner.learn`, under the run harness); actors
run in worker threads. Everything that can fail on bad input (devices, env name, agent
options, a refused resume) fails before the first compile.

Multi-host (`--distributed`): every process runs this same function on its own devices
(device ids are local indices, the same on every process) and its own environments; the
learner mesh spans every process's learner devices, so one update trains on the
trajectories of all hosts and `total_env_steps` counts all of them. Metrics are
aggregated over processes and written by process 0; checkpoints are saved by every
process through Orbax.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from podracer.agents import Agent
from podracer.agents import ConfigError
from podracer.agents import host_episodes
from podracer.agents import learner_updates
from podracer.agents import make_agent
from podracer.envs import HostEnv
from podracer.runs import Run
from podracer.runs import RunResult
from podracer.runs import abstract_like
from podracer.sebulba.actor import Actor
from podracer.sebulba.actor import deterministic_schedule
from podracer.sebulba.config import SebulbaConfig
from podracer.sebulba.learner import Learner
from podracer.sebulba.learner import global_learner_mesh
from podracer.sebulba.learner import init_state
from podracer.sebulba.learner import learn
from podracer.sebulba.learner import learner_mesh
from podracer.sebulba.learner import local_replica
from podracer.sebulba.learner import process_devices
from podracer.sebulba.learner import replicated
from podracer.sebulba.learner import seed_keys
from podracer.sebulba.learner import trajectory_sharding
from podracer.sebulba.lifetime import Supervisor
from podracer.sebulba.params import ParameterServer
from podracer.sebulba.rollout import PythonLoop
from podracer.sebulba.rollout import XlaLoop
from podracer.sebulba.rollout import has_xla
from podracer.sebulba.stats import MetricAccumulator
from podracer.sebulba.timing import PhaseTimer

# (num_envs, seed) -> a HostEnv with batch_size == num_envs; the default is make_host(config.env).
EnvFn = Callable[[int, int], HostEnv]


def _evaluator(config: SebulbaConfig, agent, env_fn: EnvFn, device, cleanup):
    """`evaluate(params) -> mean greedy return` (a list, one per seed, with several) on
    envs of its own, seed k's seeded as the single run with seed+k's (closed by `cleanup`)."""
    seeds, eval_envs = config.num_seeds, []
    for k in range(seeds):
        eval_envs.append(env_fn(config.eval_episodes, config.seed + k + 1_000_003))
        cleanup.callback(eval_envs[-1].close)

    def greedy(params, env) -> float:
        episodes = host_episodes(agent, env, params, config.eval_max_steps, device=device)
        return float(np.mean(episodes.returns))

    def evaluate(params) -> float | list[float]:
        if seeds == 1:
            return greedy(params, eval_envs[0])
        return [greedy(jax.tree.map(lambda x, k=k: x[k], params), env)
                for k, env in enumerate(eval_envs)]  # fmt: skip

    return evaluate


def _default_env_fn(name: str, env_kwargs: dict | None = None) -> EnvFn:
    def make(num_envs: int, seed: int) -> HostEnv:
        from podracer.envs import make_host

        try:
            return make_host(name, num_envs=num_envs, seed=seed, **(env_kwargs or {}))
        except (ValueError, ImportError) as e:
            raise ConfigError(f"SebulbaConfig.env: {e}") from None
        except TypeError as e:  # a keyword the env's constructor does not take
            raise ConfigError(f"SebulbaConfig.env_kwargs={env_kwargs}: {e}") from None

    return make


def choose_loop(config: SebulbaConfig, env: HostEnv, device: jax.Device) -> type:
    """The rollout loop class an actor on `device` uses for `env` (`config.actor_loop`)."""
    xla_ok = has_xla(env) and device.platform == "cpu"
    if config.actor_loop == "xla" and not xla_ok:
        raise ConfigError(
            f"SebulbaConfig.actor_loop='xla' needs an envpool env on a CPU actor device; "
            f"env {env.spec.name!r} on {device.platform}"
        )
    use_xla = config.actor_loop == "xla" or (config.actor_loop == "auto" and xla_ok)
    return XlaLoop if use_xla else PythonLoop


def actor_devices(config: SebulbaConfig, process: int, devices: list) -> list:
    """The devices actor ids index: `devices` (this process's default-backend devices), or
    its CPU devices with `actor_backend="cpu"` when the default backend is another."""
    if config.actor_backend == "default" or devices[0].platform == "cpu":
        return devices
    cpus = [d for d in jax.devices("cpu") if d.process_index == process]
    return sorted(cpus, key=lambda d: d.id)


def make_envs(
    config: SebulbaConfig, env_fn: EnvFn, first_thread: int, num_threads: int,
    seed: int | None = None,
) -> list:  # fmt: skip
    """Each actor thread's env lanes, built here in the calling thread: a bad name fails
    before anything compiles. Env seeds depend on the thread's global index and on `seed`
    (the run's, or seed+k for seed k of a multi-seed run)."""
    seed = config.seed if seed is None else seed
    lane_envs = config.envs_per_thread // config.num_lanes
    return [
        [env_fn(lane_envs, seed + (i * config.num_lanes + k) * lane_envs)
         for k in range(config.num_lanes)]
        for i in range(first_thread, first_thread + num_threads)
    ]  # fmt: skip


def make_actors(
    config: SebulbaConfig, agent: Agent, lanes: list, devices: list, mesh,
    params: ParameterServer, supervisor: Supervisor, start: int, first_thread: int,
    seed: int | None = None, member: int | None = None,
) -> list[Actor]:  # fmt: skip
    """One actor per lane group, `config.actor_threads_per_device` per actor device.

    `mesh` is this process's learner devices; each thread's key depends on its global
    index, on `seed` (the run's, or seed+k for seed k) and on the update the run
    (re)starts at. `member`: the seed index k in a multi-seed run, else None."""
    loop_cls = choose_loop(config, lanes[0][0], devices[0])
    seed = config.seed if seed is None else seed
    key = jax.random.fold_in(jax.random.PRNGKey(seed), start + 1)
    actors = []
    for i, group in enumerate(lanes):
        device, timer = devices[i // config.actor_threads_per_device], PhaseTimer()
        loop = loop_cls(agent, group, config.rollout_length, device,
                        jax.random.fold_in(key, first_thread + i), timer)  # fmt: skip
        schedule = None
        if config.deterministic:
            schedule = deterministic_schedule(i, len(lanes), config.trajectories_per_update, start)
        actors.append(Actor(i, loop, device, trajectory_sharding(mesh), params, supervisor,
                            config.queue_size, timer, schedule, member))  # fmt: skip
    return actors


def train(
    config: SebulbaConfig,
    env_fn: EnvFn | None = None,
    on_row: Callable[[dict[str, Any]], None] | None = None,
) -> RunResult:
    """Runs Sebulba to `config.total_env_steps`; continues the run with `config.resume`.

    `env_fn(num_envs, seed)` builds every HostEnv of the run (actors' and evaluation's);
    by default `podracer.envs.make_host(config.env, ...)`. `on_row(row)` receives each
    logged row as it is written (`env_steps`, `seed` in a multi-seed run, then metrics
    such as `charts/episodic_return`); the returned `RunResult.history` holds them all.

    `config.num_seeds` S > 1: seed k gets its own actor threads and envs, seeded as the
    single run with seed+k's; the train state (and checkpoints) a leading `[S]` axis.
    """
    with Run.open(config, "sebulba", on_row) as run, contextlib.ExitStack() as cleanup:
        devices = process_devices(run.process_index)
        actor_pool = actor_devices(config, run.process_index, devices)
        separate = None if actor_pool is devices else len(actor_pool)
        actor_ids, learner_ids = config.device_ids(len(devices), separate)
        num_threads = config.num_actor_threads(len(actor_ids))
        first_thread = run.process_index * num_threads
        seeds = config.num_seeds
        env_fn = env_fn or _default_env_fn(config.env, config.env_kwargs)
        lanes = [
            make_envs(config, env_fn, first_thread, num_threads, config.seed + k)
            for k in range(seeds)
        ]  # per seed: per thread: per lane
        envs = [env for seed in lanes for group in seed for env in group]
        stuck = cleanup.enter_context(_closing(envs))
        spec = lanes[0][0][0].spec
        steps_per_update = config.steps_per_update(run.num_processes)
        total_updates = learner_updates(config.agent_config, config.num_updates(run.num_processes))
        agent = make_agent(config.agent, spec, config.agent_config, total_updates=total_updates)
        evaluate = None
        if config.eval_interval and run.is_writer:  # process 0 evaluates
            evaluate = _evaluator(config, agent, env_fn, actor_pool[actor_ids[0]], cleanup)
        mesh = global_learner_mesh(learner_ids)  # every process's learner devices
        key = seed_keys(config.seed, seeds)
        abstract = jax.eval_shape(lambda k: init_state(agent, k, mesh), key)
        restored = run.restore(spec, abstract_like(abstract, replicated(mesh)))
        if restored is None:
            state = run.warm_start(spec, init_state(agent, key, mesh))
        else:
            state = restored.train
        supervisor = Supervisor(config.stage_timeout_s)
        params = ParameterServer(local_replica(state.params), run.step)
        actor_mesh = learner_mesh([devices[i] for i in learner_ids])  # this process's
        actors = []  # seed by seed
        for k in range(seeds):
            actors += make_actors(config, agent, lanes[k], [actor_pool[i] for i in actor_ids],
                                  actor_mesh, params, supervisor, run.step, first_thread,
                                  config.seed + k, None if seeds == 1 else k)  # fmt: skip
        learner = Learner(agent, mesh, actors, supervisor, seeds)
        run.begin(spec, "compiling the actors' rollout and the learner's update ...")
        try:
            for actor in actors:
                actor.start()
            metrics = MetricAccumulator(run.num_processes)
            if seeds > 1:  # one per seed: each seed's rows
                metrics = [MetricAccumulator(run.num_processes) for _ in range(seeds)]
            state = learn(run, learner, state, params, metrics, config.trajectories_per_update,
                          steps_per_update, evaluate, spec)  # fmt: skip
        finally:
            stuck[:] = supervisor.join(min(10.0, config.stage_timeout_s))
        return run.finish(state)


@contextlib.contextmanager
def _closing(envs: list[HostEnv]):
    """Closes `envs` at the end, unless a thread is stuck inside one (then left alone
    rather than closed under it); yields the list the stuck threads' names go in."""
    stuck: list[str] = []
    try:
        yield stuck
    finally:
        if not stuck:
            for env in envs:
                env.close()
