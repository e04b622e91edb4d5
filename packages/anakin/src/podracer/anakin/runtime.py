"""Anakin's compiled programs: a training chunk and a greedy evaluation.

A chunk is one program, replicated over a `Mesh` of devices with `jax.shard_map`:

    state -> [fori_loop K: [scan T: act -> env.step] -> agent.update (pmean grads)] -> state

Params and optimizer state are replicated; environment states, timesteps, per-env
keys and a recurrent agent's core states are sharded along the batch axis. Each
environment's key is derived from its global index and acting samples with
per-environment keys, so the same global config gives the same run on any number of
devices.

Agents with replay (`agent.replay`, e.g. MuZero) learn from a sequence buffer instead:

    [scan T: act -> env.step] -> add [T+1, B] as B sequences -> [U x: sample S -> update]

Each device keeps its own buffer of the sequences its environments produced (local
replay: no cross-device traffic, and the buffer shards like the env states); gradients
are still averaged over devices. Sampling differs with the device count, so replay runs
are reproducible for a given topology (and exactly resumable) but not topology-invariant.

Many seeds, or a hyperparameter sweep's members, train as one program vmapped over a
leading member axis of the state. A sweep's members each build their agent inside the
traced program from their own swept values (`Swept`), so the values are arrays, one per
member, and the members share one compiled program.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from typing import Any
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from podracer.agents import Agent
from podracer.agents import ConfigError
from podracer.agents import TrainState
from podracer.agents import Trajectory
from podracer.agents import env_keys
from podracer.agents import init_local_replays
from podracer.agents import init_train_state
from podracer.agents import jax_episodes
from podracer.agents import make_learn
from podracer.agents import pmean_flat
from podracer.agents import vmap_in_turns
from podracer.agents.evaluation import per_env
from podracer.anakin.plan import Plan
from podracer.envs import JaxEnv
from podracer.envs import TimeStep

AXIS = "devices"


class RunnerState(NamedTuple):
    """Everything a chunk carries; the unit of Anakin's checkpoints (exact resume)."""

    train: TrainState  # replicated
    env_state: Any  # [N, ...] sharded
    timestep: TimeStep  # [N, ...] sharded, the current observation of every env
    env_key: chex.Array  # [N, 2] uint32 sharded, each environment's own random stream
    # The agent's replay (None without): a `ReplayState` whose every leaf has a leading
    # device axis [D, ...], sharded, so each device holds its own buffer.
    replay: Any = None
    # [N, ...] sharded: a recurrent agent's core state for acting on `timestep` (before
    # its reset at `first`); () for feed-forward agents.
    core: Any = ()
    # Population-based training's `Population` (replicated), () without: the members'
    # swept values live in the state, where the exploit step changes them.
    population: Any = ()


class Population(NamedTuple):
    """What PBT keeps per member (leaves `[M]` in the run's state, scalars in a chunk)."""

    values: dict[str, chex.Array]  # agent_config path -> the member's swept value
    return_sum: chex.Array  # float32: episodic returns since the last exploit step
    episode_count: chex.Array  # float32


# The most rows one call may end (static: the metrics' row axis is MAX_ROWS + 1 long, the
# last bin holding the updates after the call's last row). 128 x a few scalars per call.
MAX_ROWS = 128


class ChunkMetrics(NamedTuple):
    """Sums over all devices, binned by the metric rows a call's updates belong to: bin k
    (k < len(rows)) holds the updates of the call's k-th row, bin len(rows) the updates
    after its last one (a row still open). Every leaf has a leading `[MAX_ROWS + 1]` axis
    (after `[S]` in a multi-seed run); the host turns the sums into means."""

    losses: dict[str, chex.Array]  # sums over each bin's updates
    episode_return_sum: chex.Array  # float32, over episodes that ended in the bin
    episode_length_sum: chex.Array  # float32
    episode_count: chex.Array  # float32


def make_mesh(num_devices: int) -> Mesh:
    """A 1-D mesh over the first `num_devices` devices of all processes."""
    devices = jax.devices()[:num_devices]
    return Mesh(devices, (AXIS,))


