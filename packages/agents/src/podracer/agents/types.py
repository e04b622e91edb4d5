"""The agent interface both runtimes drive: a NamedTuple of pure functions over params.

An agent never knows where its environments run. Anakin calls `act` inside a compiled
`lax.scan` over a vmapped JaxEnv; Sebulba calls it from actor threads on HostEnv batches.
Both hand `update` a time-major `Trajectory` and a `reduce_grads` function that averages
gradients over the devices taking part (identity on one device, `lax.pmean` under
`shard_map`), so the same learning step runs on one device or a pod.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from typing import Any
from typing import NamedTuple

import chex
import jax
import jax.flatten_util
import jax.numpy as jnp
import optax

from podracer.agents.recurrent import no_core
from podracer.envs import EnvSpec
from podracer.envs import TimeStep

Params = Any  # a pytree of arrays
Extras = Mapping[str, chex.Array]  # per-step outputs of `act` the loss needs (logits, values, ...)
Metrics = dict[str, chex.Array]  # flat, scalar, named as logged: "losses/policy", ...
ReduceFn = Callable[[Any], Any]  # averages a pytree over the devices of an update


def pmean_flat(axis_name: str) -> ReduceFn:
    """A `ReduceFn`: `lax.pmean` of a whole pytree as one flat vector.

    One all-reduce instead of one per leaf: across hosts each collective is a network
    round trip (about 0.4 ms over loopback gloo, whatever its size up to ~1e5 floats), so
    a network's dozen gradient leaves plus its metrics would cost dozens of them.
    """

    def reduce(tree: Any) -> Any:
        flat, unravel = jax.flatten_util.ravel_pytree(tree)
        return unravel(jax.lax.pmean(flat, axis_name))

    return reduce


class Trajectory(NamedTuple):
    """A time-major rollout `[T+1, B, ...]`; consecutive rollouts overlap by one step.

    `timestep[t]` is what the agent observed at step t, `action[t]` and `extras[t]` what it
    did there. Transition t goes from `timestep[t]` with `action[t]` to `timestep[t+1]`,
    so losses use `action[:-1]`, `extras[:-1]`, `timestep.reward[1:]`, ... The last
    action is recorded but only used as the first step of the next rollout.
    `timestep.final_observation` may be None where it always equals `observation`
    (next-step-resetting HostEnvs); the dummy-transition mask is
    `timestep.transition_mask[1:]`.
    """

    timestep: TimeStep  # [T+1, B, ...]
    action: chex.Array  # [T+1, B] int32
    extras: Extras  # [T+1, B, ...]
    # [1, B, ...] the recurrent core state row 0 was acted from (before its reset at
    # `first`); () for feed-forward agents (`podracer.agents.recurrent`).
    core: Any = ()

    @property
    def num_transitions(self) -> int:
        return (self.action.shape[0] - 1) * self.action.shape[1]


class Agent(NamedTuple):
    """An agent: hyperparameters and env spec are captured by the closures.

    The spec is bound at construction (not passed to `init` as DESIGN.md first sketched)
    because the network's shape depends on it: binding it once keeps every call site
    free of it and the functions hashable for jit.
    """

    name: str
    spec: EnvSpec
    config: Any  # the agent's frozen config dataclass
    init: Callable[[chex.PRNGKey], Params]
    # act(params, key, observation [B, ...], step=0, core=None, first=None)
    #     -> (action [B], extras [B, ...], core [B, ...]);
    # `step` ([] int32) is the learner's update count of `params`, for schedules of acting
    # (PQN's epsilon); `core` the recurrent state the step starts from (None: the initial
    # one; feed-forward agents return ()), reset where `first` [B] bool. Runtimes pass
    # all of them; other callers may leave them out.
    act: Callable[..., tuple[chex.Array, Extras, Any]]
    # greedy_act(params, observation [B, ...], core=None, first=None) -> (action [B], core):
    # the evaluation policy
    greedy_act: Callable[..., tuple[chex.Array, Any]]
    # loss(params, trajectory, key) -> (scalar, metrics)
    loss: Callable[[Params, Trajectory, chex.PRNGKey], tuple[chex.Array, Metrics]]
    optimizer: optax.GradientTransformation
    # update(params, opt_state, trajectory, key, reduce_grads) -> (params, opt_state, metrics)
    update: Callable[..., tuple[Params, optax.OptState, Metrics]]
    # Optional replay (a `podracer.agents.ReplayConfig`; None or capacity 0: each
    # trajectory is learned from once, as it arrives). A replayed trajectory may carry
    # `extras["replay_weight"]` `[T+1, B]`, importance weights the loss applies per sequence.
    replay: Any = None
    # priority(params, trajectory [T+1, B]) -> [B] float32: replay priority of each
    # sequence (prioritised replay only).
    priority: Callable[[Params, Trajectory], chex.Array] | None = None
    # initial_core(batch_size) -> the core state [B, ...] of envs that have not acted
    # (a pytree; () for feed-forward agents, which is what the default returns).
    initial_core: Callable[[int], Any] = no_core
    # The optimizer's learning rate: a float, or the optax schedule of its step count the
    # optimizer was built with. The runtimes log it as `charts/learning_rate`
    # (`podracer.agents.learn.make_learn`); None: not logged.
    learning_rate: Any = None


def masked_mean(x: chex.Array, mask: chex.Array) -> chex.Array:
    """Mean of `x` over entries where `mask` is true (0 when none is)."""
    chex.assert_equal_shape([x, mask])
    mask = mask.astype(x.dtype)
    return jnp.sum(x * mask) / jnp.maximum(jnp.sum(mask), 1.0)
