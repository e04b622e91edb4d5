"""Anakin's compiled programs: a training chunk and a greedy evaluation.

A chunk is one program, replicated over a `Mesh` of devices with `jax.shard_map`:

    state -> [fori_loop K: [scan T: act -> env.step] -> agent.update (pmean grads)] -> state

Params and optimizer state are replicated; environment states, timesteps and per-env
keys are sharded along the batch axis. Each environment's key is derived from its
global index and acting samples with per-environment keys, so the same global config
gives the same run on any number of devices.

Agents with replay (`agent.replay`, e.g. MuZero) learn from a sequence buffer instead:

    [scan T: act -> env.step] -> add [T+1, B] as B sequences -> [U x: sample S -> update]

Each device keeps its own buffer of the sequences its environments produced (local
replay: no cross-device traffic, and the buffer shards like the env states); gradients
are still averaged over devices. Sampling differs with the device count, so replay runs
are reproducible for a given topology (and exactly resumable) but not topology-invariant.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
from jax.sharding import Mesh
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from podracer.agents import Agent
from podracer.agents import TrainState
from podracer.agents import Trajectory
from podracer.agents import init_local_replays
from podracer.agents import init_train_state
from podracer.agents import make_learn
from podracer.agents import pmean_flat
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


class ChunkMetrics(NamedTuple):
    """Sums over a chunk's updates and all devices; the host turns them into means."""

    losses: dict[str, chex.Array]  # mean over the chunk's updates
    episode_return_sum: chex.Array  # [] float32, over episodes that ended in the chunk
    episode_length_sum: chex.Array  # [] float32
    episode_count: chex.Array  # [] float32


def make_mesh(num_devices: int) -> Mesh:
    """A 1-D mesh over the first `num_devices` devices of all processes."""
    devices = jax.devices()[:num_devices]
    return Mesh(devices, (AXIS,))


def state_shardings(mesh: Mesh, state: RunnerState) -> RunnerState:
    replicated = NamedSharding(mesh, P())
    sharded = NamedSharding(mesh, P(AXIS))
    return RunnerState(
        train=jax.tree.map(lambda _: replicated, state.train),
        env_state=jax.tree.map(lambda _: sharded, state.env_state),
        timestep=jax.tree.map(lambda _: sharded, state.timestep),
        env_key=sharded,
        replay=jax.tree.map(lambda _: sharded, state.replay),
    )


def _split_per_env(keys: chex.Array, num: int) -> chex.Array:
    """[B, 2] keys -> [num, B, 2]: independent streams per environment."""
    return jnp.swapaxes(jax.vmap(lambda k: jax.random.split(k, num))(keys), 0, 1)


def _act_per_env(agent: Agent, params, keys: chex.Array, observation: chex.Array):
    """`agent.act` with a key per environment (topology invariance); one batched forward."""
    act = jax.vmap(lambda k, o: agent.act(params, k, o[None]), in_axes=(0, 0))
    action, extras = act(keys, observation)
    return action[:, 0], jax.tree.map(lambda x: x[:, 0], extras)


def make_init(
    agent: Agent, env: JaxEnv, num_envs: int, mesh: Mesh, rollout_length: int | None = None
) -> Callable[[chex.PRNGKey], RunnerState]:
    """`init(key) -> RunnerState`, computed directly into its shardings (multi-host safe).

    `rollout_length` sizes the replay's sequences; agents with replay need it.
    """
    if agent.replay is not None and rollout_length is None:
        raise ValueError(f"make_init: agent {agent.name!r} has replay and needs rollout_length")

    def init(key):
        train_key, env_root = jax.random.split(key)
        env_keys = jax.vmap(lambda i: jax.random.fold_in(env_root, i))(jnp.arange(num_envs))
        reset_keys, env_keys = _split_per_env(env_keys, 2)
        env_state, timestep = jax.vmap(env.reset)(reset_keys)
        train = init_train_state(agent, train_key)
        # A stored sequence looks like one environment's column of a rollout.
        shapes = None
        if agent.replay is not None:
            rollout = make_rollout(agent, env, rollout_length)
            shapes = jax.eval_shape(rollout, train.params, env_state, timestep, env_keys)[0]
        replay_state = init_local_replays(agent, shapes, mesh.size)
        return RunnerState(train, env_state, timestep, env_keys, replay_state)

    abstract = jax.eval_shape(init, jax.random.PRNGKey(0))
    return jax.jit(init, out_shardings=state_shardings(mesh, abstract))


def make_rollout(agent: Agent, env: JaxEnv, rollout_length: int):
    """Per-device rollout of T steps: returns a `[T+1, B]` trajectory and the new env carry."""

    def rollout(params, env_state, timestep, env_key):
        def step(carry, _):
            env_state, timestep, env_key = carry
            env_key, act_key, step_key = _split_per_env(env_key, 3)
            action, extras = _act_per_env(agent, params, act_key, timestep.observation)
            env_state, next_timestep = jax.vmap(env.step)(env_state, action, step_key)
            return (env_state, next_timestep, env_key), (timestep, action, extras)

        (env_state, last, env_key), (timesteps, actions, extras) = jax.lax.scan(
            step, (env_state, timestep, env_key), length=rollout_length
        )
        # The last timestep's action and extras (values to bootstrap from); the next
        # rollout acts on it again with the updated params.
        env_key, act_key = _split_per_env(env_key, 2)
        last_action, last_extras = _act_per_env(agent, params, act_key, last.observation)
        append = lambda xs, x: jnp.concatenate([xs, x[None]], axis=0)
        trajectory = Trajectory(
            timestep=jax.tree.map(append, timesteps, last),
            action=append(actions, last_action),
            extras=jax.tree.map(append, extras, last_extras),
        )
        return trajectory, (env_state, last, env_key)

    return rollout