def state_shardings(mesh: Mesh, state: RunnerState, num_seeds: int = 1) -> RunnerState:
    """Params and optimizer state replicated, envs, keys and replay split over the mesh
    (after the leading seed axis of a multi-seed state)."""
    replicated = NamedSharding(mesh, P())
    sharded = NamedSharding(mesh, P(AXIS) if num_seeds == 1 else P(None, AXIS))
    return RunnerState(
        train=jax.tree.map(lambda _: replicated, state.train),
        env_state=jax.tree.map(lambda _: sharded, state.env_state),
        timestep=jax.tree.map(lambda _: sharded, state.timestep),
        env_key=sharded,
        replay=jax.tree.map(lambda _: sharded, state.replay),
        core=jax.tree.map(lambda _: sharded, state.core),
        population=jax.tree.map(lambda _: replicated, state.population),
    )


def _split_per_env(keys: chex.Array, num: int) -> chex.Array:
    """[B, 2] keys -> [num, B, 2]: independent streams per environment."""
    return jnp.swapaxes(jax.vmap(lambda k: jax.random.split(k, num))(keys), 0, 1)


def _act(agent: Agent):
    """`act(params, keys [B, 2], timestep [B], core [B], step) -> (action, extras, core)`:
    `agent.act` with a key per environment (topology invariance); one batched forward."""
    act = per_env(lambda p, k, o, c, f, step: agent.act(p, k, o, step, c, f))
    return lambda params, keys, ts, core, step: act(params, keys, ts.observation, core,
                                                    ts.first, step)  # fmt: skip


def make_init(agent: Agent, env: JaxEnv, plan: Plan) -> Callable[[chex.PRNGKey], RunnerState]:
    """`init(key) -> RunnerState`, computed directly into its shardings (multi-host safe).

    With `plan.num_members > 1`, `init(keys [S, 2])`: S independent states stacked on a
    leading member axis (member k's state is what `init(keys[k])` makes alone; with a
    sweep, with its own agent; with PBT's `population`, holding its swept values).
    `plan.rollout_length` sizes the replay's sequences.
    """
    num_envs, mesh, num_seeds = plan.num_envs, plan.mesh, plan.num_members
    agent_of, values = plan.members(agent)

    def init_one(key, hparams):
        agent = agent_of(hparams)
        train_key, env_root = jax.random.split(key)
        env_keys = jax.vmap(lambda i: jax.random.fold_in(env_root, i))(jnp.arange(num_envs))
        reset_keys, env_keys = _split_per_env(env_keys, 2)
        env_state, timestep = jax.vmap(env.reset)(reset_keys)
        train = init_train_state(agent, train_key)
        core = agent.initial_core(num_envs)
        # A stored sequence looks like one environment's column of a rollout.
        shapes = None
        if agent.replay is not None:
            rollout = make_rollout(agent, env, plan.rollout_length)
            shapes = jax.eval_shape(
                rollout, train.params, env_state, timestep, env_keys, core, train.update_step
            )[0]
        replay_state = init_local_replays(agent, shapes, mesh.size)
        members = ()
        if plan.population:
            zero = jnp.float32(0.0)
            members = Population({k: jnp.float32(v) for k, v in hparams.items()}, zero, zero)
        state = RunnerState(train, env_state, timestep, env_keys, replay=replay_state, core=core,
                            population=members)  # fmt: skip
        # Strongly typed, as the chunk returns it: an env whose reset leaves a weak-typed
        # leaf (gymnax Pendulum's `last_u`) would otherwise compile the chunk twice, once
        # for the initial state and once for every later one.
        strong = lambda x: jnp.asarray(x, x.dtype) if getattr(x, "weak_type", False) else x  # noqa: E731
        return jax.tree.map(strong, state)

    # Seeds one after another (`lax.map`), not vmapped: vmapped, Flax's orthogonal
    # initialisers become batched LAPACK QRs, which XLA:CPU's default concurrency-
    # optimized scheduler can deadlock (benchmarks/results/xla_cpu_deadlock.py). The
    # values are the same; init runs once, so its speed does not matter.
    if num_seeds == 1:
        init = lambda key: init_one(key, values)  # noqa: E731
    else:
        init = lambda keys: jax.lax.map(lambda a: init_one(*a), (keys, values))  # noqa: E731
    keys = jax.random.PRNGKey(0) if num_seeds == 1 else jnp.zeros((num_seeds, 2), jnp.uint32)
    abstract = jax.eval_shape(init, keys)
    return jax.jit(init, out_shardings=state_shardings(mesh, abstract, num_seeds))


