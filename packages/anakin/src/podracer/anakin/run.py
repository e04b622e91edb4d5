"""Anakin's loop: compiled chunks, and between them what the host does (`Run`).

The host acts only between chunks. Everything a run needs to continue exactly (env
states, keys, replay, train state) is in `RunnerState`: its `train` part is the
checkpoint's shared `train` item, the rest its `runtime` item.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from podracer.agents import ConfigError
from podracer.agents import learner_updates
from podracer.agents import make_agent
from podracer.anakin.config import AnakinConfig
from podracer.anakin.plan import Plan
from podracer.anakin.plan import Swept
from podracer.anakin.runtime import MAX_ROWS
from podracer.anakin.runtime import ChunkMetrics
from podracer.anakin.runtime import RunnerState
from podracer.anakin.runtime import check_memory
from podracer.anakin.runtime import make_chunk
from podracer.anakin.runtime import make_evaluate
from podracer.anakin.runtime import make_exploit
from podracer.anakin.runtime import make_init
from podracer.anakin.runtime import make_mesh
from podracer.anakin.runtime import state_shardings
from podracer.runs import Run
from podracer.runs import RunResult
from podracer.runs import abstract_like
from podracer.runs import block
from podracer.runs import read_jsonl
from podracer.runs.signals import Interrupted
from podracer.runs.signals import aside
from podracer.runs.sweep import PREFIX


class Program(NamedTuple):
    """A run's compiled functions and the abstract state they carry."""

    init: Any  # key -> RunnerState
    chunk: Any  # RunnerState -> (RunnerState, ChunkMetrics)
    evaluate: Any  # (params, key) -> mean greedy return, or None
    abstract: RunnerState  # ShapeDtypeStructs with their shardings
    exploit: Any = None  # PBT's step: (state, key) -> (state, sources), or None
    plan: Plan | None = None  # what they were built for; the loop's calls and rows
    # Seconds `build` already spent tracing and lowering the chunk (a sweep's check): the
    # first chunk call then only compiles; the run's compile figure adds these
    # (`RunClock.staged`), so that it counts the same stages with a sweep as without.
    staged_seconds: float = 0.0


def make_env(config: AnakinConfig):
    """The run's JaxEnv, checked on abstract values (`check_jax_env`) before anything
    compiles: a step that changes reset's shapes would fail deep in the chunk's scan."""
    from podracer.envs import make
    from podracer.envs.checks import check_jax_env

    try:
        env = make(config.env, **config.env_kwargs)
    except (ValueError, ImportError) as e:
        raise ConfigError(f"AnakinConfig.env: {e}") from None
    except TypeError as e:  # a keyword the env's constructor does not take
        raise ConfigError(f"AnakinConfig.env_kwargs={config.env_kwargs}: {e}") from None
    try:
        check_jax_env(env)
    except ValueError as e:
        raise ConfigError(f"AnakinConfig.env: {e}") from None
    return env


def build(config: AnakinConfig, env) -> tuple[Any, Program]:
    """The agent (a sweep's first member's) and the compiled programs; every check runs
    here, before compiling."""
    num_devices = config.check_devices(len(jax.devices()))
    total_updates = learner_updates(config.agent_config, config.num_updates)
    mesh = make_mesh(num_devices)

    def agent_with(values):  # a member's agent: its swept values as `hyper` (optax's shape)
        return make_agent(config.agent, env.spec, config.agent_config,
                          total_updates=total_updates, hyper=values)  # fmt: skip

    grid, swept = config.grid, None
    if grid.fields:
        per_member = [p for p in grid.points for _ in range(config.num_seeds)]
        swept = Swept(agent_with, {f: np.array([p[f] for p in per_member]) for f in grid.fields})
    agent = agent_with(grid.points[0])
    if swept is None:
        return agent, _program(env, agent, Plan.of(config, mesh))
    plan = Plan.of(config, mesh, swept)
    try:
        program = _program(env, agent, plan)
    except ConfigError:
        raise
    except _SWEEP_ERRORS:  # the agent cannot take a traced value of a swept field
        raise ConfigError(_unsweepable(config, env, agent, plan)) from None
    return agent, program


