"""Episode-boundary bookkeeping and multi-step targets shared by every loss.

For transition t (from `timestep[t]` to `timestep[t+1]`):
* `discount_t = gamma * (1 - terminated[t+1])`: termination stops bootstrapping;
* `cut_t = done[t+1]`: any episode end (termination or truncation) cuts the lambda
  trace, so no target mixes two episodes; a truncated transition still bootstraps,
  from the value of `final_observation[t+1]`;
* `mask_t = transition_mask[t+1]`: envpool's dummy reset transitions are not learned from.

The multi-step targets wrap rlax's V-trace, whose recursion
`acc_t = delta_t + discount_t * c_t * acc_{t+1}` with `c_t = lambda_t * min(1, rho_t)`
gives GAE / TD(lambda) advantages when `rho = 1` (on-policy), so one tested recursion
serves V-trace, PPO and Q(lambda).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import rlax

from podracer.envs import TimeStep


class Boundaries(NamedTuple):
    """Per-transition episode bookkeeping, `[T, B]`."""

    discount: chex.Array  # [T, B] float32, gamma or 0 after a termination
    cut: chex.Array  # [T, B] bool, an episode ended at t+1: the trace stops here
    mask: chex.Array  # [T, B] bool, false for dummy reset transitions
    reward: chex.Array  # [T, B] float32, r_t received on reaching t+1


def boundaries(timestep: TimeStep, gamma: float) -> Boundaries:
    """Boundaries of a `[T+1, B]` timestep sequence."""
    nxt = jax.tree.map(lambda x: x[1:] if x is not None else None, timestep)
    discount = gamma * (1.0 - nxt.terminated.astype(jnp.float32))
    return Boundaries(discount, nxt.done, nxt.transition_mask, nxt.reward.astype(jnp.float32))


def bootstrap_values(
    values: chex.Array, final_values: chex.Array | None, timestep: TimeStep
) -> chex.Array:
    """Values `v_t` `[T, B]` to bootstrap transition t from.

    `values` `[T+1, B]` are computed on `observation`; where the episode was truncated at
    t+1 and the env reset within the step, `observation[t+1]` already belongs to the next
    episode, so `final_values` `[T, B]` (computed on `final_observation[1:]`) is used.
    """
    if final_values is None:
        return values[1:]
    return jnp.where(timestep.truncated[1:], final_values, values[1:])


def final_values(
    value_fn: Callable[[chex.Array, Any], chex.Array],
    timestep: TimeStep,
    can_truncate: bool,
    cores: Any = (),
) -> chex.Array | None:
    """Values `[T, B]` of `final_observation[1:]`, the states truncated episodes end in,
    for `bootstrap_values`; None when the env never truncates or gives no final observation.

    `value_fn(observation [T, B, ...], cores [T, B, ...])` is the value network's forward.
    `cores` are a recurrent network's states after each row of the trajectory (`unroll`'s,
    `[T+1, B, ...]`; () feed-forward): `final_observation[t+1]` follows the state after row
    t, the one the next step's reset discarded.
    """
    if not can_truncate or timestep.final_observation is None:
        return None
    cores = jax.tree.map(lambda c: c[:-1], cores)
    return value_fn(timestep.final_observation[1:], cores)


def _per_sequence(fn, *args):
    """vmaps a `[T]` rlax function over the batch axis of `[T, B]` arguments."""
    return jax.vmap(fn, in_axes=1, out_axes=1)(*args)


class VTraceOutput(NamedTuple):
    value_target: chex.Array  # [T, B] v_s targets for v_tm1
    pg_advantage: chex.Array  # [T, B] clipped-rho-weighted q_estimate - v_tm1, at t
    q_estimate: chex.Array  # [T, B] r_t + discount_t * v_s at t+1: the action's value


def vtrace(
    v_tm1: chex.Array,
    v_t: chex.Array,
    bounds: Boundaries,
    rho_tm1: chex.Array,
    lambda_: float = 1.0,
    clip_rho_threshold: float = 1.0,
    clip_pg_rho_threshold: float = 1.0,
) -> VTraceOutput:
    """V-trace targets and advantages (Espeholt et al., 2018, eqs. 1 and 4), `[T, B]`.

    Unlike `rlax.vtrace_td_error_and_advantage`, the policy-gradient target of a
    transition that ends an episode uses `v_t` (the final state's value), not the
    next sequence element's v_s, which belongs to the next episode.
    """
    chex.assert_rank([v_tm1, v_t, rho_tm1], 2)
    chex.assert_equal_shape([v_tm1, v_t, rho_tm1, bounds.discount])
    lambda_t = lambda_ * (1.0 - bounds.cut.astype(jnp.float32))
    errors = _per_sequence(
        lambda *a: rlax.vtrace(*a, clip_rho_threshold=clip_rho_threshold),
        v_tm1,
        v_t,
        bounds.reward,
        bounds.discount,
        rho_tm1,
        lambda_t,
    )
    vs = jax.lax.stop_gradient(v_tm1 + errors)
    vs_next = jnp.concatenate([vs[1:], v_t[-1:]], axis=0)
    vs_next = jnp.where(bounds.cut, v_t, vs_next)
    q_t = bounds.reward + bounds.discount * vs_next
    pg_rho = jnp.minimum(clip_pg_rho_threshold, rho_tm1)
    pg_advantage = jax.lax.stop_gradient(pg_rho * (q_t - v_tm1))
    return VTraceOutput(vs, pg_advantage, jax.lax.stop_gradient(q_t))


def lambda_advantages(
    v_tm1: chex.Array, v_t: chex.Array, bounds: Boundaries, lambda_: float
) -> chex.Array:
    """GAE(lambda) advantages `[T, B]` (Schulman et al., 2016): on-policy V-trace errors."""
    chex.assert_rank([v_tm1, v_t], 2)
    ones = jnp.ones_like(v_tm1)
    return vtrace(v_tm1, v_t, bounds, ones, lambda_).value_target - jax.lax.stop_gradient(v_tm1)