def _reshape_observations(timestep: TimeStep, shape: tuple[int, ...], lead: int) -> TimeStep:
    """`timestep` with `observation` and `final_observation` reshaped to their first `lead`
    axes followed by `shape` (`(-1,)`: flat)."""
    reshape = lambda x: None if x is None else x.reshape(*x.shape[:lead], *shape)  # noqa: E731
    return timestep._replace(
        observation=reshape(timestep.observation),
        final_observation=reshape(timestep.final_observation),
    )


def make_rollout(agent: Agent, env: JaxEnv, rollout_length: int, flat_carry: bool = False):
    """Per-device rollout of T steps: returns a `[T+1, B]` trajectory and the new env carry.

    `step` is the update count of `params` (the agent's acting schedules read it); `core`
    the recurrent state for acting on `timestep`, which the trajectory records as its start.

    Inside the loop, observations are carried and stored flat (`[B, D]`) and shaped only
    where the agent reads them. An accelerator tiles an array's two minor axes (a TPU in
    8 x 128 tiles), so Catch's `[B, 10, 5]` board took 41x its size in memory and
    MinAtar's `[B, 10, 10, 4]` 51x; every step wrote such arrays and read them back, and
    that traffic, not the env's logic, bound the chunk. Flat, an observation is padded
    only to the tile's width; the reshape where the agent reads it is free when the agent
    flattens anyway (an MLP torso). The values are the same either way. `flat_carry`:
    the carry's `timestep` comes and goes flat too (the chunk keeps it so between
    updates), else shaped as the env makes it.
    """
    act = _act(agent)
    shape = tuple(env.spec.observation_shape)
    flatten = lambda ts: _reshape_observations(ts, (-1,), 1)  # noqa: E731
    shaped = lambda ts, lead: _reshape_observations(ts, shape, lead)  # noqa: E731

    def rollout(params, env_state, timestep, env_key, core, step):
        # T + 1 acting steps in one loop: the last acts on the last timestep only for its
        # action and extras (values to bootstrap from), with keys split in two rather than
        # three, and takes no env step (the next rollout acts on that timestep again, from
        # the same core state, with the updated params). One traced and compiled `act`
        # (MuZero: one search, not two); the values are those of T steps then one more
        # act. `lax.cond` on the step index (never batched, also under a seed vmap) skips
        # the env step outright, where a select would copy the state every step.
        def keys(final, env_key):
            def last(k):
                last_key, act_key = _split_per_env(k, 2)
                return last_key, act_key, last_key  # no env step: no step key

            return jax.lax.cond(final, last, lambda k: tuple(_split_per_env(k, 3)), env_key)

        def env_step(carry, t):
            env_state, timestep, env_key, core = carry
            final = t == rollout_length
            next_key, act_key, step_key = keys(final, env_key)
            action, extras, next_core = act(params, act_key, shaped(timestep, 1), core, step)

            def advance(_):
                next_state, next_timestep = jax.vmap(env.step)(env_state, action, step_key)
                return next_state, flatten(next_timestep), next_core

            stay = lambda _: (env_state, timestep, core)  # noqa: E731
            env_state, next_timestep, next_core = jax.lax.cond(final, stay, advance, None)
            return (env_state, next_timestep, next_key, next_core), (timestep, action, extras)

        timestep = timestep if flat_carry else flatten(timestep)
        (env_state, last, env_key, last_core), (timesteps, actions, extras) = jax.lax.scan(
            env_step, (env_state, timestep, env_key, core), jnp.arange(rollout_length + 1)
        )
        trajectory = Trajectory(  # flat, then shaped: nothing tiled is written
            timestep=shaped(timesteps, 2),
            action=actions,
            extras=extras,
            core=jax.tree.map(lambda c: c[None], core),
        )
        last = last if flat_carry else shaped(last, 1)
        return trajectory, (env_state, last, env_key, last_core)

    return rollout


def _episode_sums(timestep: TimeStep) -> tuple[chex.Array, chex.Array, chex.Array]:
    ended = timestep.episode_end_mask[1:].astype(jnp.float32)
    return (
        jnp.sum(timestep.episode_return[1:] * ended),
        jnp.sum(timestep.episode_length[1:].astype(jnp.float32) * ended),
        jnp.sum(ended),
    )


