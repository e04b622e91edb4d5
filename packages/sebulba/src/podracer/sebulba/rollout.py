"""Rollout loops: how an actor thread turns params into one `[T+1, B]` trajectory.

Two loops behind one interface (`start()`, then `rollout(params)` again and again):

* `XlaLoop`: envpool's XLA interface lets `recv -> policy -> send` run inside jit, so a
  whole rollout is one compiled `lax.scan` (no per-step Python, no per-step transfers).
* `PythonLoop`: any `HostEnv`, stepped from Python: one jitted policy call per step;
  the env's outputs are kept in host buffers, the policy's extras on the actor device.

The XLA loop keeps the whole trajectory on the actor device; the Python loop keeps on
the host what the env produced there (measured faster than writing every step to the
device, see `PythonLoop`); either way the actor ships it to the learner devices with one
`device_put`. Both step their envs in `lanes`: with one lane, recv/act/send is a
synchronous step; with two, one lane's env step runs on envpool's threads while the
other lane's inference runs, and the lanes are concatenated along the batch axis.
Consecutive trajectories overlap by one step: the last step of rollout k (its timestep,
and the action sent from it) is row 0 of rollout k+1. A recurrent agent's core state
is carried from step to step and rollout to rollout; each trajectory records the state
its row 0 was acted from (`podracer.agents.recurrent`).
"""

from __future__ import annotations

import collections
import sys
from collections.abc import Sequence
from typing import Any
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from podracer.agents import Agent
from podracer.agents import Trajectory
from podracer.envs import HostEnv
from podracer.envs import TimeStep
from podracer.sebulba.timing import PhaseTimer


class RolloutOutput(NamedTuple):
    """A finished rollout, not yet shipped to the learner, and its episode statistics."""

    trajectory: Trajectory  # [T+1, B, ...] on the actor device (host buffers in PythonLoop)
    episode_returns: np.ndarray  # [n] float32, episodes that ended in rows 1..T
    episode_lengths: np.ndarray  # [n] int32


def has_xla(env: HostEnv) -> bool:
    """Whether `env` exposes envpool's XLA interface (Linux only) and can use it (not the
    float64 MuJoCo tasks without JAX's x64 mode: `EnvpoolEnv.xla_supported`)."""
    return (
        sys.platform.startswith("linux")
        and callable(getattr(env, "xla", None))
        and hasattr(env, "pool")
        and getattr(env, "xla_supported", True)
    )


def _concat_lanes(*trajectories: Trajectory) -> Trajectory:
    if len(trajectories) == 1:
        return trajectories[0]
    return jax.tree.map(lambda *xs: jnp.concatenate(xs, axis=1), *trajectories)


def _episode_stats(timestep: TimeStep) -> tuple[np.ndarray, np.ndarray]:
    mask = np.asarray(timestep.episode_end_mask)
    return np.asarray(timestep.episode_return)[mask], np.asarray(timestep.episode_length)[mask]


