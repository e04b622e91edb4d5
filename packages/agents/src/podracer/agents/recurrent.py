"""Recurrent agents: how a core's state travels between acting and learning.

IMPALA's scheme (Espeholt et al., 2018), the same on both runtimes:

* Acting carries each env's core state (Anakin in its runner state, so checkpoints hold
  it and resume is exact; Sebulba in each actor's loop). `act(params, key, observation,
  step, core, first)` resets the state where `first` (the observation starts an episode)
  and returns the state after the step.
* A trajectory carries the state its first row was acted from (`Trajectory.core`,
  `[1, B, ...]`: time-major like every other field, so it shards, concatenates and
  replays along B as they do). The learner unrolls the network from it over the rows,
  with the same resets, so it recomputes exactly what acting computed for the same params.
* Minibatches of a recurrent agent split the envs, never time (`learn.minibatch_update`):
  each keeps whole sequences and their start states.

Feed-forward networks take the same calls: their core state is `()`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import chex
import jax
import jax.numpy as jnp

Apply = Callable[..., Any]  # apply(params, observation, *args, method=None)


def act_step(apply: Apply, recurrent: bool) -> Callable[..., tuple[Any, Any]]:
    """`step(params, observation [B, ...], core, first [B] | None) -> (outputs [B], core)`:
    the network's forward for acting. Recurrent: one step of `unroll` from `core` (None:
    the initial state), reset where `first`; feed-forward: `apply`, and the core is ()."""

    def step(params, observation: chex.Array, core: Any = None, first: chex.Array | None = None):
        if not recurrent:
            return apply(params, observation), ()
        if first is None:
            first = jnp.zeros(observation.shape[:1], bool)
        outputs, cores = apply(params, observation[None], first[None], core, method="unroll")
        return jax.tree.map(lambda x: x[0], (outputs, cores))

    return step


def unroll(apply: Apply, recurrent: bool) -> Callable[..., tuple[Any, Any]]:
    """`unroll(params, observation [T, B, ...], first [T, B], core [1, B, ...]) ->
    (outputs [T, B], cores after each step [T, B])`: the learner's forward over a
    trajectory from its start state; feed-forward: `apply` on every row, cores ()."""

    def run(params, observation: chex.Array, first: chex.Array, core: Any):
        if not recurrent:
            return apply(params, observation), ()
        start = jax.tree.map(lambda x: x[0], core)
        return apply(params, observation, first, start, method="unroll")

    return run


def no_core(batch_size: int) -> tuple:
    """A feed-forward agent's core state: nothing."""
    del batch_size
    return ()
