"""MuZero's three networks in one flax module, and their glue to `podracer.search`.

* representation: observation -> latent `[..., L]` (MLP torso for vectors, the IMPALA
  ResNet for frames), normalised per example: min-max scaled to [0, 1] (MuZero appendix
  G) or layer-normalised to zero mean and unit variance (`latent_norm`);
* dynamics: (latent, one-hot action) -> (reward logits `[..., R]`, next latent `[..., L]`);
* prediction: latent -> (policy logits `[..., A]`, value logits `[..., V]`);
* with `consistency`, EfficientZero's SimSiam heads (Ye et al., 2021): a projection of a
  latent and a predictor on the projection, for the loss that pulls each unrolled latent
  towards the representation of the observation it stands for.

For continuous actions (`num_actions=None`, Sampled MuZero) dynamics takes the action as
a vector `[..., D]` scaled to [-1, 1], and the policy is a diagonal Gaussian over
pre-squash actions: prediction returns its mean and log-std `[..., 2, D]`.

Values and rewards are categorical over a `DiscreteSupport`; `make_model` decodes them to
scalars for search. Latents are flat vectors even for frames: the ResNet torso ends in a
dense layer, which keeps dynamics an MLP (simpler than MuZero's spatial latents, and
enough for the small frame tasks this package targets).
"""

from __future__ import annotations

from collections.abc import Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from podracer.agents.configs import LatentNorm
from podracer.agents.networks import MLP
from podracer.agents.networks import Torso
from podracer.agents.policy import Gaussian
from podracer.search import DiscreteSupport
from podracer.search import DynamicsOutput
from podracer.search import MuZeroModel
from podracer.search import PredictionOutput
from podracer.search import SampledMuZeroModel
from podracer.search import logits_to_scalar


def normalize_latent(x: jax.Array, kind: LatentNorm = "min_max") -> jax.Array:
    """Each latent `[..., L]` min-max scaled to [0, 1] (MuZero, appendix G) or, with
    `kind="layer_norm"`, to zero mean and unit variance (no learnt scale or bias).

    Both keep the latent's scale fixed where dynamics feeds it back to itself. Min-max
    pins two units of every latent at 0 and 1 and takes its scale from those two; layer
    norm takes it from all of them. On Breakout-MinAtar the layer norm doubled MuZero's
    return at 3e6 steps (`benchmarks/results/muzero_tuning.md`).
    """
    if kind == "layer_norm":
        mean = jnp.mean(x, axis=-1, keepdims=True)
        return (x - mean) * jax.lax.rsqrt(jnp.var(x, axis=-1, keepdims=True) + 1e-5)
    low = jnp.min(x, axis=-1, keepdims=True)
    high = jnp.max(x, axis=-1, keepdims=True)
    return (x - low) / jnp.maximum(high - low, 1e-8)


def scale_gradient(x: jax.Array, scale: float) -> jax.Array:
    """Identity forward; multiplies the gradient by `scale` (MuZero: 0.5 per dynamics step)."""
    return x * scale + jax.lax.stop_gradient(x) * (1.0 - scale)


