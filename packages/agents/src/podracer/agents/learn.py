"""The learner step both runtimes run: one gradient step, or several from replay.

`make_learn` is what Anakin's chunk and Sebulba's learner call inside `shard_map` on a
device's share of a rollout; `sgd_update` is the agents' default `update` (one backward
pass over the whole batch); `learner_updates` counts the gradient updates of a run the
same way for both runtimes, so learning-rate schedules anneal alike; `vmap_in_turns`
runs the members of a population a group at a time (`members_at_once`) in both.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

import chex
import jax
import jax.numpy as jnp
import optax

from podracer.agents.configs import ReplayConfig
from podracer.agents.replay import batch_major
from podracer.agents.replay import local_replay
from podracer.agents.train_state import TrainState
from podracer.agents.types import Metrics
from podracer.agents.types import Params
from podracer.agents.types import ReduceFn
from podracer.agents.types import Trajectory

LEARNING_RATE = "charts/learning_rate"  # CleanRL's name


def learning_rate_at(learning_rate: Any, opt_state: optax.OptState) -> chex.Array | None:
    """The learning rate of the optimizer's next step from `opt_state` (float32): a
    constant `learning_rate` itself, a schedule at the step count of the optimizer's
    `scale_by_schedule` (which Adam keeps for a schedule: the count it is evaluated at).
    None without a rate, or for a schedule where `opt_state` has no one such count."""
    if learning_rate is None:
        return None
    if not callable(learning_rate):
        return jnp.asarray(learning_rate, jnp.float32)
    is_count = lambda x: isinstance(x, optax.ScaleByScheduleState)  # noqa: E731
    states = [s for s in jax.tree.leaves(opt_state, is_leaf=is_count) if is_count(s)]
    if len(states) != 1:
        return None
    return jnp.asarray(learning_rate(states[0].count), jnp.float32)


def learner_updates(agent_config: Any, rollouts: int) -> int:
    """Gradient updates in a run of `rollouts` learner calls: with replay, each call makes
    `replay.updates_per_rollout` of them (what schedules such as PPO's annealing count)."""
    replay = getattr(agent_config, "replay", None)
    if isinstance(replay, ReplayConfig) and replay.enabled:
        return rollouts * replay.updates_per_rollout
    return rollouts


def sgd_update(
    loss_fn: Callable[[Params, Trajectory, chex.PRNGKey], tuple[chex.Array, Metrics]],
    optimizer: optax.GradientTransformation,
) -> Callable[..., tuple[Params, optax.OptState, Metrics]]:
    """One gradient step on the whole trajectory: one backward pass over the batch."""

    def update(params, opt_state, trajectory, key, reduce_grads: ReduceFn = lambda x: x):
        (loss, metrics), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, trajectory, key)
        grads, metrics, loss = reduce_grads((grads, metrics, loss))
        updates, opt_state = optimizer.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        metrics = {**metrics, "losses/total": loss, "losses/grad_norm": optax.tree.norm(grads)}
        return params, opt_state, metrics

    return update


def make_optimizer(
    learning_rate: float | optax.Schedule,
    max_grad_norm: float | None,
    *,
    eps: float = 1e-8,
    name: str = "adam",
) -> optax.GradientTransformation:
    """Adam (or RAdam, PQN's) with optional global-norm clipping, every agent's optimizer."""
    chain = []
    if max_grad_norm is not None and max_grad_norm > 0:
        chain.append(optax.clip_by_global_norm(max_grad_norm))
    adam = optax.radam if name == "radam" else optax.adam
    chain.append(adam(learning_rate, eps=eps))
    return optax.chain(*chain)


def config_learning_rate(
    config: Any, learning_rate: Any, total_updates: int | None
) -> float | optax.Schedule:
    """`learning_rate` (a minibatched agent's, or a member's swept one), `annealed` over
    the run's updates (of `num_epochs * num_minibatches` optimizer steps) where `config`
    sets `anneal_lr`."""
    if not config.anneal_lr:
        return learning_rate
    steps_per_update = config.num_epochs * config.num_minibatches
    return annealed(learning_rate, total_updates, steps_per_update)