def make_chunk(agent: Agent, env: JaxEnv, plan: Plan):
    """The compiled training chunk: `chunk(state, updates=None, rows=()) -> (state, ChunkMetrics)`.

    `updates` (default `plan.updates_per_chunk`) is an argument of the one compiled program,
    not a shape: the run loop can make a call shorter (a long chunk split so a stop
    request is honoured in bounded time, or the run's last updates) without compiling
    again, and `n` updates in one call or in several give the same state. `rows` (at
    most `MAX_ROWS` increasing update counts within the call, also an argument) are where
    metric rows end: the metrics come binned by them, so one call gives a run's rows
    without ending at each (a call costs a host sync; benchmarks/harness_ab.py).

    With `plan.num_members > 1` the chunk is vmapped over the state's leading member axis
    (one program trains every seed, or every member of a sweep; metrics get a leading
    `[S]` axis), or mapped over it `plan.members_at_once` members at a time."""
    rollout_length, updates_per_chunk = plan.rollout_length, plan.updates_per_chunk
    mesh, num_seeds = plan.mesh, plan.num_members
    agent_of, values = plan.members(agent)
    one_update = _one_update(env, rollout_length, mesh)

    def chunk(state: RunnerState, updates: jax.Array, row_ends: jax.Array, hparams):
        if isinstance(state.population, Population):  # PBT: the values exploit changes
            hparams = state.population.values
        agent = agent_of(hparams)
        # Observations stay flat between updates too (`make_rollout`), shaped again for
        # the state the chunk returns.
        shape = tuple(env.spec.observation_shape)
        state = state._replace(timestep=_reshape_observations(state.timestep, (-1,), 1))
        # One trace of the update for both uses: the metrics' shapes and the loop's body.
        # A nested jit caches its trace by the arguments' types, and `inline` puts the
        # traced equations in the body as they are (the program is what a plain call
        # makes); an `eval_shape` of a plain function would trace the whole update, a
        # search and the learner's steps, a second time.
        update = jax.jit(lambda s: one_update(s, agent), inline=True)
        shapes = jax.eval_shape(update, state)[1]
        zeros = jax.tree.map(lambda s: jnp.zeros((MAX_ROWS + 1, *s.shape), s.dtype), shapes)

        def body(i, carry):
            state, bins = carry
            state, metrics = update(state)
            row = jnp.sum(row_ends <= i)  # the bin of update i: rows that ended before it
            bins = jax.tree.map(lambda b, x: b.at[row].add(x), bins, metrics)
            return state, bins

        # A trip count known only at run time: the loop is a while loop either way.
        state, bins = jax.lax.fori_loop(0, updates, body, (state, zeros))
        return state._replace(timestep=_reshape_observations(state.timestep, shape, 1)), bins

    if num_seeds == 1:
        vmapped = chunk
    elif not 0 < plan.members_at_once < num_seeds:
        vmapped = jax.vmap(chunk, in_axes=(0, None, None, 0))
    else:  # in turns: the state's slices updated in place, the metrics stacked
        vmapped = vmap_in_turns(chunk, num_seeds, plan.members_at_once, in_axes=(0, None, None, 0),
                                out_axes=(0, 0), in_place={0: 0})  # fmt: skip

    per_device = lambda state, updates, row_ends: vmapped(state, updates, row_ends, values)  # noqa: E731

    def compiled(state: RunnerState, updates: jax.Array, row_ends: jax.Array):
        in_specs = jax.tree.map(lambda s: s.spec, state_shardings(mesh, state, num_seeds))
        out_specs = (in_specs, ChunkMetrics(P(), P(), P(), P()))
        # check_vma=False: environments legitimately emit device-invariant constants (a
        # never-truncating env's `truncated`), which the varying-axis check rejects as scan
        # carries; replication of the outputs is guaranteed by pmean/psum above.
        return jax.shard_map(
            per_device, mesh=mesh, in_specs=(in_specs, P(), P()), out_specs=out_specs,
            check_vma=False,
        )(state, updates, row_ends)  # fmt: skip

    return _jit_with_state_shardings(compiled, mesh, num_seeds, updates_per_chunk)


