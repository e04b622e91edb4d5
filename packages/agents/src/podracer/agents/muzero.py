"""MuZero (Schrittwieser et al., 2020) with Gumbel search (Danihelka et al., 2022).

Acting runs `podracer.search.search` on every step; `extras` carry the search policy
`"policy"` `[B, A]` and the search value `"root_value"` `[B]`. Learning, on trajectories
`[T+1, B]`: by default sequences sampled from a replay of past rollouts (`replay`, see
`podracer.agents.replay`; capacity 0 learns from each rollout once, as it arrives):

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
targets on their `DiscreteSupport`s, and to the search policy. Unrolled steps are
weighted 1/K and the gradient through each dynamics step is halved (MuZero, appendix G).

A replayed sequence may carry importance weights (`extras["replay_weight"]`, prioritised
replay); `priority` gives each sequence's mean |value - n-step target| for its priority.

Defaults, from learning gymnax CartPole-v1 and Catch on Anakin (32 envs x 16 steps):
* Without replay and exploration, both search policies lock onto arbitrary actions on
  CartPole: its two actions have nearly equal values, and both PUCT's parent-and-siblings
  and Gumbel's mix-value transforms min-max rescale the root's Q-values, so a value bias
  of the untrained model becomes a full-strength policy target; once the policy stops
  taking an action, no data corrects the model about it. Training return stayed at
  10-60 (greedy ~9: one action always). Fixed value bounds (`min_max`) instead left the
  visits at the prior: no improvement at all.
* `exploration_epsilon=0.1` (a uniformly random action 10% of the time; targets are still
  the search's) keeps both actions in the data; replay (each sequence learned from ~2
  times) makes the data go further. With both, PUCT and Gumbel reach returns of 400-500,
  but with bootstraps from the current network the returns collapsed again and again
  (greedy return back to ~10 for a chunk), with learning rate 3e-3 or 1e-3.
* Bootstrapping from the acting search's root values ("search"), which replay makes a
  few rollouts old, acts as a target network: the runs became smooth. Gumbel with it
  reached a greedy return of 500 at ~0.77M frames (PUCT plateaued near 120 in 0.8M), so
  Gumbel MuZero, the issue's stated default, is the default again; Catch still learns
  (greedy 1.0). Its policy target is sharp (entropy ~0.03 nats): exploration comes from
  epsilon and the Gumbel noise of acting.
* Longer windows (T=32, n=16) with network bootstraps, and gamma 0.997, were not better
  in single runs. Returns still oscillate by a few hundred after first reaching 500.
* Sebulba and Anakin behave alike here: Sebulba on gymnax CartPole (through
  `as_host_env`, 32 envs x 16 steps, deterministic mode) gave the same rise-and-collapse
  curve as Anakin. With uniform replay the training return reaches 450-500 and falls
  back to ~100 for 100-400k steps, again and again (3 seeds, 1e6 steps: second-half
  means 250-270): once the agent balances well, the buffer holds few failures, and the
  model forgets what leads to them. Prioritised replay (alpha 0.6, beta 0.4: failures
  carry large value errors, so they are replayed more) ended 2 of 3 seeds at 480-500
  for the last 200k steps (second-half means 243-385, mean 303); a softer policy
  target (`value_scale` 0.02), lr 3e-4 or a 64-sequence batch were not better.
  So replay is prioritised by default; with it `benchmarks/muzero.py` reached greedy 475
  at 614k steps (168 s) and was still at 479 (training 486) after 3M steps.
* A smaller buffer then made both runtimes stable: 2048 sequences (~35k steps) instead of
  8192 (~140k). The stored policy and value targets come from the search that acted, so
  an old sequence teaches an old policy; with 8192 the agent kept relearning what it had
  outgrown. Anakin, gymnax CartPole, 1e6 steps, 3 seeds: second-half mean training return
  471 / 430 / 420 against 183 / 333 / 158; every greedy evaluation of the last 300k steps
  was 500 on all three seeds with 2048, on none with 8192. Sebulba, envpool CartPole, 32 x 16, 3 seeds: 348 /
  411 / 340 against 227 / 168 (2 seeds); 1024 sequences: 263 / 359. Network bootstraps
  instead of search values were worse again (195).
* Dynamics and prediction need two hidden layers: with one, the reward model stayed
  action-independent on Catch (the catch depends on ball, paddle and action jointly).
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp

from podracer.agents import returns
from podracer.agents.config import check_choice
from podracer.agents.config import check_positive
from podracer.agents.config import check_range
from podracer.agents.config import fail
from podracer.agents.muzero_networks import MuZeroNetwork
from podracer.agents.muzero_networks import make_model
from podracer.agents.muzero_networks import scale_gradient
from podracer.agents.policy import categorical_entropy
from podracer.agents.replay import ReplayConfig
from podracer.agents.types import Agent
from podracer.agents.types import Trajectory
from podracer.agents.types import make_optimizer
from podracer.agents.types import masked_mean
from podracer.agents.types import sgd_update
from podracer.envs import EnvSpec
from podracer.search import DiscreteSupport
from podracer.search import SearchConfig
from podracer.search import search

MUZERO_TORSOS = ("auto", "mlp", "nature_cnn", "impala_resnet")


@dataclasses.dataclass(frozen=True)
class MuZeroConfig:
    learning_rate: float = 1e-3
    gamma: float = 0.99
    num_unroll_steps: int = 5  # K
    td_steps: int = 10  # n of the n-step value targets
    # What n-step value targets bootstrap from: "network" (the value head on the
    # observation, current params, no gradient) or "search" (the acting search's root value).
    value_bootstrap: str = "search"
    # Gumbel MuZero; 8 simulations suffice for few actions (see the module doc).
    search: SearchConfig = SearchConfig(policy="gumbel", num_simulations=8)
    # Scaled supports (h(x) space): |value| up to ~110, |reward| up to ~35.
    value_support: DiscreteSupport = DiscreteSupport(-10.0, 10.0, 51, scaled=True)
    reward_support: DiscreteSupport = DiscreteSupport(-5.0, 5.0, 21, scaled=True)
    # auto (mlp for vectors, impala_resnet for uint8 frames) | mlp | nature_cnn |
    # impala_resnet. The Nature CNN costs ~6x less than the ResNet per frame: for CPU runs.
    torso: str = "auto"
    torso_hidden_sizes: tuple[int, ...] = (64,)  # mlp torso only
    latent_size: int = 64
    hidden_sizes: tuple[int, ...] = (128, 128)  # dynamics and prediction MLPs
    value_cost: float = 0.5
    reward_cost: float = 1.0
    policy_cost: float = 1.0
    max_grad_norm: float | None = 10.0
    # Acting: a uniformly random action with this probability (the search policy target is
    # unchanged). Keeps the model seeing every action where the search policy is sharp.
    exploration_epsilon: float = 0.1
    # Sequence replay (capacity 0: each trajectory is learned from once, as it arrives):
    # 2048 sequences (at 32 envs x 16 steps: the last 64 rollouts, ~35k steps), each rollout
    # followed by 2 updates on 32 sampled sequences (each sequence replayed ~2 times),
    # prioritised by value error with Schaul et al.'s proportional exponents (module doc).
    replay: ReplayConfig = ReplayConfig(
        capacity=2048,
        sequences_per_update=32,
        updates_per_rollout=2,
        priority_exponent=0.6,
        importance_exponent=0.4,
    )

    def __post_init__(self):
        check_positive(self, "learning_rate", "num_unroll_steps", "td_steps", "latent_size")
        check_range(self, "gamma", 0.0, 1.0)
        check_range(self, "exploration_epsilon", 0.0, 1.0)
        for name in ("num_unroll_steps", "td_steps", "latent_size"):
            if not isinstance(getattr(self, name), int):
                fail(self, name, "an int")
        for name in ("value_cost", "reward_cost", "policy_cost"):
            check_range(self, name, 0.0, float("inf"))
        check_choice(self, "torso", MUZERO_TORSOS)
        check_choice(self, "value_bootstrap", ("network", "search"))
        if not isinstance(self.replay, ReplayConfig):
            fail(self, "replay", "a podracer.agents.ReplayConfig")
        if not isinstance(self.search, SearchConfig):
            fail(self, "search", "a podracer.search.SearchConfig")
        for name in ("value_support", "reward_support"):
            if not isinstance(getattr(self, name), DiscreteSupport):
                fail(self, name, "a podracer.search.DiscreteSupport")
        for name in ("torso_hidden_sizes", "hidden_sizes"):
            sizes = getattr(self, name)
            if not isinstance(sizes, tuple) or not all(isinstance(s, int) and s > 0 for s in sizes):
                fail(self, name, "a tuple of positive ints")


def resolve_muzero_torso(kind: str, spec: EnvSpec) -> str:
    """`auto`: the IMPALA ResNet for uint8 frames `[C, H, W]`, an MLP otherwise."""
    if kind != "auto":
        return kind
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
    policy = trajectory.extras["policy"]  # [T+1, B, A]
    terminated = trajectory.timestep.terminated[1:]  # [T, B] transition t terminates
    in_episode = jnp.ones_like(bounds.cut)  # no episode end in transitions t..t+k-1
    after_termination = jnp.zeros_like(bounds.cut)  # the episode of t terminated before t+k
    uniform = 1.0 / policy.shape[-1]
    out = {k: [] for k in UnrollTargets._fields}
    for k in range(num_unroll_steps + 1):  # K is small and static
        absorbing = after_termination  # implies ~in_episode
        out["policy"].append(_window(policy, k, num_steps, uniform))
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


def make_muzero(
    spec: EnvSpec, config: MuZeroConfig = MuZeroConfig(), total_updates: int | None = None
) -> Agent:
    del total_updates  # constant learning rate
    net = MuZeroNetwork(
        num_actions=spec.num_actions,
        torso=resolve_muzero_torso(config.torso, spec),
        observation_ndim=len(spec.observation_shape),
        latent_size=config.latent_size,
        torso_hidden_sizes=config.torso_hidden_sizes,
        hidden_sizes=config.hidden_sizes,
        value_bins=config.value_support.num_bins,
        reward_bins=config.reward_support.num_bins,
    )
    model = make_model(net, config.value_support, config.reward_support, config.gamma)
    optimizer = make_optimizer(config.learning_rate, config.max_grad_norm)
    num_unroll = config.num_unroll_steps
    if config.search.policy == "gumbel":
        greedy_search = dataclasses.replace(config.search, gumbel_scale=0.0)
    else:
        greedy_search = dataclasses.replace(config.search, dirichlet_fraction=0.0, temperature=0.0)

    def init(key):
        obs = jnp.zeros((1, *spec.observation_shape), spec.observation_dtype)
        return net.init(key, obs, jnp.zeros((1,), jnp.int32))

    def act(params, key, observation):
        search_key, explore_key, action_key = jax.random.split(key, 3)
        out = search(params, search_key, model, observation, config.search)
        action = out.action
        if config.exploration_epsilon > 0:
            explore = jax.random.uniform(explore_key, action.shape) < config.exploration_epsilon
            uniform = jax.random.randint(action_key, action.shape, 0, spec.num_actions, jnp.int32)
            action = jnp.where(explore, uniform, action)
        return action, {"policy": out.action_weights, "root_value": out.root_value}

    def greedy_act(params, observation):
        # Deterministic search (no Gumbel noise / root noise): the key is unused.
        return search(params, jax.random.PRNGKey(0), model, observation, greedy_search).action

    def value_targets(params, trajectory: Trajectory):
        """Latents `[T+1, B, L]`, predicted values `[T+1, B]` and n-step targets `[T+1, B]`."""
        ts = trajectory.timestep
        bounds = returns.boundaries(ts, config.gamma)
        latents = net.apply(params, ts.observation, method=MuZeroNetwork.represent)  # [T+1, B, L]
        _, value_logits = net.apply(params, latents, method=MuZeroNetwork.predict)
        values = config.value_support.logits_to_scalar(value_logits)
        boot = trajectory.extras["root_value"] if config.value_bootstrap == "search" else values
        final_v = None
        if spec.can_truncate and ts.final_observation is not None:
            final_v = model.prediction(
                params, model.representation(params, ts.final_observation[1:])
            ).value
        v_t = jax.lax.stop_gradient(returns.bootstrap_values(boot, final_v, ts))
        g = n_step_returns(bounds.reward, bounds.discount, bounds.cut, v_t, config.td_steps)
        g = jnp.concatenate([g, jax.lax.stop_gradient(boot[-1:])], axis=0)  # state T: its own
        return latents, values, g, bounds

    def priority(params, trajectory: Trajectory):
        """Mean |value - n-step target| over each sequence's learnable positions: `[B]`."""
        _, values, g, bounds = value_targets(params, trajectory)
        mask = bounds.mask.astype(jnp.float32)
        error = jnp.abs(values[:-1] - g[:-1]) * mask
        return jnp.sum(error, axis=0) / jnp.maximum(jnp.sum(mask, axis=0), 1.0)

    def loss(params, trajectory: Trajectory, key: chex.PRNGKey):
        del key
        root_value = trajectory.extras["root_value"]  # [T+1, B]
        latents, _, g, bounds = value_targets(params, trajectory)
        targets = jax.lax.stop_gradient(unroll_targets(trajectory, g, bounds, num_unroll))

        latent = latents[:-1]
        value_ce, policy_ce, reward_ce = [], [], []
        for k in range(num_unroll + 1):  # K is small and static
            policy_logits, value_logits = net.apply(params, latent, method=MuZeroNetwork.predict)
            value_ce.append(
                _cross_entropy(config.value_support.scalar_to_probs(targets.value[k]), value_logits)
            )
            policy_ce.append(_cross_entropy(targets.policy[k], policy_logits))
            if k == num_unroll:
                break
            reward_logits, latent = net.apply(
                params, latent, targets.action[k], method=MuZeroNetwork.dynamics
            )
            reward_ce.append(
                _cross_entropy(
                    config.reward_support.scalar_to_probs(targets.reward[k]), reward_logits
                )
            )
            latent = scale_gradient(latent, 0.5)

        # Sum over unroll steps (step 0 weight 1, unrolled steps 1/K), mean over positions;
        # replayed sequences are weighted by their importance weights (prioritised replay).
        count = jnp.maximum(jnp.sum(bounds.mask.astype(jnp.float32)), 1.0)
        step_weight = jnp.array([1.0] + [1.0 / num_unroll] * num_unroll)[:, None, None]
        sequence_weight = trajectory.extras.get("replay_weight")
        sequence_weight = 1.0 if sequence_weight is None else sequence_weight[None, :-1]

        def weighted(ce, mask, weight):
            weight = weight * sequence_weight
            return jnp.sum(jnp.stack(ce) * mask.astype(jnp.float32) * weight) / count

        value_loss = weighted(value_ce, targets.value_mask, step_weight)
        policy_loss = weighted(policy_ce, targets.policy_mask, step_weight)
        reward_loss = weighted(reward_ce, targets.reward_mask, 1.0 / num_unroll)
        total = (
            config.value_cost * value_loss
            + config.policy_cost * policy_loss
            + config.reward_cost * reward_loss
        )
        metrics = {
            "losses/value": value_loss,
            "losses/policy": policy_loss,
            "losses/reward": reward_loss,
            "agent/root_value_mean": masked_mean(root_value[:-1], bounds.mask),
            "agent/value_target_mean": masked_mean(g[:-1], bounds.mask),
            "agent/search_policy_entropy": masked_mean(
                categorical_entropy(jnp.log(jnp.maximum(trajectory.extras["policy"][:-1], 1e-30))),
                bounds.mask,
            ),
        }
        return total, metrics

    return Agent(
        name="muzero",
        spec=spec,
        config=config,
        init=init,
        act=act,
        greedy_act=greedy_act,
        loss=loss,
        optimizer=optimizer,
        update=sgd_update(loss, optimizer),
        replay=config.replay if config.replay.enabled else None,
        priority=priority,
    )
