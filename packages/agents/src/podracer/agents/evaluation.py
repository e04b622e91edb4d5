"""Whole episodes of an agent, greedy or sampled: on device for JaxEnvs, on the host for HostEnvs.

One home for what both runtimes' periodic evaluation and the `podracer eval` tool do:

* `jax_episodes(agent, env, num_envs, max_steps)`: a pure, jittable function running one
  episode in each of `num_envs` JaxEnvs inside a `lax.while_loop` that ends when all
  have ended (Anakin calls it on each device's share inside `shard_map`);
* `jax_observations(...)`: the same episodes' observations, step by step (a `lax.scan` of
  fixed length), for videos;
* `host_episodes(agent, env, ...)`: the same on a `HostEnv` (envpool) from Python, with
  the observations too when asked.

An episode cut by `max_steps` counts with its running return. Greedy acting is the
agent's `greedy_act`; sampled acting its `act` (exploration included); a recurrent
agent's core starts from its initial state and is reset where an episode starts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np

from podracer.agents.types import Agent
from podracer.envs import HostEnv
from podracer.envs import JaxEnv
from podracer.envs import TimeStep


class Episodes(NamedTuple):
    """Finished (or cut) episodes, one per env."""

    returns: np.ndarray  # [n] float32, undiscounted, unclipped
    lengths: np.ndarray  # [n] int32
    observations: np.ndarray | None = None  # [T, k, ...] of the first k envs when recorded
    done: np.ndarray | None = None  # [T, k] bool: step t ended env i's episode


_TRAINED = 2**30  # an update count past the end of any acting schedule


def _policy(agent: Agent, greedy: bool) -> Callable[..., tuple[chex.Array, Any]]:
    """`policy(params, key, observation, core, first) -> (action, core)`: greedy, or sampled
    as the trained agent acts (the end of any epsilon schedule)."""
    if greedy:
        return lambda params, key, obs, core, first: agent.greedy_act(params, obs, core, first)

    def sampled(params, key, observation, core, first):
        action, _, core = agent.act(params, key, observation, _TRAINED, core, first)
        return action, core

    return sampled


def per_env(policy: Callable[..., Any]) -> Callable[..., Any]:
    """`policy(params, key, observation, core, first, *rest)` of a batch of one, run for
    each env of a batch with its own key, as one batched forward:

        (params, keys [B, 2], observation [B, ...], core [B, ...], first [B], *rest) -> [B, ...]

    Per-env keys make a batch split over devices act as it does on one (topology
    invariance of Anakin runs and evaluations); `rest` is shared (an update count).
    """

    def run(params, keys, observation, core, first, *rest):
        def one(key, o, c, f):
            c = jax.tree.map(lambda x: x[None], c)
            out = policy(params, key, o[None], c, f[None], *rest)
            return jax.tree.map(lambda x: x[0], out)

        return jax.vmap(one)(keys, observation, core, first)

    return run


def _split(keys: chex.Array, num: int) -> chex.Array:
    """[B, 2] keys -> [num, B, 2]: each env's own stream, whatever the batch split."""
    return jnp.swapaxes(jax.vmap(lambda k: jax.random.split(k, num))(keys), 0, 1)


class _Carry(NamedTuple):
    t: chex.Array  # [] int32
    env_state: Any  # [B, ...]
    timestep: TimeStep  # [B, ...]
    core: Any  # [B, ...] the agent's recurrent state (() feed-forward)
    keys: chex.Array  # [B, 2]
    finished: chex.Array  # [B] bool
    returns: chex.Array  # [B] float32, of the finished episodes
    lengths: chex.Array  # [B] int32


def jax_episodes(
    agent: Agent, env: JaxEnv, max_steps: int, greedy: bool = True
) -> Callable[[Any, chex.Array], tuple[chex.Array, chex.Array]]:
    """`episodes(params, keys [B, 2]) -> (returns [B], lengths [B])`: one episode per key.

    Each env's randomness comes from its own key, so a batch split over devices (keys
    derived from global env indices) gives the same episodes as one device.
    """
    policy = per_env(_policy(agent, greedy))

    def episodes(params, keys):
        reset_keys, keys = _split(keys, 2)
        env_state, timestep = jax.vmap(env.reset)(reset_keys)
        n = keys.shape[0]

        def cond(c: _Carry):
            return (c.t < max_steps) & ~jnp.all(c.finished)

        def body(c: _Carry):
            keys, act_keys, step_keys = _split(c.keys, 3)
            ts = c.timestep
            action, core = policy(params, act_keys, ts.observation, c.core, ts.first)
            env_state, ts = jax.vmap(env.step)(c.env_state, action, step_keys)
            newly = ts.episode_end_mask & ~c.finished
            returns = jnp.where(newly, ts.episode_return, c.returns)
            lengths = jnp.where(newly, ts.episode_length, c.lengths)
            return _Carry(c.t + 1, env_state, ts, core, keys, c.finished | newly, returns,
                          lengths)  # fmt: skip

        zeros = jnp.zeros(n, jnp.float32)
        init = _Carry(jnp.int32(0), env_state, timestep, agent.initial_core(n), keys,
                      jnp.zeros(n, bool), zeros, jnp.zeros(n, jnp.int32))  # fmt: skip
        final = jax.lax.while_loop(cond, body, init)
        # Episodes cut by max_steps count with their running statistics.
        returns = jnp.where(final.finished, final.returns, final.timestep.episode_return)
        lengths = jnp.where(final.finished, final.lengths, final.timestep.episode_length)
        return returns, lengths

    return episodes