# What JAX raises where Python reads a traced value (a branch, a shape, a loop count), and
# what an agent's own checks raise on one (a value they cannot compare: ValueError,
# TypeError). Seen only where a sweep traces values that a plain run passes as floats.
_SWEEP_ERRORS = (
    jax.errors.ConcretizationTypeError,
    jax.errors.TracerBoolConversionError,
    jax.errors.TracerIntegerConversionError,
    jax.errors.TracerArrayConversionError,
    ValueError,
    TypeError,
)


def _program(env, agent, plan: Plan) -> Program:
    mesh, members = plan.mesh, plan.num_members
    init = make_init(agent, env, plan)
    keys = jax.ShapeDtypeStruct((members, 2) if members > 1 else (2,), jnp.uint32)
    abstract = jax.eval_shape(init, keys)  # `member_keys`'s shape
    check_memory(abstract, plan.num_envs, plan.rollout_length, mesh)
    evaluate = make_evaluate(agent, env, plan) if plan.eval_envs else None
    chunk = make_chunk(agent, env, plan)
    shardings = state_shardings(mesh, abstract, members)
    abstract = abstract_like(abstract, shardings)
    staged = 0.0
    if plan.swept is not None:  # traced now, so that a field the agent cannot sweep fails here
        start = time.perf_counter()
        chunk.lower(abstract)
        staged = time.perf_counter() - start
        if evaluate is not None:
            keys = jax.ShapeDtypeStruct((members, 2), jnp.uint32)
            jax.eval_shape(evaluate, abstract.train.params, keys)
    exploit = None
    if plan.population:
        # each swept value's range: the grid's (every member holds one of its points)
        bounds = {f: (float(min(v)), float(max(v))) for f, v in plan.swept.values.items()}
        exploit = make_exploit(mesh, members, plan.pbt_exploited, bounds)
    return Program(init, chunk, evaluate, abstract, exploit, plan, staged)


def _unsweepable(config: AnakinConfig, env, agent, plan: Plan) -> str:
    """The one-line error for a sweep whose program cannot trace: the fields that fail
    when swept alone (the agent reads them in Python)."""
    failing, reason = [], ""
    for field, values in plan.swept.values.items():
        alone = dataclasses.replace(plan, swept=plan.swept._replace(values={field: values}))
        try:
            _program(env, agent, alone)
        except ConfigError:
            raise
        except _SWEEP_ERRORS as e:
            failing.append(f"{config.grid.group}.{field}")
            reason = reason or str(e).strip().splitlines()[0][:200]
    names = ", ".join(failing) or ", ".join(config.grid.names())
    return (
        f"AnakinConfig.sweep: agent {config.agent!r} reads {names} in Python (a branch, a "
        "check, a shape or a loop count), so the members of one program cannot differ in "
        f"it: sweep it in separate runs ({reason})"
    )


def _copy(state: Any) -> Any:
    """A copy of `state` in new buffers with its shardings (the chunk donates its input),
    as one program: a `jnp.copy` per leaf compiles one small program per distinct leaf
    type, dozens for MuZero's state (~2 s of a start on the TPU, where no cache keeps
    programs that small)."""
    shardings = jax.tree.map(lambda x: x.sharding, state)
    return jax.jit(lambda s: jax.tree.map(jnp.copy, s), out_shardings=shardings)(state)


class ChunkAhead:
    """The chunk traced and lowered here, from the program's abstract state; its XLA
    compile on a second thread, from entering the context in which this thread makes the
    run's state. A first start's init is a program of its own (MuZero's MinAtar init: 12 s
    of XLA on a TPU); XLA compiles without Python's lock, so with both traced first the
    two compiles run side by side instead of one after the other, and neither trace waits
    for the lock. The loop's first call finds the chunk compiled (JAX keeps the trace, the
    lowering and the executable in memory); `seconds()` waits for it and gives its trace,
    lowering and compile seconds, which the run's compile figure counts.

    As a context manager around the state's making: an error there waits for the
    compile to end (XLA cannot stop part way, and the process must not exit under it)
    and is raised as it was; the compile's own error is raised by `seconds()`, in the
    loop's first step, where the chunk's first call would have raised it. A stop signal
    meanwhile says in its one line that the process exits once the compile has ended."""

    def __init__(self, program: Program, run: Run) -> None:
        start = time.perf_counter()
        lowered = program.chunk.lower(program.abstract)
        self._seconds, self._error = time.perf_counter() - start, None
        self._thread = threading.Thread(
            target=self._compile, args=(lowered,), name="anakin-compile", daemon=True
        )
        # Not the thread's `is_alive()`: a signal between `__enter__`'s check and the
        # thread's start must still say that the exit waits for the compile.
        self._compiled, self._run = False, run

    def _compiling(self) -> str | None:
        return None if self._compiled else "XLA has compiled the chunk"

    def _compile(self, lowered: Any) -> None:
        start = time.perf_counter()
        try:
            lowered.compile()
        except BaseException as e:  # noqa: BLE001 - raised again in the main thread
            self._error = e
        self._seconds += time.perf_counter() - start
        self._compiled = True

    def seconds(self) -> float:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._seconds

    def __enter__(self) -> ChunkAhead:
        self._run.waiting(self._compiling)
        self._run.stop_if_requested()  # a signal during the trace: no compile to wait for
        self._thread.start()
        return self

    def __exit__(self, kind, *_) -> None:
        if kind is not None and self._thread.is_alive():
            if not issubclass(kind, Interrupted):  # a signal's own line said it already
                # An error: said now, not after the wait.
                line = ("anakin: exiting once XLA has compiled the chunk (it cannot stop "
                        "part way; a second signal exits at once)")  # fmt: skip
                print(line, file=sys.stderr, flush=True)
            self._thread.join()