def _join_stats(
    returns: list[np.ndarray], lengths: list[np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    if not returns:
        return np.zeros(0, np.float32), np.zeros(0, np.int32)
    return np.concatenate(returns).astype(np.float32), np.concatenate(lengths).astype(np.int32)


def _write_row(buffer: TimeStep, t: int, row: TimeStep) -> None:
    """`buffer[t] = row` for every field (host arrays)."""
    jax.tree.map(lambda b, x: b.__setitem__(t, x), buffer, row)


class PythonLoop:
    """Steps `lanes` (HostEnvs with batch_size == num_envs) from Python.

    Per step: `recv`, one jitted policy call on the observation, the action to the host,
    `send`. What the env returns is written into host buffers (it is on the host
    already) while the device computes the action, and what the policy returns (extras)
    stays on the actor device until the rollout ends; the actor then ships both to the
    learner devices in one `device_put` (faster than writing each step into a donated
    device buffer: 37k vs 31k steps/s on CartPole, 16 envs x 32 steps).
    """

    trajectory_on_device = False  # env outputs stay in host buffers

    def __init__(
        self,
        agent: Agent,
        lanes: Sequence[HostEnv],
        rollout_length: int,
        device: jax.Device,
        key: jax.Array,
        timer: PhaseTimer,
        *,
        recycle: bool | None = None,
    ):
        self.lanes = tuple(lanes)
        self._length = rollout_length
        self._device = device
        self._key = jax.device_put(key, device)
        # Reuse the host buffers of shipped rollouts: None = where the learner devices
        # copy what is shipped (`ship`); True/False = always/never (tests).
        self._recycle = recycle
        self._timer = timer
        self._ids = [np.arange(env.num_envs, dtype=np.int32) for env in self.lanes]
        ends = np.cumsum([0] + [env.num_envs for env in self.lanes])
        self._columns = [slice(lo, hi) for lo, hi in zip(ends[:-1], ends[1:], strict=True)]
        self._last: list[tuple[TimeStep, np.ndarray, Any]] | None = None  # per lane, row T
        self._drop_final: bool | None = None
        # Per lane, on the actor device: the core state for the next step, and the one
        # row T (the next trajectory's row 0) was acted from.
        self._core = [jax.device_put(agent.initial_core(env.num_envs), device) for env in lanes]
        self._last_core: list[Any] = [None] * len(self.lanes)
        # The host buffers of the last two shipped rollouts and their copies on the
        # learner devices: a rollout reuses the older pair's buffers (see `_buffers`).
        self._shipped: collections.deque[tuple[list, Trajectory]] = collections.deque()

        def act(params, key, observation, first, core, step):
            key, sub = jax.random.split(key)
            action, extras, core = agent.act(params, sub, observation, step, core, first)
            return action, extras, core, key

        def stack(extras):  # [T+1] of [b, ...] -> [T+1, b, ...]
            return jax.tree.map(lambda *xs: jnp.stack(xs), *extras)

        self._act = jax.jit(act)
        self._stack = jax.jit(stack)

    def start(self) -> None:
        for env in self.lanes:
            if env.batch_size != env.num_envs:
                raise ValueError(
                    "each lane must step all its envs: "
                    f"batch_size {env.batch_size} != num_envs {env.num_envs}"
                )
            env.async_reset()

    def _recv(self, lane: int) -> TimeStep:
        ts, ids = self.lanes[lane].recv()
        if self._drop_final is None:  # envpool: final_observation *is* observation
            self._drop_final = ts.final_observation is ts.observation
        if self._drop_final:
            ts = ts._replace(final_observation=None)
        if not np.array_equal(ids, self._ids[lane]):
            order = np.argsort(ids)
            ts = jax.tree.map(lambda x: x[order], ts)
        return ts

    def _lane_buffers(self, whole: list, lane: int, ts: TimeStep, action: np.ndarray):
        """This lane's `(timesteps, actions)` host buffers `[T+1, b, ...]`: views of the
        rollout's buffers for all lanes `[T+1, sum of b, ...]`, taken (`_buffers`, shaped
        like `ts` and `action`, the first row seen) when the rollout's first lane asks.
        Lanes write their own columns, so the
        trajectory needs no concatenation (a copy of every frame, 17% of an Atari
        actor's time on a TPU host with two lanes)."""
        if not whole:
            whole += self._buffers(ts, action)
        columns = self._columns[lane]
        return jax.tree.map(lambda x: x[:, columns], (whole[0], whole[1]))

    def _buffers(self, ts: TimeStep, action: np.ndarray) -> list:
        """The rollout's `[timesteps, actions]` host buffers: those of two rollouts ago,
        once their copy to the learner devices is done, else new ones. New pages cost a
        fault each on first write (an Atari rollout's 76 MB is above malloc's reuse
        threshold, so every rollout got new pages from the kernel): writing frames into
        them took 8-29 ms a rollout against 3.7 ms into reused ones. The last rollout's
        buffers are not reused yet: its row T is this rollout's row 0."""
        if len(self._shipped) == 2:
            buffers, shipped = self._shipped.popleft()
            if jax.tree.structure(buffers[0]) == jax.tree.structure(ts):
                jax.block_until_ready([x for x in jax.tree.leaves(shipped) if not x.is_deleted()])
                return buffers
        total = self._columns[-1].stop
        alloc = lambda x: np.empty((self._length + 1, total, *x.shape[1:]), x.dtype)  # noqa: E731
        return [jax.tree.map(alloc, ts), alloc(action)]

    def ship(self, trajectory: Trajectory, sharding: jax.sharding.Sharding) -> Trajectory:
        """`trajectory` onto the learner devices. Its host buffers are kept for reuse
        (`_buffers`) where the learner devices hold a copy of them: an accelerator's.
        A CPU device may alias a numpy array even with `may_alias=False` (JAX 0.10: a
        later write showed through in most of 200 tries), so there they are not reused."""
        recycle = self._recycle
        if recycle is None:
            recycle = all(d.platform != "cpu" for d in sharding.device_set)
        shipped = jax.device_put(trajectory, sharding, may_alias=False if recycle else None)
        if recycle:
            self._shipped.append(([trajectory.timestep, trajectory.action], shipped))
        return shipped

    def _row_zero(self, whole: list, timesteps: list, actions: list, extras: list) -> int:
        """Row 0 of each lane's buffers: the previous rollout's last row (its step is
        not taken again). The first row this rollout steps: 1, or 0 for the first rollout."""
        if self._last is None:
            return 0
        for lane, (ts, action, ex) in enumerate(self._last):
            timesteps[lane], actions[lane] = self._lane_buffers(whole, lane, ts, action)
            _write_row(timesteps[lane], 0, ts)
            actions[lane][0] = action
            extras[lane].append(ex)
        return 1

    def rollout(self, params: Any, step: int = 0) -> RolloutOutput:
        """One trajectory acting with `params`, whose update count is `step`."""
        timer, n = self._timer, len(self.lanes)
        step = np.int32(step)
        returns, lengths = [], []
        timesteps: list[TimeStep | None] = [None] * n
        actions: list[np.ndarray | None] = [None] * n
        extras: list[list[Any]] = [[] for _ in range(n)]
        cores = list(self._last_core)  # the state each lane's row 0 was acted from
        whole: list = []  # the rollout's host buffers, all lanes: [timesteps, actions]
        start = self._row_zero(whole, timesteps, actions, extras)
        key = self._key
        for t in range(start, self._length + 1):
            for lane in range(n):
                ts = self._recv(lane)
                timer.lap("env")
                core = self._core[lane]
                if t == 0:
                    cores[lane] = core
                action, ex, self._core[lane], key = self._act(
                    params, key, ts.observation, ts.first, core, step
                )
                if t == self._length:
                    self._last_core[lane] = core
                action.copy_to_host_async()  # starts as soon as the action is computed
                # While the device computes the action: this step's row into the host
                # buffers (assembly overlaps inference; the lane's envs wait either way).
                if timesteps[lane] is None:
                    timesteps[lane], actions[lane] = self._lane_buffers(whole, lane, ts, action)
                _write_row(timesteps[lane], t, ts)
                extras[lane].append(ex)
                if t > 0:
                    ret, length = _episode_stats(ts)
                    if ret.size:
                        returns.append(ret)
                        lengths.append(length)
                timer.lap("assembly")
                action.block_until_ready()
                timer.lap("inference")
                action = np.asarray(action)
                timer.lap("device_to_host")
                self.lanes[lane].send(action, self._ids[lane])
                actions[lane][t] = action
                timer.lap("env")
        self._key = key
        self._last = [
            (jax.tree.map(lambda x: x[-1], timesteps[i]), actions[i][-1], extras[i][-1])
            for i in range(n)
        ]
        # Host parts: the lanes' columns of one buffer. Device parts (what the policy
        # returned, the start cores) joined on the actor device, as one lane's stay.
        stacked = [self._stack(extras[i]) for i in range(n)]
        starts = [jax.tree.map(lambda c: c[None], cores[i]) for i in range(n)]
        join = lambda *xs: xs[0] if n == 1 else jnp.concatenate(xs, 1)  # noqa: E731
        trajectory = Trajectory(
            whole[0], whole[1], jax.tree.map(join, *stacked), jax.tree.map(join, *starts)
        )
        timer.lap("assembly")
        return RolloutOutput(trajectory, *_join_stats(returns, lengths))


class _XlaCarry(NamedTuple):
    handles: tuple[jax.Array, ...]  # per lane: envpool's handle bytes [n] uint8
    trackers: tuple[Any, ...]  # per lane: EpisodeTracker [b]
    key: jax.Array  # [2] uint32
    cores: tuple[Any, ...]  # per lane: the agent's core state for the next step [b, ...]


class XlaLoop:
    """A whole rollout as one compiled scan over envpool's XLA `recv`/`send`."""

    trajectory_on_device = True  # on the actor device

    def __init__(
        self,
        agent: Agent,
        lanes: Sequence[HostEnv],
        rollout_length: int,
        device: jax.Device,
        key: jax.Array,
        timer: PhaseTimer,
    ):
        self.lanes = tuple(lanes)
        self._length = rollout_length
        self._device = device
        self._key = key
        self._timer = timer
        self._agent = agent
        self._carry: _XlaCarry | None = None
        # Per lane, the last step [b] and the core state it was acted from.
        self._last: tuple[tuple[Trajectory, ...], tuple[Any, ...]] | None = None

    def start(self) -> None:
        from podracer.envs import envpool_timestep_by_id
        from podracer.envs import init_episode_tracker

        xlas = [env.xla() for env in self.lanes]
        episodic_life = [bool(env.pool.config.get("episodic_life", False)) for env in self.lanes]
        agent, T, n = self._agent, self._length, len(self.lanes)

        def lane_step(params, step, key, carry: _XlaCarry, lane):
            handle, tracker, core = carry.handles[lane], carry.trackers[lane], carry.cores[lane]
            handle, (obs, reward, terminated, truncated, info) = xlas[lane].recv(handle)
            tracker, ts = envpool_timestep_by_id(
                tracker, obs, reward, terminated, truncated, info, episodic_life[lane]
            )
            ts = ts._replace(final_observation=None)  # it is `observation` (envpool)
            action, extras, next_core = agent.act(params, key, ts.observation, step, core, ts.first)
            handle = xlas[lane].send(handle, action, jnp.arange(action.shape[0], dtype=jnp.int32))
            return handle, tracker, next_core, Trajectory(ts, action, extras), core

        def all_lanes(params, step, carry: _XlaCarry):
            """One step of every lane: the carry, the rows and the cores they acted from."""
            key, *keys = jax.random.split(carry.key, n + 1)
            out = [lane_step(params, step, keys[i], carry, i) for i in range(n)]
            handles, trackers, cores, rows, acted_from = zip(*out, strict=True)
            carry = _XlaCarry(tuple(handles), tuple(trackers), key, tuple(cores))
            return carry, (tuple(rows), tuple(acted_from))

        def rollout(params, step, carry: _XlaCarry, last):
            """`last`: per lane, the previous rollout's row T and the core it acted from."""

            def body(c, _):  # c: (carry, the cores the previous rows acted from)
                c, (rows, acted_from) = all_lanes(params, step, c[0])
                return (c, acted_from), rows

            last_rows, last_cores = last
            (carry, acted_from), rows = jax.lax.scan(body, (carry, last_cores), length=T)
            prepend = lambda x0, xs: jnp.concatenate([x0[None], xs], axis=0)
            lanes = [
                jax.tree.map(prepend, last_rows[i], rows[i])._replace(
                    core=jax.tree.map(lambda c: c[None], last_cores[i]))
                for i in range(n)
            ]  # fmt: skip
            trajectory = _concat_lanes(*lanes)
            new_last = (tuple(jax.tree.map(lambda x: x[-1], r) for r in rows), acted_from)
            ts = trajectory.timestep
            stats = (ts.episode_return[1:], ts.episode_length[1:], ts.episode_end_mask[1:])
            return carry, new_last, trajectory, stats

        self._init = jax.jit(all_lanes)
        self._rollout = jax.jit(rollout, donate_argnums=(2, 3))
        for env in self.lanes:
            env.async_reset()
        put = lambda x: jax.device_put(x, self._device)
        self._carry = _XlaCarry(
            tuple(put(x.handle) for x in xlas),
            tuple(put(init_episode_tracker(env.num_envs)) for env in self.lanes),
            put(self._key),
            tuple(put(agent.initial_core(env.num_envs)) for env in self.lanes),
        )

    def rollout(self, params: Any, step: int = 0) -> RolloutOutput:
        """One trajectory acting with `params`, whose update count is `step`."""
        timer, step = self._timer, np.int32(step)
        if self._last is None:  # act on the reset observations: row 0 of the first rollout
            self._carry, self._last = self._init(params, step, self._carry)
        self._carry, self._last, trajectory, stats = self._rollout(
            params, step, self._carry, self._last
        )
        jax.block_until_ready(trajectory)
        timer.lap("env_and_inference")
        returns, lengths, mask = jax.device_get(stats)
        timer.lap("device_to_host")
        return RolloutOutput(
            trajectory, returns[mask].astype(np.float32), lengths[mask].astype(np.int32)
        )

    def ship(self, trajectory: Trajectory, sharding: jax.sharding.Sharding) -> Trajectory:
        """`trajectory` (on the actor device) onto the learner devices."""
        return jax.device_put(trajectory, sharding)