def _one_update(env: JaxEnv, rollout_length: int, mesh: Mesh):
    """`one_update(state, agent) -> (state, ChunkMetrics)`: a rollout of `rollout_length`
    steps of every env of this device, then the learner's step on it (gradients and the
    episode sums reduced over the mesh's devices)."""
    pmean = pmean_flat(AXIS)  # one all-reduce for all gradients and metrics

    def one_update(state: RunnerState, agent: Agent):
        rollout = make_rollout(agent, env, rollout_length, flat_carry=True)
        learn = make_learn(agent, mesh.size, AXIS, pmean, scan_updates=True)
        trajectory, (env_state, timestep, env_key, core) = rollout(
            state.train.params, state.env_state, state.timestep, state.env_key, state.core,
            state.train.update_step,
        )  # fmt: skip
        train, losses, replay_state = learn(state.train, trajectory, state.replay)
        sums = jax.lax.psum(_episode_sums(trajectory.timestep), AXIS)
        members = state.population
        if isinstance(members, Population):  # PBT's score: the return since its last exploit step
            members = members._replace(return_sum=members.return_sum + sums[0],
                                       episode_count=members.episode_count + sums[2])  # fmt: skip
        state = RunnerState(train, env_state, timestep, env_key, replay=replay_state, core=core,
                            population=members)  # fmt: skip
        return state, ChunkMetrics(losses, *sums)

    return one_update


def _jit_with_state_shardings(fn, mesh: Mesh, num_seeds: int, updates_per_chunk: int):
    """jit `fn(state, updates, row_ends) -> (state, metrics)` with the state's layout
    pinned in and out; `call(state, updates=updates_per_chunk, rows=())`.

    Pinning matters: on a 1-device mesh jit would return `P()` for sharded inputs, and
    the second call would compile again. The jitted function is built on first use,
    when the state's structure is known; the input state is donated. `call.traces`
    counts how often it was traced (1 in a steady run); `call.lower(state)` is the
    jitted function's `Lowered` (its HLO, for profiles: benchmarks/profile_chunk.py),
    `call.trace(state)` its `Traced` (compile-time figures: benchmarks/muzero_compile.py).
    """
    cache = {}
    replicated = NamedSharding(mesh, P())

    def traced(state, updates, row_ends):
        call.traces += 1  # runs once per trace: a public recompilation counter for tests
        return fn(state, updates, row_ends)

    def jitted(state):
        if "jit" not in cache:
            shardings = state_shardings(mesh, state, num_seeds)
            cache["jit"] = jax.jit(
                traced,
                in_shardings=(shardings, replicated, replicated),
                out_shardings=(shardings, replicated),
                donate_argnums=0,
            )
        return cache["jit"]

    def arguments(updates: int | None, rows: Any) -> tuple[np.ndarray, np.ndarray]:
        # Host arrays: no device op to make them (jnp's cost ~0.4 ms each).
        n = updates_per_chunk if updates is None else int(updates)
        if n < 1:
            raise ValueError(f"a chunk makes at least 1 update, got {n}")
        rows = [int(r) for r in rows]
        if len(rows) > MAX_ROWS or rows != sorted(set(rows)) or not all(0 < r <= n for r in rows):
            raise ValueError(
                f"rows must be at most {MAX_ROWS} increasing update counts in [1, {n}], got {rows}"
            )
        ends = np.full(MAX_ROWS, np.iinfo(np.int32).max, np.int32)
        ends[: len(rows)] = rows
        return np.int32(n), ends

    def call(state, updates: int | None = None, rows: Any = ()):
        return jitted(state)(state, *arguments(updates, rows))

    call.traces = 0
    call.lower = lambda state, updates=None, rows=(): jitted(state).lower(
        state, *arguments(updates, rows)
    )
    call.trace = lambda state, updates=None, rows=(): jitted(state).trace(
        state, *arguments(updates, rows)
    )
    return call


PERTURB_FACTORS = (0.8, 1.2)  # PBT's explore step (Jaderberg et al., 2017)