def annealed(
    learning_rate: float, total_updates: int | None, steps_per_update: int = 1
) -> float | optax.Schedule:
    """`learning_rate` falling linearly to 0 over `total_updates` updates of
    `steps_per_update` optimizer steps each, constant within an update (PureJaxRL's and
    PQN's schedule); the constant rate when the run's length is unknown."""
    if not total_updates:
        return learning_rate
    # Exactly 0 from the end on (the linear part alone can end a rounding below 0: XLA
    # divides by a constant as a product with its reciprocal). `total_updates` is a
    # Python int, as optax needs; `learning_rate` may be a sweep's traced value.
    falling = optax.join_schedules(
        [optax.linear_schedule(learning_rate, 0.0, total_updates), optax.constant_schedule(0.0)],
        [total_updates],
    )
    return lambda count: falling(count // steps_per_update)


def minibatch_update(
    batch_loss: Callable[..., tuple[chex.Array, Metrics]],
    optimizer: optax.GradientTransformation,
    num_epochs: int,
    num_minibatches: int,
    split: str = "time",
    num_microbatches: int = 1,
):
    """An update of `num_epochs` passes over a batch `[T, B, ...]`, each pass split into
    `num_minibatches` gradient steps; `batch_loss(params, minibatch, reduce) -> (loss,
    metrics)`, `reduce` averaging over the devices. Every device shuffles with the key
    they share, so a run is the same on 1 or N devices:

    * `split="time"`: each pass shuffles the time steps and splits them. Each device holds
      every time step of its own envs.
    * `split="envs"` (recurrent agents: minibatches of whole sequences): env i belongs to
      class i mod M of the M minibatches and each pass takes the classes in a shuffled
      order. A device's envs are a contiguous range of the global ones whose length M
      divides, so its minibatch m holds its envs of the same class as on any other
      topology. (A fresh random partition per pass, as PureJaxRL's recurrent PPO makes,
      would give devices unequal shares.)

    With one minibatch, each pass takes the batch as it is (no shuffle).

    `num_microbatches > 1`: each minibatch's gradient (and metrics) is the mean of that
    many equal slices' (along the split axis), computed one after another, so that the
    backward pass holds one slice's activations. The same step where the loss is a mean
    over the slices' equal shares (a masked mean only while the mask is even); for an
    accelerator whose fast memory a whole minibatch's activations outgrow.

        update(params, opt_state, batch, key, reduce_grads) -> (params, opt_state, metrics)
    """
    if split not in ("time", "envs"):
        raise ValueError(f"split must be 'time' or 'envs', got {split!r}")
    axis = 0 if split == "time" else 1

    def update(params, opt_state, batch, key, reduce_grads: ReduceFn = lambda x: x):
        size = jax.tree.leaves(batch)[0].shape[axis]
        if size % num_minibatches:
            what = "rollout length" if split == "time" else "envs on each device"
            raise ValueError(f"num_minibatches ({num_minibatches}) must divide the {what} ({size})")

        grad_fn = jax.grad(lambda p, b: batch_loss(p, b, reduce_grads), has_aux=True)

        def gradient(params, minibatch):
            if num_microbatches == 1:
                return grad_fn(params, minibatch)
            return sliced_gradient(grad_fn, params, minibatch, num_microbatches, axis)

        def minibatch_step(carry, minibatch):
            params, opt_state = carry
            grads, metrics = gradient(params, minibatch)
            grads, metrics = reduce_grads((grads, metrics))
            updates, opt_state = optimizer.update(grads, opt_state, params)
            metrics["losses/grad_norm"] = optax.tree.norm(grads)
            return (optax.apply_updates(params, updates), opt_state), metrics

        def epoch(carry, epoch_key):
            if num_minibatches == 1:  # the whole batch: its order cannot change a mean
                # A shuffle would be a gather of every observation, which an accelerator
                # makes as a loop of row copies (a third of Catch's update at 32k envs
                # on a TPU, benchmarks/results/tpu_20261206.md).
                minibatches = jax.tree.map(lambda x: x[None], batch)
            elif split == "time":
                order = jax.random.permutation(epoch_key, size)
                minibatches = jax.tree.map(lambda x: _by_time(x, order, num_minibatches), batch)
            else:
                order = jax.random.permutation(epoch_key, num_minibatches)
                minibatches = jax.tree.map(lambda x: _by_envs(x, order, num_minibatches), batch)
            return jax.lax.scan(minibatch_step, carry, minibatches)

        keys = jax.random.split(key, num_epochs)
        (params, opt_state), metrics = jax.lax.scan(epoch, (params, opt_state), keys)
        return params, opt_state, jax.tree.map(jnp.mean, metrics)

    return update


def _by_time(x, order, num_minibatches):  # [T, ...] -> [M, T / M, ...]
    return x[order].reshape((num_minibatches, -1) + x.shape[1:])


def _by_envs(x, order, num_minibatches):  # [T, B, ...] -> [M, T, B / M, ...]: m = class order[m]
    classes = x.reshape((x.shape[0], -1, num_minibatches) + x.shape[2:])
    return jnp.moveaxis(jnp.take(classes, order, axis=2), 2, 0)


def sliced_gradient(grad_fn, params, minibatch, num_slices: int, axis: int):
    """`grad_fn(params, minibatch) -> (grads, metrics)` as the mean over `num_slices`
    equal slices of `minibatch` along `axis` (0: time, 1: envs), one `lax.scan` step each:
    the backward pass holds one slice's activations (`minibatch_update`'s microbatches)."""
    part = jax.tree.leaves(minibatch)[0].shape[axis]
    if part % num_slices:
        what = "time steps" if axis == 0 else "envs"
        raise ValueError(f"num_microbatches ({num_slices}) must divide each minibatch's "
                         f"{what} ({part})")  # fmt: skip

    def slices(x):  # [.., n, ..] -> [k, .., n / k, ..] along `axis`
        x = x.reshape(x.shape[:axis] + (num_slices, -1) + x.shape[axis + 1 :])
        return jnp.moveaxis(x, axis, 0)

    def add(total, piece):
        return jax.tree.map(jnp.add, total, grad_fn(params, piece)), None

    pieces = jax.tree.map(slices, minibatch)
    first = jax.tree.map(lambda x: x[0], pieces)
    zeros = jax.tree.map(jnp.zeros_like, jax.eval_shape(grad_fn, params, first))
    total, _ = jax.lax.scan(add, zeros, pieces)
    return jax.tree.map(lambda x: x / num_slices, total)


def make_learn(
    agent,
    num_devices: int,
    axis_name: str,
    reduce_grads: Callable[[Any], Any],
    scan_updates: bool = False,
):
    """The learner's step on one device's share of a rollout, shared by both runtimes:

        learn(train, trajectory [T+1, B], replay_block) -> (train, losses, replay_block)

    Runs inside `shard_map` over `axis_name`. Without replay (`agent.replay` None) it is
    one `agent.update` on the trajectory. With replay, this device adds the trajectory's
    B sequences to its own buffer (`replay_block`: the `[1, ...]` block of the sharded
    buffers), then makes `updates_per_rollout` updates, each on sequences sampled from it
    with this device's key (importance weights in `extras["replay_weight"]`, priorities
    refreshed from the updated params when prioritised). Gradients are averaged over
    devices either way.

    `scan_updates`: the replay updates as one `lax.scan` (one traced and compiled update)
    rather than a Python loop (one copy each). Anakin asks for it: its chunk runs the
    learner inside a while loop anyway, so the loop costs it nothing but the copies
    (MuZero on Catch, 4 updates: most of its compile time). The values are the same.

    The losses hold the agent's update metrics and, where the agent has one
    (`agent.learning_rate`), the learning rate its update took (`LEARNING_RATE`).
    """

    with_rate = functools.partial(_with_rate, agent)

    def learn_on_trajectory(train, trajectory, replay_block):
        key, update_key = jax.random.split(train.key)
        params, opt_state, losses = agent.update(
            train.params, train.opt_state, trajectory, update_key, reduce_grads=reduce_grads
        )
        losses = with_rate(losses, train.opt_state)
        return TrainState(params, opt_state, key, train.update_step + 1), losses, replay_block

    if agent.replay is None:
        return learn_on_trajectory
    config: ReplayConfig = agent.replay
    replay = local_replay(config, num_devices)

    def learn_from_replay(train, trajectory, replay_block):
        local = jax.tree.map(lambda x: x[0], replay_block)  # this device's buffer
        local = replay.add(local, batch_major(trajectory))
        key, replay_key = jax.random.split(train.key)
        # Devices sample their own buffers with their own keys.
        replay_key = jax.random.fold_in(replay_key, jax.lax.axis_index(axis_name))

        one = _replay_update(agent, replay, reduce_grads)
        carry = (train.params, train.opt_state, local)
        step_keys = jax.random.split(replay_key, config.updates_per_rollout)
        if scan_updates:
            carry, losses = jax.lax.scan(one, carry, step_keys)
        else:
            # A Python loop, not lax.scan, by default: XLA:CPU runs convolution gradients
            # ~15x slower inside a while loop's body (measured: Nature CNN, 336 frames,
            # 18 s against 1.2 s), and the count is small and static.
            losses = []
            for step_key in step_keys:
                carry, step_losses = one(carry, step_key)
                losses.append(step_losses)
            losses = jax.tree.map(lambda *xs: jnp.stack(xs), *losses)
        params, opt_state, local = carry
        losses = jax.tree.map(lambda x: jnp.mean(x, axis=0), losses)
        train = TrainState(params, opt_state, key, train.update_step + config.updates_per_rollout)
        return train, losses, jax.tree.map(lambda x: x[None], local)

    return learn_from_replay


def _with_rate(agent, losses, opt_state):
    """`losses` with the learning rate of the update that started from `opt_state`."""
    rate = learning_rate_at(agent.learning_rate, opt_state)
    return losses if rate is None else {**losses, LEARNING_RATE: rate}


def _replay_update(agent, replay, reduce_grads):
    """One replay update, `(params, opt_state, local buffer), key -> (..., losses)`: sample
    sequences, weight them by importance, update, refresh their priorities."""

    def one(carry, step_key):
        params, opt_state, local = carry
        sample_key, update_key = jax.random.split(step_key)
        sample = replay.sample(local, sample_key)
        batch = batch_major(sample.items)  # back to time-major [T+1, S]
        weights = jnp.broadcast_to(sample.weights, batch.action.shape[:2])  # [T+1, S]
        batch = batch._replace(extras={**batch.extras, "replay_weight": weights})
        before = opt_state
        params, opt_state, losses = agent.update(
            params, opt_state, batch, update_key, reduce_grads=reduce_grads
        )
        losses = _with_rate(agent, losses, before)
        if agent.replay.prioritised:
            priorities = jax.lax.stop_gradient(agent.priority(params, batch))
            local = replay.update_priorities(local, sample.indices, priorities)
        return (params, opt_state, local), losses

    return one


def vmap_in_turns(
    fn: Callable[..., tuple],
    num_members: int,
    group: int,
    in_axes: Sequence[int | None],
    out_axes: Sequence[int],
    in_place: Mapping[int, int],
) -> Callable[..., tuple]:
    """`jax.vmap(fn, in_axes, out_axes)` over `num_members` members, `group` of them at a
    time (`group` divides `num_members`), the groups one after another, so that only a
    group's temporaries are live.

    `fn` returns a tuple; `in_axes` gives each positional argument's member axis (None:
    shared), `out_axes` each output's. `in_place` maps an output to the argument it
    replaces (same tree, same axis: a state, a replay buffer): the loop over the groups
    writes each group's new slice back into that argument's buffers rather than into a
    new one. `lax.map(..., batch_size=group)` would instead regroup every argument into
    `[num_members / group, group, ...]` and stack its outputs anew, two more copies of
    every member's state and replay (MuZero's MinAtar preset on Anakin: 12 members in
    turns of 6 needed 3.8x the temporaries of 6 at once, this 1.8x).
    """
    # One trace for the outputs' shapes and the loop's body: a nested jit caches its
    # trace by the arguments' types, and `inline` puts it in the body as it is.
    vmapped = jax.jit(jax.vmap(fn, in_axes=tuple(in_axes), out_axes=tuple(out_axes)), inline=True)

    def take(tree, axis, g):
        return jax.tree.map(lambda x: jax.lax.dynamic_slice_in_dim(x, g * group, group, axis), tree)

    def run(*args):
        def group_args(args, g):
            return [
                a if ax is None else take(a, ax, g) for a, ax in zip(args, in_axes, strict=True)
            ]

        shapes = jax.eval_shape(vmapped, *group_args(args, 0))

        def full(i, shape):  # an output's buffer: its argument's, or zeros for all members
            if i in in_place:
                return args[in_place[i]]
            widen = lambda s: (*s.shape[: out_axes[i]], num_members, *s.shape[out_axes[i] + 1 :])  # noqa: E731
            return jax.tree.map(lambda s: jnp.zeros(widen(s), s.dtype), shape)

        def put(axis, g):
            return lambda full, part: jax.lax.dynamic_update_slice_in_dim(
                full, part, g * group, axis
            )

        def body(g, outputs):
            # An argument updated in place is read from the loop's buffer (group g's slice
            # there is still its input): the loop holds one copy of it, not two.
            current = list(args)
            for i, j in in_place.items():
                current[j] = outputs[i]
            new = vmapped(*group_args(current, g))
            return tuple(
                jax.tree.map(put(axis, g), old, part)
                for old, part, axis in zip(outputs, new, out_axes, strict=True)
            )

        outputs = tuple(full(i, shape) for i, shape in enumerate(shapes))
        return jax.lax.fori_loop(0, num_members // group, body, outputs)

    return run
