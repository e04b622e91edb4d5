"""`train(config)`: build envs, agent and actor threads, then run the learner loop.

What runs where is decided once, after the run opens (`Plan.of`). The learner loop runs
in the calling thread (`learn`, under the run harness); actors run in worker threads.
Everything that can fail on bad input (devices, env name, agent options, a refused
resume) fails before the first compile.

Multi-host (`--distributed`): every process runs this same function on its own devices
(device ids are local indices, the same on every process) and its own environments; the
learner mesh spans every process's learner devices, so one update trains on the
trajectories of all hosts and `total_env_steps` counts all of them. Metrics are
aggregated over processes and written by process 0; checkpoints are saved by every
process through Orbax.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable
from collections.abc import Sequence
from typing import Any

import jax
import numpy as np

from podracer.agents import Agent
from podracer.agents import ConfigError
from podracer.agents import TrainState
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
from podracer.sebulba.learner import init_state
from podracer.sebulba.learner import local_replica
from podracer.sebulba.learner import replicated
from podracer.sebulba.learner import seed_keys
from podracer.sebulba.learner import trajectory_sharding
from podracer.sebulba.lifetime import Supervisor
from podracer.sebulba.params import ParameterServer
from podracer.sebulba.plan import Plan
from podracer.sebulba.rollout import PythonLoop
from podracer.sebulba.rollout import XlaLoop
from podracer.sebulba.rollout import has_xla
from podracer.sebulba.stats import MetricAccumulator
from podracer.sebulba.stats import stages
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


def choose_loop(actor_loop: str, env: HostEnv, device: jax.Device) -> type:
    """The rollout loop class an actor on `device` uses for `env` (`actor_loop`: "auto",
    "xla" or "python")."""
    xla_ok = has_xla(env) and device.platform == "cpu"
    if actor_loop == "xla" and not xla_ok:
        raise ConfigError(
            f"SebulbaConfig.actor_loop='xla' needs an envpool env on a CPU actor device; "
            f"env {env.spec.name!r} on {device.platform}"
        )
    use_xla = actor_loop == "xla" or (actor_loop == "auto" and xla_ok)
    return XlaLoop if use_xla else PythonLoop


def make_envs(env_fn: EnvFn, plan: Plan, seed: int) -> list:
    """Each of this process's actor threads' env lanes, built here in the calling thread: a
    bad name fails before anything compiles. Env seeds depend on the thread's global index
    and on `seed` (the run's, or seed+k for seed k of a multi-seed run)."""
    lanes, size = plan.num_lanes, plan.lane_envs
    return [
        [env_fn(size, seed + (i * lanes + k) * size) for k in range(lanes)]
        for i in range(plan.first_thread, plan.first_thread + plan.num_threads)
    ]


def make_actors(
    agent: Agent, lanes: list, plan: Plan, params: ParameterServer, supervisor: Supervisor,
    start: int, *, seed: int, member: int | None = None,
) -> list[Actor]:  # fmt: skip
    """One actor per lane group, `plan.threads_per_device` per actor device, putting its
    trajectories on this process's learner devices.

    Each thread's key depends on its global index, on `seed` (the run's, or seed+k for
    seed k) and on the update the run (re)starts at. `member`: the seed index k in a
    multi-seed run, else None."""
    loop_cls = choose_loop(plan.actor_loop, lanes[0][0], plan.actor_devices[0])
    key = jax.random.fold_in(jax.random.PRNGKey(seed), start + 1)
    actors = []
    for i, group in enumerate(lanes):
        device, timer = plan.thread_device(i), PhaseTimer()
        thread_key = jax.random.fold_in(key, plan.first_thread + i)
        loop = loop_cls(agent, group, plan.rollout_length, device, thread_key, timer)
        schedule = None
        if plan.deterministic:
            schedule = deterministic_schedule(i, len(lanes), plan.trajectories_per_update, start)
        actors.append(Actor(
            i, loop, device, trajectory_sharding(plan.local_learner_mesh), params, supervisor,
            queue_size=plan.queue_size, timer=timer, schedule=schedule, member=member,
        ))  # fmt: skip
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
        plan = Plan.of(config, run.process_index, run.num_processes)
        seeds = plan.num_seeds
        env_fn = env_fn or _default_env_fn(config.env, config.env_kwargs)
        # Per seed: per thread: per lane. Timed, as some libraries build their emulators
        # one at a time (ale-py: ~0.1 s each, holding the GIL): a slow start is named.
        built = time.perf_counter()
        lanes = [make_envs(env_fn, plan, plan.seed + k) for k in range(seeds)]
        built = time.perf_counter() - built
        envs = [env for seed in lanes for group in seed for env in group]
        stuck = cleanup.enter_context(_closing(envs))
        spec = lanes[0][0][0].spec
        total_updates = learner_updates(config.agent_config, config.num_updates(run.num_processes))
        agent = make_agent(config.agent, spec, config.agent_config, total_updates=total_updates)
        evaluate = None
        if config.eval_interval and run.is_writer:  # process 0 evaluates
            evaluate = _evaluator(config, agent, env_fn, plan.actor_devices[0], cleanup)
        mesh = plan.learner_mesh
        key = seed_keys(plan.seed, seeds)
        abstract = jax.eval_shape(lambda k: init_state(agent, k, mesh), key)
        abstract = abstract_like(abstract, replicated(mesh))
        restored = run.restore(spec, abstract)
        run.check(spec, abstract)
        if restored is None:
            state = run.warm_start(init_state(agent, key, mesh))
        else:
            state = restored.train
        supervisor = Supervisor(config.stage_timeout_s)
        params = ParameterServer(local_replica(state.params), run.step)
        actors = []  # seed by seed
        for k in range(seeds):
            member = None if seeds == 1 else k
            actors += make_actors(
                agent, lanes[k], plan, params, supervisor, run.step,
                seed=plan.seed + k, member=member,
            )  # fmt: skip
        learner = Learner(agent, mesh, actors, supervisor, seeds, plan.members_at_once)
        if run.is_writer:  # every check passed (bad input stays one line); stderr, as the
            # stages line, with the progress line off too
            print(f"sebulba: {len(envs) * plan.lane_envs:,} envs built in {built:.1f}s",
                  file=sys.stderr, flush=True)  # fmt: skip
        run.begin(spec, "compiling the actors' rollout and the learner's update ...")
        try:
            for actor in actors:
                actor.start()
            metrics = MetricAccumulator(run.num_processes)
            if seeds > 1:  # one per seed: each seed's rows
                metrics = [MetricAccumulator(run.num_processes) for _ in range(seeds)]
            state = learn(run, learner, state, params, metrics, plan, evaluate=evaluate, spec=spec)
        finally:
            stuck[:] = supervisor.join(min(10.0, config.stage_timeout_s))
        return run.finish(state)


def learn(
    run: Run,
    learner: Learner,
    state: TrainState,
    params: ParameterServer,
    metrics: MetricAccumulator | Sequence[MetricAccumulator],
    plan: Plan,
    *,
    evaluate: Callable[[Any], float | list[float]] | None,
    spec: Any,
) -> TrainState:
    """The learner loop until the run ends (budget, wall time, or a stop every process
    agreed on); returns the final train state. `evaluate(params)` (process 0's, or None)
    gives the greedy return when an evaluation is due. With several seeds, `metrics`
    holds one accumulator per seed, `evaluate` gives one return per seed, and each row
    is a list of one per seed (`Run.log`)."""
    trajectories_per_update = plan.trajectories_per_update
    many = not isinstance(metrics, MetricAccumulator)
    accumulators = list(metrics) if many else [metrics]
    g = 0  # the global index of the next trajectory to consume
    while run.running():
        t0 = time.perf_counter()
        rollouts = learner.collect(g, trajectories_per_update)
        waited = time.perf_counter() - t0
        g += trajectories_per_update
        # This process's stop vote rides on the update; `stop` is every process's verdict.
        state, losses, update_s, stop = learner.update(state, rollouts, run.stop_vote())
        t1 = time.perf_counter()
        params.publish(local_replica(state.params), run.step + 1)
        publish_s = time.perf_counter() - t1
        for acc, seed_rollouts, seed_losses in zip(accumulators, rollouts, losses, strict=True):
            acc.add_update(run.step, seed_rollouts, seed_losses, waited, update_s, publish_s)
        run.advance(plan.steps_per_update, stop=stop)
        # Decided alike on every process: a row is a collective (metrics over processes).
        evaluating = run.due("eval")
        if evaluating or run.due("log"):
            rows = [acc.row() for acc in accumulators]
            if evaluating and evaluate is not None:
                returns = evaluate(local_replica(state.params))
                returns = returns if many else [returns]
                for row, value in zip(rows, returns, strict=True):
                    row["eval/episodic_return"] = value
            run.log(rows if many else rows[0])
        if run.due("video"):
            run.videos.record(learner.agent, state.params, run.env_steps)
        run.maybe_save(spec, state)
    line = stages(accumulators)
    if run.is_writer and line:
        # Beside the progress line (stderr): stdout keeps the run's one summary line.
        seeds = f" (the actors of all {len(accumulators)} seeds)" if many else ""
        print(f"{run.runtime}: {line}{seeds}", file=sys.stderr, flush=True)
    return state


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
