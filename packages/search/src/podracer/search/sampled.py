"""Sampled MuZero (Hubert et al., 2021): search over actions sampled from the prior.

For action spaces too large to enumerate (continuous boxes), every node of the tree
considers `num_samples` actions drawn from the model's policy prior at that node, and the
search treats them as a discrete action set: mctx's actions are indices into the node's
samples, which the tree keeps in each node's embedding beside the latent.

With proposals drawn from the prior itself (beta = pi), Sampled MuZero's sample-based
prior `(beta_hat / beta) pi` is the empirical distribution `beta_hat` of the samples:
uniform over them (continuous samples are distinct). So every node's prior logits are
zeros over its samples, and mctx runs unchanged: Gumbel MuZero draws the root's
considered samples without replacement, PUCT explores them with a uniform prior. The
policy target (`action_weights`) is over the root's samples; the learner fits the
prior to it with `-sum_k w_k log pi(a_k)` (Sampled MuZero's sample-based policy loss).

The model is MuZero's three functions plus a sampler; the prior is whatever pytree
`prediction` returns and `sample` understands (e.g. a Gaussian's mean and log-std).
Actions are sampled in whatever space `dynamics` takes (e.g. pre-squash Gaussian draws):
the caller maps the chosen sample to the env's action.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from typing import Any
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import mctx

from podracer.search.config import SearchConfig
from podracer.search.model import DynamicsFn
from podracer.search.model import Params
from podracer.search.model import RepresentationFn
from podracer.search.policies import SearchOutput
from podracer.search.policies import run_policy

Prior = Any  # a pytree of [B, ...] arrays: the model's policy prior at a batch of latents
# (params, latent) -> (prior, value[B])
SampledPredictionFn = Callable[[Params, Any], tuple[Prior, chex.Array]]
# (key, prior, num_samples) -> actions [B, num_samples, *action_shape]
SampleFn = Callable[[chex.PRNGKey, Prior, int], chex.Array]


class SampledMuZeroModel(NamedTuple):
    """A learned model for Sampled MuZero: MuZero's functions with a prior to sample from.

    `dynamics` takes a batch of sampled actions `[B, *action_shape]`; `prediction`
    returns the prior (any pytree `sample` reads) and the scalar value `[B]`.
    """

    representation: RepresentationFn  # (params, observation[B, ...]) -> latent[B, ...]
    dynamics: DynamicsFn  # (params, latent, action[B, ...]) -> (reward, discount, latent)
    prediction: SampledPredictionFn  # (params, latent) -> (prior, value[B])
    sample: SampleFn  # (key, prior, K) -> actions [B, K, *action_shape]


class SampledSearchOutput(NamedTuple):
    """One sampled search over a batch of roots; per-sample fields index the root's samples."""

    action: chex.Array  # [B, *action_shape] the chosen sample
    samples: chex.Array  # [B, K, *action_shape] the root's sampled actions
    search: SearchOutput  # action (index into samples) [B], action_weights [B, K] ...


class _Node(NamedTuple):
    """A node's embedding in the tree: its latent and the actions sampled there."""

    latent: Any  # [B, ...]
    samples: chex.Array  # [B, K, *action_shape]


def _take(samples: chex.Array, index: chex.Array) -> chex.Array:
    """`samples[b, index[b]]` for each b: `[B, K, ...]`, `[B]` -> `[B, ...]`."""
    return jnp.take_along_axis(
        samples, index.reshape((-1,) + (1,) * (samples.ndim - 1)), axis=1
    ).squeeze(1)


def sampled_search(
    params: Params,
    key: chex.PRNGKey,
    model: SampledMuZeroModel,
    observation: chex.ArrayTree,
    config: SearchConfig,
    num_samples: int,
    root_samples: chex.Array | None = None,
    swept: Mapping[str, Any] | None = None,
) -> SampledSearchOutput:
    """Plans from a batch of observations `[B, ...]` over `num_samples` sampled actions
    per node. Jit with `model`, `config` and `num_samples` static (all hashable).

    `root_samples` `[B, K, ...]`, when given, replace the root's draws (e.g. to include
    the prior's mode in a deterministic evaluation search); the rest of the tree samples.
    `swept`: a member's values of the search's numbers (`run_policy`'s).
    """
    root_key, search_key = jax.random.split(key)
    latent = model.representation(params, observation)
    prior, value = model.prediction(params, latent)
    samples = model.sample(root_key, prior, num_samples) if root_samples is None else root_samples
    chex.assert_axis_dimension(samples, 1, num_samples)
    root = mctx.RootFnOutput(
        prior_logits=jnp.zeros(value.shape + (num_samples,), value.dtype),
        value=value,
        embedding=_Node(latent, samples),
    )

    def recurrent_fn(params, rng_key, index, node: _Node):
        action = _take(node.samples, index)
        reward, discount, next_latent = model.dynamics(params, node.latent, action)
        next_prior, next_value = model.prediction(params, next_latent)
        next_samples = model.sample(rng_key, next_prior, num_samples)
        output = mctx.RecurrentFnOutput(
            reward=reward,
            discount=discount,
            prior_logits=jnp.zeros(next_value.shape + (num_samples,), next_value.dtype),
            value=next_value,
        )
        return output, _Node(next_latent, next_samples)

    out = run_policy(params, search_key, root, recurrent_fn, config, swept=swept)
    return SampledSearchOutput(action=_take(samples, out.action), samples=samples, search=out)