def make_exploit(
    mesh: Mesh, num_members: int, exploited: int, bounds: Mapping[str, tuple[float, float]]
):
    """PBT's exploit and explore step on the whole population, compiled:

        exploit(state, key) -> (state, sources [M] int32)

    Members ranked by mean episodic return since the previous step (none ended: last; ties
    by index); each of the `exploited` worst copies the params, optimizer state and swept
    values of one of the `exploited` best, chosen with `key`, then scales each value by
    a factor of `PERTURB_FACTORS`, clipped to its `bounds` (the grid's range: every value
    stays one the config accepts). Member i's new state is member `sources[i]`'s; members
    keep their own environments and keys. Scores restart from zero."""
    factors = jnp.asarray(PERTURB_FACTORS, jnp.float32)

    def exploit(state: RunnerState, key: chex.PRNGKey):
        members: Population = state.population
        count = members.episode_count
        mean = members.return_sum / jnp.maximum(count, 1.0)
        score = jnp.where(count > 0, mean, -jnp.inf)
        order = jnp.argsort(score, stable=True)  # worst first
        worst, best = order[:exploited], order[num_members - exploited :]
        pick_key, perturb_key = jax.random.split(key)
        chosen = best[jax.random.randint(pick_key, (exploited,), 0, exploited)]
        sources = jnp.arange(num_members).at[worst].set(chosen)
        take = lambda tree: jax.tree.map(lambda x: x[sources], tree)  # noqa: E731
        train = state.train._replace(
            params=take(state.train.params), opt_state=take(state.train.opt_state)
        )
        values = {}
        for i, (name, v) in enumerate(sorted(members.values.items())):
            scale = jax.random.choice(jax.random.fold_in(perturb_key, i), factors, (exploited,))
            low, high = bounds[name]
            values[name] = jnp.clip(v[sources].at[worst].multiply(scale), low, high)
        zeros = jnp.zeros_like(members.return_sum)
        state = state._replace(train=train, population=Population(values, zeros, zeros))
        return state, sources.astype(jnp.int32)

    cache = {}

    def call(state, key):
        if "jit" not in cache:
            shardings = state_shardings(mesh, state, num_members)
            replicated = NamedSharding(mesh, P())
            cache["jit"] = jax.jit(
                exploit, in_shardings=(shardings, replicated),
                out_shardings=(shardings, replicated), donate_argnums=0,
            )  # fmt: skip
        return cache["jit"](state, key)

    return call


def make_evaluate(agent: Agent, env: JaxEnv, plan: Plan):
    """`evaluate(params, key) -> mean undiscounted return` of one greedy episode per env of
    `plan.eval_envs`, split over the mesh (each env's key from its global index), each at
    most `plan.eval_max_steps` long. With `plan.num_members > 1`: params and keys with a
    leading member axis, returns `[S]`."""
    mesh, num_seeds, max_steps = plan.mesh, plan.num_members, plan.eval_max_steps
    per_device = plan.eval_envs // mesh.size
    agent_of, values = plan.members(agent)

    def evaluate(params, key, hparams):
        episodes = jax_episodes(agent_of(hparams), env, max_steps)
        offset = jax.lax.axis_index(AXIS) * per_device
        returns, _ = episodes(params, env_keys(key, per_device, offset))
        return jax.lax.pmean(jnp.mean(returns), AXIS)

    vmapped = evaluate if num_seeds == 1 else jax.vmap(evaluate)
    per_seed = lambda params, key: vmapped(params, key, values)  # noqa: E731
    return jax.jit(
        jax.shard_map(per_seed, mesh=mesh, in_specs=(P(), P()), out_specs=P(), check_vma=False)
    )


def _tree_bytes(*trees: Any) -> int:
    return sum(int(x.size) * x.dtype.itemsize for t in trees for x in jax.tree.leaves(t))


def device_memory(device: jax.Device) -> int | None:
    """Bytes a program may use on `device` (free RAM for CPU devices); None if unknown."""
    if device.platform == "cpu":
        import os

        try:
            return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES")
        except (ValueError, OSError, AttributeError):  # not Linux
            return None
    stats = device.memory_stats() or {}
    return stats.get("bytes_limit")


def check_memory(
    abstract: RunnerState,
    num_envs: int,
    rollout_length: int,
    mesh: Mesh,
    owner: str = "AnakinConfig",
) -> int:
    """Fails before compiling when one device cannot hold its share of the env states,
    replay and one rollout (a lower bound on what a chunk needs); returns the estimate."""
    n = mesh.size
    sharded = _tree_bytes(abstract.env_state, abstract.timestep, abstract.env_key, abstract.replay,
                          abstract.core)  # fmt: skip
    rollout = (rollout_length + 1) * _tree_bytes(abstract.timestep)
    need = (sharded + rollout) // n + _tree_bytes(abstract.train)
    have = device_memory(mesh.devices.flat[0])
    if have is not None and need > have:
        gib = lambda b: f"{b / 2**30:.1f} GiB"
        raise ConfigError(
            f"{owner}.num_envs={num_envs} needs at least {gib(need)} on each of the {n} "
            f"device(s) for env states, replay and one rollout of {rollout_length} steps; "
            f"{mesh.devices.flat[0].platform} device 0 has {gib(have)} free: use fewer envs, "
            f"a shorter rollout or more devices"
        )
    return need