def call_cap(program: Program, state: Any, run: Run) -> int:
    """The most updates one compiled call may make: the whole chunk, unless the chunk
    would take longer than the plan's `call_seconds`; then chunks run as several calls,
    each a loop step (stop votes, logging and checkpoints between them), and one line
    says so. Measured on a copy of the state (one update timed, after a first one that
    pays what is left of the start: the copy's compile, the executable's first load), so
    the run itself is untouched; processes agree on the slowest one's figure, as every
    call is collective. The same probe tells `run` that remainder (the first call's time
    beyond the second's), which the compile figure adds to `ChunkAhead`'s, so SPS leaves
    both out even when the whole run is one chunk."""
    plan = program.plan
    if plan.updates_per_chunk == 1:
        return 1
    start = time.perf_counter()
    probe, _ = program.chunk(_copy(state), 1)  # the chunk compiled ahead; the copy compiles
    block(probe)
    middle = time.perf_counter()
    block(program.chunk(probe, 1))
    seconds = time.perf_counter() - middle
    run.clock.compiled(max(0.0, middle - start - seconds))
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        seconds = float(np.max(multihost_utils.process_allgather(np.float64(seconds))))
    cap = max(1, int(plan.call_seconds / max(seconds, 1e-9)))
    if cap >= plan.updates_per_chunk:
        return plan.updates_per_chunk
    if run.is_writer:
        print(
            f"anakin: a chunk of {plan.updates_per_chunk:,} updates would take about "
            f"{plan.updates_per_chunk * seconds:,.0f} s ({seconds * 1e3:,.1f} ms per update): "
            f"it runs as calls of {cap:,} updates, so that a stop is honoured within about "
            f"{plan.call_seconds:,.0f} s",
            file=sys.stderr, flush=True,
        )  # fmt: skip
    return cap


