"""MuZero (Schrittwieser et al., 2020) with Gumbel search (Danihelka et al., 2022).

Acting (`podracer.agents.muzero_acting`) runs `podracer.search.search` on every step;
`extras` carry the search policy `"policy"` `[B, A]` and the search value `"root_value"`
`[B]`, which this module learns from: the network, its targets and its loss.

Learning, on trajectories `[T+1, B]`: by default sequences sampled from a replay of past
rollouts (`replay`, see `podracer.agents.replay`; capacity 0 learns from each rollout
once, as it arrives):

* from every position t in [0, T), represent `observation[t]` and unroll the dynamics
  K steps with the actions actually taken, `action[t..t+K-1]`;
* unroll step k predicts, for state t+k, the search policy `policy[t+k]` and the n-step
  return from t+k bootstrapped from `root_value[t+k+n]` (the horizon shrinks at the
  trajectory's end; the last state's target is its own search value), and the reward of
  transition t+k;
* episode ends follow `returns.boundaries`: a return stops at any episode end; a
  termination bootstraps nothing, a truncation bootstraps the network's value of
  `final_observation` (JaxEnv same-step resets; with envpool's layout the truncated
  step's own search value). Past a termination the unrolled state is absorbing: value
  and reward targets 0, no policy loss. Past a truncation, or past the trajectory's end,
  nothing is learned. Positions whose transition is envpool's dummy reset learn nothing.

Losses are cross-entropies: to two-hot encodings of the (h-scaled) value and reward
targets on their `DiscreteSupport`s, and to the search policy; `entropy_cost` (0 by
default) subtracts that times the prior's entropy at the observed states. Unrolled steps
are weighted 1/K and the gradient through each dynamics step is halved (MuZero, appendix G).
With `consistency_cost` (0 by default), EfficientZero's temporal consistency: unroll step
k >= 1 from t also gives the negative cosine between the predictor on the projection of
its latent and the stopped projection of `represent(observation[t+k])`, where the policy
is learned (no episode end between). With `novelty_weight` (0 by default), random network
distillation's bonus (`podracer.agents.novelty`) on the observation each transition led
to joins its reward, weighted (fading to 0 over the first `novelty_fade` of the run's
updates), before any target is built (value, reward and the priorities alike), and the
predictor's error joins the loss; each update first merges its batch into the bonus's
running statistics (the error scale over the last `novelty_window` errors, where > 0).

In an action box the agent is Sampled MuZero (Hubert et al., 2021): the prior is a
diagonal Gaussian over pre-squash actions u, the search (`podracer.search.sampled_search`)
considers `num_action_samples` draws of it at every node, and the env receives the box's
affine image of tanh(u); dynamics takes actions as tanh(u) in [-1, 1], so a replayed
env action maps back exactly. The policy target weighs the root's samples
(`extras["sampled_actions"]` `[B, N, D]`); the policy loss is `-sum_n w_n log pi(u_n)`.

A replayed sequence may carry importance weights (`extras["replay_weight"]`, prioritised
replay); `priority` gives each sequence's mean |value - n-step target| for its priority.

The defaults (`MuZeroConfig`) and how seed sweeps found them:
`benchmarks/results/muzero_tuning.md`.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import optax

from podracer.agents import novelty
from podracer.agents import returns
from podracer.agents.configs import MuZeroConfig
from podracer.agents.hyper import Hyper
from podracer.agents.hyper import Hyperparams
from podracer.agents.hyper import is_zero
from podracer.agents.learn import make_optimizer
from podracer.agents.learn import sgd_update
from podracer.agents.muzero_acting import acting
from podracer.agents.muzero_networks import MuZeroNetwork
from podracer.agents.muzero_networks import gaussian_prior
from podracer.agents.muzero_networks import make_model
from podracer.agents.muzero_networks import scale_gradient
from podracer.agents.networks import resolve_torso
from podracer.agents.normalization import frozen_statistics
from podracer.agents.policy import Gaussian
from podracer.agents.policy import categorical_entropy
from podracer.agents.policy import gaussian_entropy
from podracer.agents.policy import gaussian_log_prob
from podracer.agents.types import Agent
from podracer.agents.types import Trajectory
from podracer.agents.types import masked_mean
from podracer.envs import EnvSpec
from podracer.search import MuZeroModel
from podracer.search import logits_to_scalar
from podracer.search import scalar_to_probs


def resolve_muzero_torso(kind: str, spec: EnvSpec) -> str:
    """`auto`: the IMPALA ResNet for uint8 frames `[C, H, W]`, an MLP otherwise."""
    if kind != "auto":
        return resolve_torso(kind, spec, "MuZeroConfig")
    is_frames = spec.observation_dtype == "uint8" and len(spec.observation_shape) == 3
    return "impala_resnet" if is_frames else "mlp"


def n_step_returns(
    r_t: chex.Array, discount_t: chex.Array, cut_t: chex.Array, v_t: chex.Array, n: int
) -> chex.Array:
    """n-step returns `[T, B]` for transitions t, cut at episode ends and at the end.

    G_t = r_t + discount_t v_t                 if n == 1, cut_t or t == T-1,
    G_t = r_t + discount_t G^(n-1)_{t+1}       otherwise,
    with `v_t` the value of the state transition t leads to (`returns.bootstrap_values`).
    """
    chex.assert_rank([r_t, discount_t, cut_t, v_t], 2)
    chex.assert_equal_shape([r_t, discount_t, cut_t, v_t])
    g = r_t + discount_t * v_t
    for _ in range(n - 1):  # n is small and static
        g_next = jnp.concatenate([g[1:], v_t[-1:]], axis=0)
        g = r_t + discount_t * jnp.where(cut_t, v_t, g_next)
    return g


class UnrollTargets(NamedTuple):
    """Targets of a K-step unroll from every position t; index [k, t, b]."""

    action: chex.Array  # [K, T, B] int32, action taken at t+k (arbitrary where masked)
    policy: chex.Array  # [K+1, T, B, A] search policy at t+k
    policy_mask: chex.Array  # [K+1, T, B] bool
    value: chex.Array  # [K+1, T, B] n-step return from t+k (0 past a termination)
    value_mask: chex.Array  # [K+1, T, B] bool
    reward: chex.Array  # [K, T, B] reward of transition t+k (0 past a termination)
    reward_mask: chex.Array  # [K, T, B] bool
    # Sampled MuZero: the search's samples at t+k, [K+1, T, B, N, D] (`policy` weighs them)
    samples: chex.Array | None = None


def _window(x: chex.Array, start: int, length: int, fill) -> chex.Array:
    """`x[start:start+length]` along axis 0, padded with `fill` past the end of `x`."""
    y = x[start : start + length]
    pad = length - y.shape[0]
    if pad > 0:
        y = jnp.concatenate([y, jnp.full((pad, *y.shape[1:]), fill, y.dtype)], axis=0)
    return y


def unroll_targets(
    trajectory: Trajectory,
    value_target: chex.Array,
    bounds: returns.Boundaries,
    num_unroll_steps: int,
) -> UnrollTargets:
    """Gathers the targets of every unroll step from every position (see module doc).

    `value_target` `[T+1, B]`: the n-step return of each state; the last row (state T) is
    its search value.
    """
    num_steps = bounds.reward.shape[0]
    chex.assert_shape(value_target, (num_steps + 1, *bounds.reward.shape[1:]))
    policy = trajectory.extras["policy"]  # [T+1, B, A] (Sampled MuZero: over N samples)
    samples = trajectory.extras.get("sampled_actions")  # [T+1, B, N, D] or None
    terminated = trajectory.timestep.terminated[1:]  # [T, B] transition t terminates
    in_episode = jnp.ones_like(bounds.cut)  # no episode end in transitions t..t+k-1
    after_termination = jnp.zeros_like(bounds.cut)  # the episode of t terminated before t+k
    uniform = 1.0 / policy.shape[-1]
    out = {k: [] for k in UnrollTargets._fields if k != "samples" or samples is not None}
    for k in range(num_unroll_steps + 1):  # K is small and static
        absorbing = after_termination  # implies ~in_episode
        out["policy"].append(_window(policy, k, num_steps, uniform))
        if samples is not None:
            out["samples"].append(_window(samples, k, num_steps, 0.0))
        out["policy_mask"].append(bounds.mask & in_episode)
        out["value"].append(jnp.where(in_episode, _window(value_target, k, num_steps, 0.0), 0.0))
        out["value_mask"].append(bounds.mask & (in_episode | absorbing))
        if k == num_unroll_steps:
            break
        has_transition = _window(jnp.ones_like(bounds.cut), k, num_steps, False)
        out["action"].append(_window(trajectory.action, k, num_steps, 0))
        out["reward"].append(jnp.where(in_episode, _window(bounds.reward, k, num_steps, 0.0), 0.0))
        out["reward_mask"].append(bounds.mask & ((in_episode & has_transition) | absorbing))
        ends = in_episode & _window(terminated, k, num_steps, False)
        after_termination = after_termination | ends
        in_episode = in_episode & ~_window(bounds.cut, k, num_steps, True)
    return UnrollTargets(**{k: jnp.stack(v) for k, v in out.items()})


def _cross_entropy(target_probs: chex.Array, logits: chex.Array) -> chex.Array:
    return -jnp.sum(target_probs * jax.nn.log_softmax(logits, axis=-1), axis=-1)


def sampled_policy_cross_entropy(
    policy: chex.Array, samples: chex.Array, weights: chex.Array
) -> chex.Array:
    """Sampled MuZero's policy loss `[...]`: -sum_n w_n log pi(u_n), the prior `policy`
    `[..., 2, D]` (`gaussian_prior`) at the search's samples `[..., N, D]` weighted by its
    policy target `[..., N]` (pre-squash log-densities: the squash's Jacobian does not
    depend on the parameters)."""
    prior = gaussian_prior(policy)
    mean = jnp.broadcast_to(prior.mean[..., None, :], samples.shape)
    log_std = jnp.broadcast_to(prior.log_std[..., None, :], samples.shape)
    return -jnp.sum(weights * gaussian_log_prob(Gaussian(mean, log_std), samples), axis=-1)


def scaled_actions(spec: EnvSpec, action: chex.Array) -> chex.Array:
    """Env actions `[..., *action_shape]` in the box -> `[..., D]` in [-1, 1] (what the
    continuous dynamics takes: tanh of the pre-squash sample)."""
    flat = action.reshape(*action.shape[: action.ndim - len(spec.action_shape)], -1)
    low, high = (b.reshape((1,) * (flat.ndim - 1) + (-1,)) for b in spec.action_bounds())
    return jnp.clip(2.0 * (flat - low) / (high - low) - 1.0, -1.0, 1.0)


def muzero_network(
    spec: EnvSpec, config: MuZeroConfig, hp: Hyperparams | None = None
) -> MuZeroNetwork:
    """The representation, dynamics and prediction networks `config` asks for on `spec`
    (with consistency heads where `hp`'s consistency cost is not a plain 0)."""
    hp = Hyperparams(config) if hp is None else hp
    return MuZeroNetwork(
        num_actions=spec.num_actions,
        action_size=0 if spec.is_discrete else math.prod(spec.action_shape),
        torso=resolve_muzero_torso(config.torso, spec),
        observation_ndim=len(spec.observation_shape),
        latent_size=config.latent_size,
        torso_hidden_sizes=config.torso_hidden_sizes,
        hidden_sizes=config.hidden_sizes,
        value_bins=config.value_support.num_bins,
        reward_bins=config.reward_support.num_bins,
        latent_norm=config.latent_norm,
        # A swept cost is an array: the heads are built for every member then.
        consistency=not is_zero(hp.consistency_cost),
    )


def value_targets(
    net: MuZeroNetwork,
    model: MuZeroModel,
    config: MuZeroConfig,
    hp: Hyperparams,
    can_truncate: bool,
    params,
    trajectory,
):
    """Latents `[T+1, B, L]`, predicted values `[T+1, B]`, n-step targets `[T+1, B]` (the
    last row, state T, its own search value) and the trajectory's `Boundaries`."""
    ts = trajectory.timestep
    bounds = returns.boundaries(ts, hp.gamma)
    latents = net.apply(params, ts.observation, method=MuZeroNetwork.represent)  # [T+1, B, L]
    _, value_logits = net.apply(params, latents, method=MuZeroNetwork.predict)
    values = logits_to_scalar(config.value_support, value_logits)
    boot = trajectory.extras["root_value"] if config.value_bootstrap == "search" else values
    final_v = returns.final_values(
        lambda o, _: model.prediction(params, model.representation(params, o)).value,
        ts,
        can_truncate,
    )
    v_t = jax.lax.stop_gradient(returns.bootstrap_values(boot, final_v, ts))
    g = n_step_returns(bounds.reward, bounds.discount, bounds.cut, v_t, config.td_steps)
    g = jnp.concatenate([g, jax.lax.stop_gradient(boot[-1:])], axis=0)
    return latents, values, g, bounds


def unroll_cross_entropies(
    net: MuZeroNetwork,
    config: MuZeroConfig,
    params,
    latent: chex.Array,
    targets: UnrollTargets,
) -> tuple[chex.Array, ...]:
    """Value and policy `[K+1, T, B]` and reward `[K, T, B]` cross-entropies of the model
    unrolled K steps from the latents `[T, B, L]` with the actions taken, the gradient
    through each dynamics step halved (MuZero, appendix G); the prior's entropy `[T, B]`
    at the observed states; and the unrolled latents `[K, T, B, L]`."""

    def predicted_cross_entropies(latent, k_value, k_policy, k_samples):
        policy_logits, value_logits = net.apply(params, latent, method=MuZeroNetwork.predict)
        value_ce = _cross_entropy(scalar_to_probs(config.value_support, k_value), value_logits)
        if targets.samples is None:
            policy_ce = _cross_entropy(k_policy, policy_logits)
        else:
            policy_ce = sampled_policy_cross_entropy(policy_logits, k_samples, k_policy)
        return policy_logits, value_ce, policy_ce

    samples = targets.samples
    policy_logits, value_ce, policy_ce = predicted_cross_entropies(
        latent, targets.value[0], targets.policy[0], None if samples is None else samples[0]
    )
    entropy = (
        categorical_entropy(policy_logits)
        if samples is None
        else gaussian_entropy(gaussian_prior(policy_logits))
    )

    # The K dynamics steps as one loop: one traced and compiled step (dynamics, then
    # prediction at the state it reaches), not K copies of it.
    def step(latent, xs):
        action, reward, value, policy, k_samples = xs
        reward_logits, latent = net.apply(params, latent, action, method=MuZeroNetwork.dynamics)
        reward_probs = scalar_to_probs(config.reward_support, reward)
        reward_ce = _cross_entropy(reward_probs, reward_logits)
        unrolled = latent
        latent = scale_gradient(latent, 0.5)
        _, value_ce, policy_ce = predicted_cross_entropies(latent, value, policy, k_samples)
        return latent, (value_ce, policy_ce, reward_ce, unrolled)

    xs = (
        targets.action,
        targets.reward,
        targets.value[1:],
        targets.policy[1:],
        None if samples is None else samples[1:],
    )
    _, (values, policies, reward_ce, unrolled) = jax.lax.scan(step, latent, xs)
    return (
        jnp.concatenate([value_ce[None], values]),
        jnp.concatenate([policy_ce[None], policies]),
        reward_ce,
        entropy,
        unrolled,
    )


def consistency_similarity(
    net: MuZeroNetwork, params, unrolled: chex.Array, observed: chex.Array
) -> chex.Array:
    """EfficientZero's temporal consistency `[...]`: the cosine similarity between the
    predictor on the projection of the unrolled latents `[..., L]` and the projection of
    the observed ones `[..., L]` (the representations of the observations they stand for),
    with no gradient through the observed branch (SimSiam)."""
    projection = net.apply(params, unrolled, method=MuZeroNetwork.project)
    predicted = net.apply(params, projection, method=MuZeroNetwork.predict_projection)
    target = jax.lax.stop_gradient(net.apply(params, observed, method=MuZeroNetwork.project))
    return optax.cosine_similarity(predicted, target, epsilon=1e-8)


def muzero_loss(
    net: MuZeroNetwork,
    model: MuZeroModel,
    config: MuZeroConfig,
    hp: Hyperparams,
    spec: EnvSpec,
    params,
    trajectory: Trajectory,
) -> tuple[chex.Array, dict[str, chex.Array]]:
    """MuZero's loss on a trajectory `[T+1, B]` (see the module doc): the cross-entropies
    summed over unroll steps (step 0 weight 1, unrolled steps 1/K) and averaged over the
    learnable positions, each sequence weighted by its importance weight when replayed
    with priorities (`extras["replay_weight"]`); `hp`: the (member's) weights."""
    num_unroll = config.num_unroll_steps
    if net.num_actions is None:  # dynamics takes actions scaled to [-1, 1]
        trajectory = trajectory._replace(action=scaled_actions(spec, trajectory.action))
    latents, _, g, bounds = value_targets(
        net, model, config, hp, spec.can_truncate, params, trajectory
    )
    targets = jax.lax.stop_gradient(
        unroll_targets(_smoothed(trajectory, hp), g, bounds, num_unroll)
    )
    value_ce, policy_ce, reward_ce, entropy, unrolled = unroll_cross_entropies(
        net, config, params, latents[:-1], targets
    )
    count = jnp.maximum(jnp.sum(bounds.mask.astype(jnp.float32)), 1.0)
    step_weight = jnp.array([1.0] + [1.0 / num_unroll] * num_unroll)[:, None, None]
    sequence_weight = trajectory.extras.get("replay_weight")
    sequence_weight = 1.0 if sequence_weight is None else sequence_weight[None, :-1]

    def weighted(ce, mask, weight):
        weight = weight * sequence_weight
        return jnp.sum(ce * mask.astype(jnp.float32) * weight) / count

    value_loss = weighted(value_ce, targets.value_mask, step_weight)
    policy_loss = weighted(policy_ce, targets.policy_mask, step_weight)
    reward_loss = weighted(reward_ce, targets.reward_mask, 1.0 / num_unroll)
    prior_entropy = weighted(entropy[None], targets.policy_mask[:1], 1.0)
    total = hp.value_cost * value_loss + hp.policy_cost * policy_loss + hp.reward_cost * reward_loss
    # Left out of the program at 0 (not multiplied by 0): a term of the same value still
    # changes XLA's fusions and the floating point of the run (muzero_tuning.md, Catch).
    if not is_zero(hp.entropy_cost):
        total = total - hp.entropy_cost * prior_entropy
    extra_metrics = {}
    if net.consistency:
        num_steps = bounds.mask.shape[0]
        observed = jnp.stack(
            [_window(latents, k, num_steps, 0.0) for k in range(1, num_unroll + 1)]
        )
        similarity = consistency_similarity(net, params, unrolled, observed)  # [K, T, B]
        consistency_loss = weighted(-similarity, targets.policy_mask[1:], 1.0 / num_unroll)
        total = total + hp.consistency_cost * consistency_loss
        extra_metrics["losses/consistency"] = consistency_loss
    search_policy = trajectory.extras["policy"][:-1]
    metrics = {
        "losses/value": value_loss,
        "losses/policy": policy_loss,
        "losses/reward": reward_loss,
        "agent/prior_entropy": prior_entropy,
        "agent/root_value_mean": masked_mean(trajectory.extras["root_value"][:-1], bounds.mask),
        "agent/value_target_mean": masked_mean(g[:-1], bounds.mask),
        "agent/search_policy_entropy": masked_mean(
            categorical_entropy(jnp.log(jnp.maximum(search_policy, 1e-30))), bounds.mask
        ),
        **extra_metrics,
    }
    return total, metrics


def _smoothed(trajectory: Trajectory, hp: Hyperparams) -> Trajectory:
    """`trajectory` with its policy targets label-smoothed by `hp.policy_target_smoothing`
    (left out of the program at 0, as the entropy bonus)."""
    s = hp.policy_target_smoothing
    if is_zero(s):
        return trajectory
    policy = trajectory.extras["policy"]
    smoothed = (1.0 - s) * policy + s / policy.shape[-1]
    return trajectory._replace(extras={**trajectory.extras, "policy": smoothed})


def make_muzero(
    spec: EnvSpec,
    config: MuZeroConfig = MuZeroConfig(),
    total_updates: int | None = None,
    hyper: Hyper | None = None,
) -> Agent:
    # total_updates: the novelty bonus's and exploration's fades (the learning rate is
    # constant)
    hp = Hyperparams(config, hyper)
    net = muzero_network(spec, config, hp)
    model = make_model(net, config.value_support, config.reward_support, hp.gamma)
    optimizer = make_optimizer(hp.learning_rate, config.max_grad_norm)
    # A swept weight is an array: the bonus's networks are built for every member then.
    with_novelty = not is_zero(hp.novelty_weight)
    obs_ndim = len(spec.observation_shape)
    if with_novelty:
        optimizer = frozen_statistics(optimizer, novelty.FROZEN_KEYS)
    act, greedy_act = acting(spec, config, hp, net, model, total_updates)

    def init(key):
        obs = jnp.zeros((1, *spec.observation_shape), spec.observation_dtype)
        # The dynamics' action: an index, or Sampled MuZero's pre-squash draw u in a box
        action = jnp.zeros((1,), jnp.int32) if spec.is_discrete else jnp.zeros((1, net.action_size))
        params = net.init(key, obs, action)
        if with_novelty:  # its own key: the model's initialisation is the same either way
            params = {**params, **novelty.init_novelty(jax.random.fold_in(key, 1), obs.shape[1:])}
        return params

    def rewarded(params, trajectory: Trajectory):
        weight = novelty.faded_weight(params, hp.novelty_weight, hp.novelty_fade, total_updates)
        return novelty.with_bonus(params, trajectory, weight, obs_ndim)

    targets = functools.partial(value_targets, net, model, config, hp, spec.can_truncate)

    def priority(params, trajectory: Trajectory):
        """Mean |value - n-step target| over each sequence's learnable positions: `[B]`."""
        if with_novelty:
            trajectory, _ = rewarded(params, trajectory)
        _, values, g, bounds = targets(params, trajectory)
        mask = bounds.mask.astype(jnp.float32)
        error = jnp.abs(values[:-1] - g[:-1]) * mask
        return jnp.sum(error, axis=0) / jnp.maximum(jnp.sum(mask, axis=0), 1.0)

    model_loss = functools.partial(muzero_loss, net, model, config, hp, spec)

    def loss(params, trajectory: Trajectory, key: chex.PRNGKey):
        del key
        if not with_novelty:
            return model_loss(params, trajectory)
        augmented, errors = rewarded(params, trajectory)
        total, metrics = model_loss(params, augmented)
        predictor_loss, bonus_metrics = novelty.predictor_loss(trajectory, augmented, errors)
        return total + predictor_loss, {**metrics, **bonus_metrics}

    update = sgd_update(loss, optimizer)
    if with_novelty:
        update = novelty.observing(update, obs_ndim, config.novelty_window)

    return Agent(
        name="muzero",
        spec=spec,
        config=config,
        init=init,
        act=act,
        greedy_act=greedy_act,
        loss=loss,
        optimizer=optimizer,
        learning_rate=hp.learning_rate,
        update=update,
        replay=config.replay if config.replay.enabled else None,
        priority=priority,
    )
