"""How MuZero acts: a search from every observation, its exploration fading over the run.

`acting` gives `make_muzero` its `(act, greedy_act)`. On discrete actions `act` runs
`podracer.search.search` and takes its action, a uniformly random one at
`exploration_epsilon`; in an action box (Sampled MuZero, `num_action_samples`) it runs
`podracer.search.sampled_search` over draws u of the Gaussian prior, and the env receives
the box's affine image of tanh(u) (a uniform draw in the box at `exploration_epsilon`).
`extras` carry what the learner's targets need: the search policy `"policy"` `[B, A]`
(in a box over the N samples, themselves `"sampled_actions"` `[B, N, D]`) and the search
value `"root_value"` `[B]`. The exploration (the random actions and the search's own noise:
Gumbel noise, or PUCT's root noise and visit temperature) may fade over the run's updates
(`exploration_fade`, to `exploration_final` of itself; `exploration_left`). `greedy_act`,
for evaluation, is the same search without its noise.

Its own module, apart from `podracer.agents.muzero` (the network, the targets and the
loss, which imports it to build the agent): acting reads the network only through the
search's model, and nothing here depends on how it learns.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp

from podracer.agents.configs import MuZeroConfig
from podracer.agents.hyper import Hyperparams
from podracer.agents.hyper import is_zero
from podracer.agents.muzero_networks import MuZeroNetwork
from podracer.agents.muzero_networks import make_sampled_model
from podracer.agents.policy import tanh_squash
from podracer.envs import EnvSpec
from podracer.search import MuZeroModel
from podracer.search import SearchConfig
from podracer.search import sampled_search
from podracer.search import search

# The search's own exploration, by policy: what acting's schedule lowers and the greedy
# search turns off.
_SEARCH_NOISE = {"gumbel": ("gumbel_scale",), "muzero": ("dirichlet_fraction", "temperature")}


def exploration_left(hp: Hyperparams, step: Any, total_updates: int | None) -> chex.Array | None:
    """The share of acting's exploration left at update `step`: 1 falling linearly to
    `exploration_final` over the first `exploration_fade` of `total_updates`, then
    constant; None where it stays 1 (no fade, or the run's length unknown). Written out
    like `novelty.faded_weight`: a sweep traces `exploration_fade`."""
    if is_zero(hp.exploration_fade) or total_updates is None:
        return None
    fade = jnp.asarray(hp.exploration_fade, jnp.float32)
    horizon = jnp.maximum(fade * total_updates, 1.0)
    left = jnp.clip(1.0 - jnp.asarray(step, jnp.float32) / horizon, 0.0, 1.0)
    final = jnp.asarray(hp.exploration_final, jnp.float32)
    return jnp.where(fade > 0, final + (1.0 - final) * left, 1.0)


def _exploration(config: MuZeroConfig, hp: Hyperparams, total_updates: int | None):
    """`explore(step) -> (epsilon, swept search numbers)` of acting at update `step`: the
    member's own, their noise scaled by `exploration_left`."""
    swept = hp.search.values()
    noise = _SEARCH_NOISE[config.search.policy]

    def explore(step):
        left = exploration_left(hp, step, total_updates)
        if left is None:
            return hp.exploration_epsilon, swept
        scaled = {k: swept.get(k, getattr(config.search, k)) * left for k in noise}
        return hp.exploration_epsilon * left, {**swept, **scaled}

    return explore


def _discrete_acting(
    spec: EnvSpec, config: MuZeroConfig, hp: Hyperparams, model: MuZeroModel, greedy: _Greedy,
    explore,
):  # fmt: skip
    """`(act, greedy_act)` of MuZero on discrete actions: the search's action, a uniformly
    random one at `exploration_epsilon`; greedy: the search without its noise."""

    def act(params, key, observation, step=0, core=None, first=None):
        del core, first  # feed-forward
        epsilon, swept = explore(step)
        search_key, explore_key, action_key = jax.random.split(key, 3)
        out = search(params, search_key, model, observation, config.search, swept=swept)
        action = out.action
        if not is_zero(epsilon):
            explore_draw = jax.random.uniform(explore_key, action.shape)
            uniform = jax.random.randint(action_key, action.shape, 0, spec.num_actions, jnp.int32)
            action = jnp.where(explore_draw < epsilon, uniform, action)
        return action, {"policy": out.action_weights, "root_value": out.root_value}, ()

    def greedy_act(params, observation, core=None, first=None):
        del core, first  # feed-forward
        # Deterministic search (no Gumbel noise / root noise): the key is unused.
        key = jax.random.PRNGKey(0)
        out = search(params, key, model, observation, greedy.config, swept=greedy.swept)
        return out.action, ()

    return act, greedy_act


def _sampled_acting(
    spec: EnvSpec, config: MuZeroConfig, hp: Hyperparams, net: MuZeroNetwork, greedy: _Greedy,
    explore,
):  # fmt: skip
    """`(act, greedy_act)` of Sampled MuZero on a bounded box: the search over sampled
    pre-squash actions u, the env given tanh(u) scaled into the box."""
    low, high = spec.action_bounds()  # finite (EnvSpec checks)
    sampled_model = make_sampled_model(net, config.value_support, config.reward_support, hp.gamma)
    num_samples = config.num_action_samples

    def to_env(u):  # [B, D] -> [B, *action_shape] in the box
        return tanh_squash(u, low.reshape(-1), high.reshape(-1)).reshape(
            u.shape[0], *spec.action_shape
        )

    def act(params, key, observation, step=0, core=None, first=None):
        del core, first  # feed-forward
        epsilon, swept = explore(step)
        search_key, explore_key, action_key = jax.random.split(key, 3)
        out = sampled_search(
            params, search_key, sampled_model, observation, config.search, num_samples,
            swept=swept,
        )  # fmt: skip
        action = to_env(out.action)
        if not is_zero(epsilon):
            explore_draw = jax.random.uniform(explore_key, action.shape[:1])
            explore_draw = explore_draw.reshape(-1, *[1] * len(spec.action_shape))
            uniform = jax.random.uniform(
                action_key, action.shape, minval=low[None], maxval=high[None]
            )
            action = jnp.where(explore_draw < epsilon, uniform, action)
        extras = {
            "policy": out.search.action_weights,
            "root_value": out.search.root_value,
            "sampled_actions": out.samples,
        }
        return action, extras, ()

    def greedy_act(params, observation, core=None, first=None):
        del core, first  # feed-forward
        # Deterministic search from a fixed key; the root's first sample is the
        # prior's mean (its mode), so the search can always settle on it.
        key = jax.random.PRNGKey(0)
        root_key, search_key = jax.random.split(key)
        latent = sampled_model.representation(params, observation)
        prior, _ = sampled_model.prediction(params, latent)
        samples = sampled_model.sample(root_key, prior, num_samples)
        samples = samples.at[:, 0].set(prior.mean)
        out = sampled_search(
            params, search_key, sampled_model, observation, greedy.config, num_samples,
            root_samples=samples, swept=greedy.swept,
        )  # fmt: skip
        return to_env(out.action), ()

    return act, greedy_act


def acting(
    spec: EnvSpec, config: MuZeroConfig, hp: Hyperparams, net, model, total_updates: int | None
):
    """`(act, greedy_act)` for the env's actions: MuZero's search over discrete actions,
    Sampled MuZero's over pre-squash Gaussian draws u in a box (the env gets tanh(u))."""
    greedy = _greedy(config.search, hp.search.values())
    explore = _exploration(config, hp, total_updates)
    if spec.is_discrete:
        return _discrete_acting(spec, config, hp, model, greedy, explore)
    return _sampled_acting(spec, config, hp, net, greedy, explore)


class _Greedy(NamedTuple):
    """The evaluation search: its config and a member's swept numbers it keeps."""

    config: SearchConfig
    swept: dict[str, Any]


def _greedy(search: SearchConfig, swept: Mapping[str, Any]) -> _Greedy:
    """The search without its exploration: no Gumbel noise, or no root noise and the most
    visited action, whatever a member explores with (its other swept numbers kept)."""
    noise = dict.fromkeys(_SEARCH_NOISE[search.policy], 0.0)
    kept = {k: v for k, v in swept.items() if k not in noise}
    return _Greedy(dataclasses.replace(search, **noise), kept)
