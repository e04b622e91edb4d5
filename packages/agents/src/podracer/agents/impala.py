"""IMPALA: V-trace actor-critic (Espeholt et al., 2018).

Off-policy correct for Sebulba's policy lag: the behaviour policy's logits travel in the
trajectory's extras, and importance ratios pi/mu correct both the value targets (v_s)
and the policy-gradient advantages. The same correction covers reuse: with several
epochs of minibatches (whole sequences) per trajectory and `clip_eps`, the policy loss
is PPO's clipped surrogate of V-trace's advantages, APPO (as in RLlib and Sample Factory),
since a plain policy gradient has no trust region to keep reuse stable.

On a continuous box the policy is a diagonal Gaussian (`podracer.agents.policy`) and the
behaviour log-probability of the action taken travels instead of logits (as `log_prob`,
with the raw sample under tanh squashing); with `normalize_observations` the running
statistics are part of the params (`podracer.agents.normalization`), so a lagging
actor's statistics are part of its behaviour policy, which V-trace corrects for.

With `novelty_weight`, random network distillation's bonus (`podracer.agents.novelty`)
on the observation each transition led to joins its reward before V-trace (the weight
fading over the first `novelty_fade` of the run's updates), the predictor's error joins
the loss, and each update first merges the batch into the bonus's statistics, as
MuZero's does. The actors never see the bonus: it is the learner's reward.
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import optax

from podracer.agents import novelty
from podracer.agents import returns
from podracer.agents.actor_critic import ActorCriticParts
from podracer.agents.actor_critic import actor_critic_parts
from podracer.agents.configs import ImpalaConfig
from podracer.agents.hyper import Hyper
from podracer.agents.hyper import Hyperparams
from podracer.agents.learn import minibatch_update
from podracer.agents.learn import sgd_update
from podracer.agents.normalization import VALUE_KEY
from podracer.agents.normalization import normalize
from podracer.agents.normalization import update_stats
from podracer.agents.normalization import updating_statistics
from podracer.agents.policy import log_prob
from podracer.agents.surrogate import clipped_surrogate
from podracer.agents.surrogate import ratio_metrics
from podracer.agents.types import Agent
from podracer.agents.types import Trajectory
from podracer.agents.types import masked_mean
from podracer.envs import EnvSpec


def policy_loss(
    logp: chex.Array,
    ratio: chex.Array,
    vt: returns.VTraceOutput,
    value: chex.Array,
    mask: chex.Array,
    clip_eps: float | None,
) -> chex.Array:
    """IMPALA's policy-gradient loss, V-trace's clipped-rho-weighted advantages times the
    log-probabilities `[T, B]`; with `clip_eps`, APPO's: PPO's clipped surrogate of the
    ratio to the behaviour policy `exp(logp - behaviour logp)` and the unweighted advantage
    (the ratio weighs it)."""
    if clip_eps is None:
        return -masked_mean(logp * vt.pg_advantage, mask)
    advantage = vt.q_estimate - jax.lax.stop_gradient(value)
    return masked_mean(clipped_surrogate(ratio, advantage, clip_eps), mask)


def _step_then_value_statistics(loss_and_targets, optimizer: optax.GradientTransformation):
    """`sgd_update`'s step, then the value targets it trained on merged into the value
    statistics (V-trace's targets need the values first, so they follow the step)."""

    def update(params, opt_state, trajectory: Trajectory, key, reduce_grads=lambda x: x):
        grad_fn = jax.value_and_grad(loss_and_targets, has_aux=True)
        (total, (metrics, targets, mask)), grads = grad_fn(params, trajectory, key)
        grads, metrics, total = reduce_grads((grads, metrics, total))
        updates, opt_state = optimizer.update(grads, opt_state, params)
        new_params = optax.apply_updates(params, updates)
        stats = update_stats(params[VALUE_KEY], targets, reduce_grads, mask)
        metrics = {**metrics, "losses/grad_norm": optax.tree.norm(grads)}
        return {**new_params, VALUE_KEY: stats}, opt_state, metrics

    return update


def behaviour_log_prob(spec: EnvSpec, trajectory: Trajectory) -> chex.Array:
    """`[T, B]`: the log-probability of each action under the policy that acted (from its
    logits for discrete actions; carried as `log_prob` for a box)."""
    if spec.is_discrete:
        return log_prob(trajectory.extras["logits"][:-1], trajectory.action[:-1])
    return trajectory.extras["log_prob"][:-1]


def impala_loss(
    ac: ActorCriticParts,
    config: ImpalaConfig,
    hp: Hyperparams,
    spec: EnvSpec,
    params,
    trajectory: Trajectory,
) -> tuple[chex.Array, tuple[dict[str, chex.Array], chex.Array, chex.Array]]:
    """`(loss, (metrics, value targets [T, B], mask [T, B]))`: V-trace's policy and
    baseline losses and the entropy bonus on a trajectory `[T+1, B]` (the network unrolled
    from its start state for a recurrent core); `hp`: the (member's) numbers."""
    ts = trajectory.timestep
    (dist, values), cores = ac.forward_all(params, ts.observation, ts.first, trajectory.core)
    bounds = returns.boundaries(ts, hp.gamma)
    final_v = returns.final_values(
        lambda o, c: ac.apply(params, o, c, method="value"), ts, spec.can_truncate, cores
    )
    v_t = jax.lax.stop_gradient(returns.bootstrap_values(values, final_v, ts))
    a_tm1 = trajectory.action[:-1]
    extras_tm1 = {k: x[:-1] for k, x in trajectory.extras.items() if k == "raw_action"}
    dist_tm1 = jax.tree.map(lambda x: x[:-1], dist)
    logp_tm1 = ac.policy.log_prob(dist_tm1, a_tm1, extras_tm1)
    ratio_tm1 = jnp.exp(logp_tm1 - behaviour_log_prob(spec, trajectory))
    rho_tm1 = jax.lax.stop_gradient(ratio_tm1)
    vt = returns.vtrace(
        jax.lax.stop_gradient(values[:-1]),
        v_t,
        bounds,
        rho_tm1,
        hp.lambda_,
        hp.clip_rho_threshold,
        hp.clip_pg_rho_threshold,
    )
    pg_loss = policy_loss(logp_tm1, ratio_tm1, vt, values[:-1], bounds.mask, config.clip_eps)
    value_tm1, target_tm1 = values[:-1], vt.value_target
    if config.normalize_values:  # the loss in normalised units
        value_tm1, target_tm1 = (normalize(params[VALUE_KEY], v) for v in (value_tm1, target_tm1))
    value_loss = 0.5 * masked_mean(jnp.square(target_tm1 - value_tm1), bounds.mask)
    entropy = masked_mean(ac.policy.entropy(dist_tm1), bounds.mask)
    total = pg_loss + hp.value_cost * value_loss - hp.entropy_cost * entropy
    metrics = {
        "losses/total": total,
        "losses/policy": pg_loss,
        "losses/value": value_loss,
        "losses/entropy": entropy,
        "agent/rho_mean": masked_mean(rho_tm1, bounds.mask),
        "agent/value_mean": masked_mean(values[:-1], bounds.mask),
    }
    if config.clip_eps is not None:  # APPO: how far reuse moved the policy
        metrics.update(ratio_metrics(ratio_tm1, bounds.mask, config.clip_eps))
    return total, (metrics, vt.value_target, bounds.mask)


def make_impala(
    spec: EnvSpec,
    config: ImpalaConfig = ImpalaConfig(),
    total_updates: int | None = None,
    hyper: Hyper | None = None,
) -> Agent:
    hp = Hyperparams(config, hyper)
    ac = actor_critic_parts(spec, config, "ImpalaConfig", total_updates, hp=hp)
    obs_ndim = len(spec.observation_shape)

    def act(params, key, observation, step=0, core=None, first=None):
        del step  # no schedule in acting
        (dist, _), core = ac.forward(params, observation, core, first)
        action, extras = ac.policy.sample(key, dist)
        if spec.is_discrete:
            return action, {"logits": dist}, core
        return action, {**extras, "log_prob": ac.policy.log_prob(dist, action, extras)}, core

    def loss_and_targets(params, trajectory: Trajectory, key: chex.PRNGKey):
        del key
        if not ac.novelty:
            return impala_loss(ac, config, hp, spec, params, trajectory)
        weight = novelty.faded_weight(params, hp.novelty_weight, hp.novelty_fade, total_updates)
        augmented, errors = novelty.with_bonus(params, trajectory, weight, obs_ndim)
        total, (metrics, targets, mask) = impala_loss(ac, config, hp, spec, params, augmented)
        predictor_loss, bonus_metrics = novelty.predictor_loss(trajectory, augmented, errors)
        return total + predictor_loss, ({**metrics, **bonus_metrics}, targets, mask)

    def loss(params, trajectory: Trajectory, key: chex.PRNGKey):
        total, (metrics, _, _) = loss_and_targets(params, trajectory, key)
        return total, metrics

    if config.num_epochs * config.num_minibatches > 1:  # reuse; no value statistics (config)
        update = minibatch_update(
            lambda params, trajectory, reduce: loss(params, trajectory, None),
            ac.optimizer, config.num_epochs, config.num_minibatches,
            split=config.minibatch_split,
        )  # fmt: skip
    elif config.normalize_values:
        update = _step_then_value_statistics(loss_and_targets, ac.optimizer)
    else:
        update = sgd_update(loss, ac.optimizer)
    if ac.novelty:
        update = novelty.observing(update, obs_ndim, config.novelty_window)

    return Agent(
        name="impala",
        spec=spec,
        config=config,
        init=ac.init,
        act=act,
        greedy_act=ac.greedy_act,
        loss=loss,
        optimizer=ac.optimizer,
        learning_rate=ac.learning_rate,
        update=updating_statistics(update, config.normalize_observations),
        initial_core=ac.initial_core,
    )