class MuZeroNetwork(nn.Module):
    """Representation, dynamics and prediction; call a method with `apply(..., method=)`."""

    num_actions: int | None  # None: continuous actions, a vector of `action_size`
    torso: str  # "mlp", "nature_cnn" or "impala_resnet" (resolved, not "auto")
    observation_ndim: int
    latent_size: int = 64
    torso_hidden_sizes: Sequence[int] = (64,)
    hidden_sizes: Sequence[int] = (64,)  # dynamics and prediction MLPs
    value_bins: int = 51
    reward_bins: int = 21
    action_size: int = 0  # continuous only: D, the flattened action's size
    latent_norm: LatentNorm = "min_max"  # for representation and dynamics
    consistency: bool = False  # the projection and predictor heads (only when trained)

    def setup(self):
        self.encoder = Torso(self.torso, self.observation_ndim, self.torso_hidden_sizes, "relu")
        self.encoder_out = nn.Dense(self.latent_size)
        self.dynamics_mlp = MLP(self.hidden_sizes, "relu")
        self.dynamics_out = nn.Dense(self.latent_size)
        # Zero heads: a uniform prior and value/reward decoding to the support's middle.
        zeros = nn.initializers.zeros_init()
        self.reward_head = nn.Dense(self.reward_bins, kernel_init=zeros)
        self.prediction_mlp = MLP(self.hidden_sizes, "relu")
        # Continuous: mean and log-std per action dim (zeros: N(0, 1) before the squash).
        policy_size = self.num_actions or 2 * self.action_size
        self.policy_head = nn.Dense(policy_size, kernel_init=zeros)
        self.value_head = nn.Dense(self.value_bins, kernel_init=zeros)
        if self.consistency:
            # EfficientZero's sizes, scaled down: LayerNorm where it has BatchNorm.
            width = self.hidden_sizes[-1] if self.hidden_sizes else self.latent_size
            self.projection_mlp = MLP((width,), "relu", layer_norm=True)
            self.projection_out = nn.Dense(self.latent_size)
            self.predictor_mlp = MLP((width,), "relu", layer_norm=True)
            self.predictor_out = nn.Dense(self.latent_size)

    def __call__(self, observation: jax.Array, action: jax.Array):
        """Touches every layer (for `init`): one representation, prediction, dynamics (and
        the consistency heads)."""
        latent = self.represent(observation)
        if self.consistency:
            self.predict_projection(self.project(latent))
        return self.predict(latent), self.dynamics(latent, action)

    def represent(self, observation: jax.Array) -> jax.Array:
        """`[..., *obs_shape]` -> latent `[..., L]`."""
        return normalize_latent(self.encoder_out(self.encoder(observation)), self.latent_norm)

    def dynamics(self, latent: jax.Array, action: jax.Array) -> tuple[jax.Array, jax.Array]:
        """(latent `[..., L]`, action `[...]` int or `[..., D]` in [-1, 1]) -> (reward logits
        `[..., R]`, next latent)."""
        if self.num_actions is None:
            encoded = action.astype(latent.dtype)
        else:
            encoded = jax.nn.one_hot(action, self.num_actions, dtype=latent.dtype)
        h = self.dynamics_mlp(jnp.concatenate([latent, encoded], axis=-1))
        return self.reward_head(h), normalize_latent(self.dynamics_out(h), self.latent_norm)

    def predict(self, latent: jax.Array) -> tuple[jax.Array, jax.Array]:
        """latent `[..., L]` -> (policy logits `[..., A]` or Gaussian `[..., 2, D]`, value
        logits `[..., V]`)."""
        h = self.prediction_mlp(latent)
        policy = self.policy_head(h)
        if self.num_actions is None:
            policy = policy.reshape(*policy.shape[:-1], 2, self.action_size)
        return policy, self.value_head(h)

    def project(self, latent: jax.Array) -> jax.Array:
        """latent `[..., L]` -> its projection `[..., L]` (consistency only)."""
        return self.projection_out(self.projection_mlp(latent))

    def predict_projection(self, projection: jax.Array) -> jax.Array:
        """The predictor on a projection, applied to the unrolled branch only (SimSiam)."""
        return self.predictor_out(self.predictor_mlp(projection))


def make_model(
    net: MuZeroNetwork,
    value_support: DiscreteSupport,
    reward_support: DiscreteSupport,
    gamma: float,
) -> MuZeroModel:
    """The `podracer.search.MuZeroModel` of `net`: categorical heads decoded to scalars.

    The model's discount is always `gamma`: terminal states are represented only through
    learned values and rewards (0 past a termination), as in MuZero.
    """

    def representation(params, observation):
        return net.apply(params, observation, method=MuZeroNetwork.represent)

    def dynamics(params, latent, action):
        reward_logits, next_latent = net.apply(
            params, latent, action, method=MuZeroNetwork.dynamics
        )
        reward = logits_to_scalar(reward_support, reward_logits)
        return DynamicsOutput(reward, jnp.full_like(reward, gamma), next_latent)

    def prediction(params, latent):
        logits, value_logits = net.apply(params, latent, method=MuZeroNetwork.predict)
        return PredictionOutput(logits, logits_to_scalar(value_support, value_logits))

    return MuZeroModel(representation, dynamics, prediction)


LOG_STD_RANGE = (-5.0, 2.0)  # the prior's log-std, clipped: no collapse to a point, no blow-up


def gaussian_prior(policy: jax.Array) -> Gaussian:
    """The continuous policy head's output `[..., 2, D]` as a Gaussian over pre-squash
    actions, its log-std clipped to `LOG_STD_RANGE`."""
    return Gaussian(policy[..., 0, :], jnp.clip(policy[..., 1, :], *LOG_STD_RANGE))


def make_sampled_model(
    net: MuZeroNetwork,
    value_support: DiscreteSupport,
    reward_support: DiscreteSupport,
    gamma: float,
) -> SampledMuZeroModel:
    """The `podracer.search.SampledMuZeroModel` of a continuous-action `net`: actions are
    pre-squash Gaussian draws u `[B, D]`; dynamics sees tanh(u), the action scaled to the
    box as [-1, 1] (the env receives the box's affine image of it)."""
    model = make_model(net, value_support, reward_support, gamma)

    def dynamics(params, latent, u):
        return model.dynamics(params, latent, jnp.tanh(u))

    def prediction(params, latent):
        policy, value = model.prediction(params, latent)
        return gaussian_prior(policy), value

    def sample(key, prior: Gaussian, num_samples: int):
        noise = jax.random.normal(key, (prior.mean.shape[0], num_samples, prior.mean.shape[-1]))
        return prior.mean[:, None] + jnp.exp(prior.log_std)[:, None] * noise

    return SampledMuZeroModel(model.representation, dynamics, prediction, sample)