def next_call(plan: Plan, cap: int, done: int) -> tuple[int, list[int]]:
    """The next call, `done` updates into the run: its updates (up to the end of the
    chunk and of the run, at most `cap`, and at most through `MAX_ROWS` rows), and the
    update counts within it at which metric rows end. A row ends at the first update that
    reaches each multiple of `plan.row_interval` env steps. How calls split a chunk
    never changes what it learns; each call costs a host sync (benchmarks/harness_ab.py)."""
    k = plan.updates_per_chunk
    updates = min(cap, k - done % k, max(plan.total_updates - done, 1))
    per_update, interval = plan.steps_per_update, plan.row_interval
    rows = []
    row = (done * per_update) // interval + 1  # the next row's number
    while len(rows) < MAX_ROWS:
        end = -(-row * interval // per_update) - done  # its first update reaching it
        if end > updates:
            break
        rows.append(end)
        row = (end + done) * per_update // interval + 1
    if len(rows) == MAX_ROWS:
        updates = rows[-1]
    return updates, rows


def member_keys(config: AnakinConfig, offset: int = 0) -> jax.Array:
    """The run's key (one member), or one key per member `[M, 2]`: a member of seed index
    k (`member_tags`) has seed+k's own, as the single run with that seed."""
    tags = config.member_tags()
    if len(tags) == 1:
        return jax.random.PRNGKey(config.seed + offset)
    return jnp.stack([jax.random.PRNGKey(config.seed + t["seed"] + offset) for t in tags])


def greedy_returns(program: Program, keys: jax.Array, params: Any, step: int) -> list[float]:
    """The mean greedy return of each member at loop step `step`, its keys folded from
    `keys` (`member_keys(config, offset=1)`: seed k evaluates with seed+k's own)."""
    if program.plan.num_members == 1:
        keys = jax.random.fold_in(keys, step)
    else:
        keys = jax.vmap(jax.random.fold_in, (0, None))(keys, step)
    return np.reshape(jax.device_get(program.evaluate(params, keys)), -1).tolist()


class _Rows:
    """Sums the calls' binned metrics (host values, `[S]` per seed) until a row is
    logged: episodes by count, losses weighted by their updates."""

    def __init__(self, num_seeds: int) -> None:
        self._num_seeds = num_seeds
        self._sums, self._losses = np.zeros((3, num_seeds)), {}
        self._updates, self._seconds = 0, 0.0

    def add(self, metrics: ChunkMetrics, row: int, updates: int, seconds: float) -> None:
        """Adds bin `row` of a call's metrics, which holds `updates` updates."""
        pick = lambda x: np.reshape(np.asarray(x)[..., row], self._num_seeds)
        sums = [metrics.episode_return_sum, metrics.episode_length_sum, metrics.episode_count]
        self._sums += np.stack([pick(x) for x in sums])
        for k, v in metrics.losses.items():  # each the sum over the bin's updates
            self._losses[k] = self._losses.get(k, 0.0) + pick(v)
        self._updates += updates
        self._seconds += seconds

    def take(self) -> list[dict[str, float]]:
        """One row per seed."""
        updates = max(self._updates, 1)
        rows = []
        for k, (returns, lengths, count) in enumerate(self._sums.T.tolist()):
            rows.append({
                "charts/episodic_return": returns / count if count else math.nan,
                "charts/episodic_length": lengths / count if count else math.nan,
                "charts/episodes": count,
                "timing/update": self._seconds / updates,
                **{name: float(v[k]) / updates for name, v in self._losses.items()},
            })  # fmt: skip
        self.__init__(self._num_seeds)
        return rows


class Lineage:
    """PBT's steps and their record, `pbt.jsonl` in the run directory: a line per step,
    `{"env_steps", "sources", "values"}`: member i took member `sources[i]`'s state, then
    the swept values `values` (`sweep/<group>.<field>` -> one per member). A resume drops
    the lines after its checkpoint (it makes them again, exactly)."""

    FILE = "pbt.jsonl"

    def __init__(
        self, run: Run, plan: Plan, state: RunnerState, names: dict[str, str], key: jax.Array
    ) -> None:
        """`names`: each swept field's row name; `key`: the run's, which each PBT step
        folds its count into."""
        self._run, self._plan, self._key = run, plan, key
        self._path = os.path.join(run.dir.path, self.FILE)
        self._names = names
        self.values = self._fetch(state)
        if run.is_writer and os.path.exists(self._path):
            kept = [r for r in read_jsonl(self._path) if r["env_steps"] <= run.env_steps]
            with open(self._path + ".tmp", "w") as f:
                f.writelines(json.dumps(r) + "\n" for r in kept)
            os.replace(self._path + ".tmp", self._path)

    def _fetch(self, state: RunnerState) -> dict[str, np.ndarray]:
        """The members' swept values in `state`, as rows name them. `values` holds them
        between steps: only an exploit step changes them, so calls need no fetch."""
        values = jax.device_get(state.population.values)
        return {self._names[k]: np.asarray(v) for k, v in values.items()}

    def due(self, updates: int) -> bool:
        """After `updates` updates of the run: whether they end the first chunk at or past
        a multiple of `pbt_interval` env steps (where calls end depends on timing; where
        chunks end does not)."""
        plan, steps = self._plan, self._run.env_steps
        interval = plan.pbt_interval
        if updates % plan.updates_per_chunk:
            return False
        return steps // interval > (steps - plan.steps_per_chunk) // interval

    def exploit(self, exploit, state: RunnerState) -> RunnerState:
        key = jax.random.fold_in(self._key, self._run.env_steps // self._plan.pbt_interval)
        state, sources = exploit(state, key)
        self.values = self._fetch(state)
        if self._run.is_writer:
            # each value as its dtype's shortest text (8e-4, not 0.000800000037...)
            values = {k: [float(str(x)) for x in v] for k, v in self.values.items()}
            sources = np.asarray(jax.device_get(sources)).tolist()
            line = {"env_steps": self._run.env_steps, "sources": sources, "values": values}
            with open(self._path, "a") as f:
                f.write(json.dumps(line) + "\n")
        return state


def train(
    config: AnakinConfig, on_row: Callable[[dict[str, Any]], None] | None = None
) -> RunResult:
    """Runs Anakin to `config.total_env_steps`; continues the run with `config.resume`.

    `on_row(row)` receives each logged row as it is written (`env_steps`, `seed` in a
    multi-seed run, then metrics such as `charts/episodic_return`), e.g. to plot live in
    a notebook; the returned `RunResult.history` holds them all. With
    `config.cluster.distributed`, joins the multi-process run first: the mesh then spans
    every process's devices and gradients are averaged across hosts.
    """
    with Run.open(config, "anakin", on_row) as run:
        env = make_env(config)
        agent, program = build(config, env)
        run.stop_if_requested()  # a signal so far: before restoring, tracing or compiling
        runtime_target = program.abstract._replace(train=None)
        restored = run.restore(env.spec, program.abstract.train, runtime_target)
        run.check(env.spec, program.abstract.train)
        if restored is None:
            keys = member_keys(config)
            init = program.init.trace(keys)  # Python: holds the lock, as the chunk's trace
            run.stop_if_requested()
        ahead = ChunkAhead(program, run) if run.env_steps < run.total_env_steps else None
        with ahead or contextlib.nullcontext():
            if restored is None:
                # Beside the chunk's compile; aside, so that a signal's line comes at once.
                state = aside(lambda: init.lower().compile())(keys)
                state = state._replace(train=run.warm_start(state.train))
            else:
                state = restored.runtime._replace(train=restored.train)
            plan = program.plan  # from here the loop reads the plan, not the config
            run.begin(env.spec, f"compiling a chunk of {plan.updates_per_chunk} updates ...")
        rows, cap = _Rows(plan.num_members), None
        per_update = plan.steps_per_update
        eval_keys = member_keys(config, offset=1)
        lineage = None
        if program.exploit is not None:
            names = {f: f"{PREFIX}{config.grid.group}.{f}" for f in config.grid.fields}
            lineage = Lineage(run, plan, state, names, jax.random.PRNGKey(config.seed))
        while run.running():
            if cap is None:  # in the first loop step, which waits for the compile
                run.clock.staged(program.staged_seconds + ahead.seconds())
                cap = call_cap(program, state, run)
            done = run.env_steps // per_update
            updates, ends = next_call(plan, cap, done)
            values = lineage.values if lineage else {}  # in force during the call
            state, metrics = program.chunk(state, updates, ends)
            metrics = jax.device_get(block(metrics))
            seconds = run.clock.step_seconds()
            run.advance(updates * per_update)
            evaluate = program.evaluate is not None and run.due("eval")
            exploit = lineage is not None and lineage.due(done + updates)
            # A row still open is closed where a step must not leave it behind: at an
            # evaluation, at a checkpoint (a resume starts from it), at PBT's step (the
            # values change) and at the end.
            close = evaluate or exploit or run.due("checkpoint") or run.last
            tail = [updates] if not ends or ends[-1] < updates else []  # an open row's bin
            for k, (start, end) in enumerate(zip([0, *ends], ends + tail, strict=False)):
                rows.add(metrics, k, end - start, seconds * (end - start) / updates)
                if k == len(ends) and not close:
                    break  # the open row continues in the next call
                row = rows.take()
                for m, r in enumerate(row):  # PBT: each member's values in this row
                    r.update({k: float(v[m]) for k, v in values.items()})
                if evaluate and end == updates:
                    returns = greedy_returns(program, eval_keys, state.train.params, run.step)
                    for r, value in zip(row, returns, strict=True):
                        r["eval/episodic_return"] = value
                run.log(row, (done + end) * per_update)
            if exploit:
                state = lineage.exploit(program.exploit, state)
            if run.due("video"):
                run.videos.record(agent, state.train.params, run.env_steps)
            run.maybe_save(env.spec, state.train, state._replace(train=None))
        return run.finish(state)