def _episode_sums(timestep: TimeStep) -> tuple[chex.Array, chex.Array, chex.Array]:
    ended = timestep.episode_end_mask[1:].astype(jnp.float32)
    return (
        jnp.sum(timestep.episode_return[1:] * ended),
        jnp.sum(timestep.episode_length[1:].astype(jnp.float32) * ended),
        jnp.sum(ended),
    )


def make_chunk(agent: Agent, env: JaxEnv, rollout_length: int, updates_per_chunk: int, mesh: Mesh):
    """The compiled training chunk: `chunk(state) -> (state, ChunkMetrics)`."""
    rollout = make_rollout(agent, env, rollout_length)
    pmean = pmean_flat(AXIS)  # one all-reduce for all gradients and metrics

    learn = make_learn(agent, mesh.size, AXIS, pmean)

    def one_update(state: RunnerState):
        trajectory, (env_state, timestep, env_key) = rollout(
            state.train.params, state.env_state, state.timestep, state.env_key
        )
        train, losses, replay_state = learn(state.train, trajectory, state.replay)
        sums = jax.lax.psum(_episode_sums(trajectory.timestep), AXIS)
        return RunnerState(train, env_state, timestep, env_key, replay_state), losses, sums

    def chunk(state: RunnerState):
        losses_shape = jax.eval_shape(lambda s: one_update(s)[1], state)
        zeros = (
            jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), losses_shape),
            (jnp.float32(0), jnp.float32(0), jnp.float32(0)),
        )

        def body(_, carry):
            state, (loss_sum, episode_sums) = carry
            state, losses, sums = one_update(state)
            loss_sum = jax.tree.map(jnp.add, loss_sum, losses)
            episode_sums = jax.tree.map(jnp.add, episode_sums, sums)
            return state, (loss_sum, episode_sums)

        state, (loss_sum, (ret, length, count)) = jax.lax.fori_loop(
            0, updates_per_chunk, body, (state, zeros)
        )
        losses = jax.tree.map(lambda x: x / updates_per_chunk, loss_sum)
        return state, ChunkMetrics(losses, ret, length, count)

    def compiled(state: RunnerState):
        in_specs = jax.tree.map(lambda s: s.spec, state_shardings(mesh, state))
        out_specs = (in_specs, ChunkMetrics(P(), P(), P(), P()))
        # check_vma=False: environments legitimately emit device-invariant constants (a
        # never-truncating env's `truncated`), which the varying-axis check rejects as scan
        # carries; replication of the outputs is guaranteed by pmean/psum above.
        return jax.shard_map(
            chunk, mesh=mesh, in_specs=(in_specs,), out_specs=out_specs, check_vma=False
        )(state)

    return _jit_with_state_shardings(compiled, mesh)


def _jit_with_state_shardings(fn, mesh: Mesh):
    """jit `fn(state) -> (state, metrics)` with the state's layout pinned in and out.

    Pinning matters: on a 1-device mesh jit would return `P()` for sharded inputs, and
    the second call would compile again. The jitted function is built on first use,
    when the state's structure is known; the input state is donated.
    """
    cache = {}

    def call(state):
        if "jit" not in cache:
            shardings = state_shardings(mesh, state)
            cache["jit"] = jax.jit(
                fn,
                in_shardings=(shardings,),
                out_shardings=(shardings, NamedSharding(mesh, P())),
                donate_argnums=0,
            )
        return cache["jit"](state)

    call.compiled_count = lambda: cache["jit"]._cache_size() if "jit" in cache else 0
    return call


def make_evaluate(agent: Agent, env: JaxEnv, num_envs: int, max_steps: int, mesh: Mesh):
    """`evaluate(params, key) -> mean undiscounted return` of one greedy episode per env."""
    per_device = num_envs // mesh.size

    def evaluate(params, key):
        index = jax.lax.axis_index(AXIS) * per_device + jnp.arange(per_device)
        keys = jax.vmap(lambda i: jax.random.fold_in(key, i))(index)
        reset_keys, keys = _split_per_env(keys, 2)
        env_state, timestep = jax.vmap(env.reset)(reset_keys)

        class Carry(NamedTuple):
            t: chex.Array
            env_state: Any
            timestep: TimeStep
            keys: chex.Array
            finished: chex.Array  # [b] bool
            episode_return: chex.Array  # [b] float32

        def cond(c: Carry):
            return (c.t < max_steps) & ~jnp.all(c.finished)

        def body(c: Carry):
            keys, step_keys = _split_per_env(c.keys, 2)
            action = agent.greedy_act(params, c.timestep.observation)
            env_state, ts = jax.vmap(env.step)(c.env_state, action, step_keys)
            newly = ts.episode_end_mask & ~c.finished
            ret = jnp.where(newly, ts.episode_return, c.episode_return)
            return Carry(c.t + 1, env_state, ts, keys, c.finished | newly, ret)

        zeros = jnp.zeros(per_device, jnp.float32)
        init = Carry(jnp.int32(0), env_state, timestep, keys, jnp.zeros(per_device, bool), zeros)
        final = jax.lax.while_loop(cond, body, init)
        # Episodes cut by max_steps count with their running return.
        ret = jnp.where(final.finished, final.episode_return, final.timestep.episode_return)
        return jax.lax.pmean(jnp.mean(ret), AXIS)

    return jax.jit(
        jax.shard_map(evaluate, mesh=mesh, in_specs=(P(), P()), out_specs=P(), check_vma=False)
    )