def jax_observations(
    agent: Agent, env: JaxEnv, steps: int, greedy: bool = True
) -> Callable[[Any, chex.Array], tuple[chex.Array, chex.Array]]:
    """`record(params, keys [B, 2]) -> (observations [steps+1, B, ...], done [steps+1, B])`:
    the episodes of `jax_episodes` (same keys, same actions), observation by observation,
    for `steps` steps; `done[t]` marks the step that ended an env's first episode."""
    policy = per_env(_policy(agent, greedy))

    def record(params, keys):
        reset_keys, keys = _split(keys, 2)
        env_state, timestep = jax.vmap(env.reset)(reset_keys)

        def step(carry, _):
            env_state, timestep, core, keys, finished = carry
            keys, act_keys, step_keys = _split(keys, 3)
            action, core = policy(params, act_keys, timestep.observation, core, timestep.first)
            env_state, ts = jax.vmap(env.step)(env_state, action, step_keys)
            # What the viewer sees at the end of an episode is its last observation.
            shown = jnp.where(_expand(ts.episode_end_mask, ts.observation),
                              ts.final_observation, ts.observation)  # fmt: skip
            done = ts.episode_end_mask & ~finished
            carry = (env_state, ts, core, keys, finished | ts.episode_end_mask)
            return carry, (shown, done)

        n = keys.shape[0]
        carry = (env_state, timestep, agent.initial_core(n), keys, jnp.zeros(n, bool))
        _, (observations, done) = jax.lax.scan(step, carry, length=steps)
        first = timestep.observation[None]
        return (jnp.concatenate([first, observations]),
                jnp.concatenate([jnp.zeros((1, n), bool), done]))  # fmt: skip

    return record


def _expand(mask: chex.Array, like: chex.Array) -> chex.Array:
    return mask.reshape(mask.shape + (1,) * (like.ndim - mask.ndim))


def host_episodes(
    agent: Agent,
    env: HostEnv,
    params: Any,
    max_steps: int,
    greedy: bool = True,
    key: chex.PRNGKey | None = None,
    record: int = 0,
    device: jax.Device | None = None,
) -> Episodes:
    """One episode per env of `env` (a HostEnv stepped synchronously); with `record=k`,
    the observations of the first k envs until their episodes end."""
    policy = jax.jit(_policy(agent, greedy))
    key = jax.random.PRNGKey(0) if key is None else key
    if device is not None:
        params = jax.device_put(params, device)
    ts = env.reset()
    n = env.num_envs
    core = jax.device_put(agent.initial_core(n), device) if device else agent.initial_core(n)
    finished = np.zeros(n, bool)
    returns = np.zeros(n, np.float32)
    lengths = np.zeros(n, np.int32)
    frames, dones = [np.asarray(ts.observation)[:record]], [np.zeros(record, bool)]
    # +2: envpool's dummy reset step after an episode's end, and the reset observation.
    limit = (env.spec.max_episode_steps or max_steps) + 2
    for _ in range(limit):
        key, sub = jax.random.split(key)
        observation, first = ts.observation, ts.first
        if device is not None:
            observation, first = jax.device_put((observation, first), device)
        action, core = policy(params, sub, observation, core, first)
        ts = env.step(np.asarray(action))
        end = np.asarray(ts.episode_end_mask)
        newly = end & ~finished
        returns[newly] = np.asarray(ts.episode_return)[newly]
        lengths[newly] = np.asarray(ts.episode_length)[newly]
        if record and not finished[:record].all():
            # At an episode's end, its last observation: envs that reset within the step
            # (gymnasium's, `as_host_env`'s) already show the next episode's first.
            shown = np.asarray(ts.observation)[:record]
            if ts.final_observation is not None and ts.final_observation is not ts.observation:
                last = np.asarray(ts.final_observation)[:record]
                shown = np.where(_expand(end[:record], shown), last, shown)
            frames.append(shown)
            dones.append(newly[:record])
        finished |= newly
        if finished.all():
            break
    running = ~finished
    returns[running] = np.asarray(ts.episode_return)[running]
    lengths[running] = np.asarray(ts.episode_length)[running]
    observations = np.stack(frames) if record else None
    return Episodes(returns, lengths, observations, np.stack(dones) if record else None)


def env_keys(key: chex.PRNGKey, num_envs: int, offset: int = 0) -> chex.Array:
    """Keys `[num_envs, 2]` of envs `offset .. offset + num_envs - 1` (global indices)."""
    return jax.vmap(lambda i: jax.random.fold_in(key, i))(offset + jnp.arange(num_envs))
