"""Small trajectories with episode ends at known places, shared by the agents tests.

Two reset conventions occur (see `podracer.envs.types`):

* JaxEnv same-step reset: the timestep that ends an episode is also `first`; its
  `observation` starts the next episode and `final_observation` is the last one of the
  finished episode.
* envpool next-step reset: the done timestep shows the last observation itself
  (`final_observation` is None) and the next timestep is a *dummy*: `first`, not done,
  reward 0, reached by an action the environment ignored.
"""

import types

import jax.numpy as jnp
import numpy as np
import pytest

from podracer.agents import MuZeroConfig
from podracer.agents import Trajectory
from podracer.envs import EnvSpec
from podracer.envs import TimeStep
from podracer.search import DiscreteSupport
from podracer.search import SearchConfig

# Tiny specs: flat float features that can truncate, and Atari-like uint8 frames.
VECTOR_SPEC = EnvSpec("probe", (3,), "float32", 2, max_episode_steps=10)
FRAMES_SPEC = EnvSpec("frames", (4, 84, 84), "uint8", 4, max_episode_steps=100)


def make_timestep(
    reward,
    terminated=None,
    truncated=None,
    first=None,
    observation=None,
    final_observation="same",
    obs_shape=(3,),
    seed=0,
) -> TimeStep:
    """A `[T+1, B]` TimeStep from `[T+1, B]` lists; observations random unless given.

    `final_observation="same"` copies `observation` and then gives fresh random values
    to the truncated steps (a JaxEnv's same-step reset); pass None for envpool's layout.
    """
    reward = np.asarray(reward, np.float32)
    shape = reward.shape
    zeros = np.zeros(shape, bool)
    terminated = zeros if terminated is None else np.asarray(terminated, bool)
    truncated = zeros if truncated is None else np.asarray(truncated, bool)
    if first is None:  # JaxEnv convention: episodes start at t=0 and wherever one ended
        first = terminated | truncated
        first[0] = True
    first = np.asarray(first, bool)
    rng = np.random.default_rng(seed)
    if observation is None:
        observation = rng.normal(size=shape + tuple(obs_shape)).astype(np.float32)
    if isinstance(final_observation, str):
        final_observation = observation.copy()
        ends = terminated | truncated
        final_observation[ends] = rng.normal(size=final_observation[ends].shape).astype(
            final_observation.dtype
        )
    return TimeStep(
        observation=jnp.asarray(observation),
        reward=jnp.asarray(reward),
        terminated=jnp.asarray(terminated),
        truncated=jnp.asarray(truncated),
        first=jnp.asarray(first),
        final_observation=None if final_observation is None else jnp.asarray(final_observation),
        episode_return=jnp.zeros(shape, jnp.float32),
        episode_length=jnp.zeros(shape, jnp.int32),
    )


def random_trajectory(
    spec: EnvSpec, num_steps: int, batch: int, seed: int = 0, extras=None, layout: str = "jax"
):
    """`[T+1, B]` random observations and actions; column 0 terminates at step 1.

    layout "jax": the last column is truncated at the last step with a differing
    `final_observation` (same-step reset). layout "envpool": step 2 of column 0 is the
    dummy reset transition's target and `final_observation` is None.
    """
    rng = np.random.default_rng(seed)
    shape = (num_steps + 1, batch)
    if spec.observation_dtype == "uint8":
        observation = rng.integers(0, 256, size=shape + spec.observation_shape, dtype=np.uint8)
    else:
        observation = rng.normal(size=shape + spec.observation_shape).astype(np.float32)
    terminated = np.zeros(shape, bool)
    truncated = np.zeros(shape, bool)
    terminated[1, 0] = True
    if layout == "jax":
        truncated[num_steps, -1] = True
        final_observation = observation.copy()
        final_observation[num_steps, -1] = observation[0, 0]  # anything that differs
        first = None
    else:
        final_observation = None
        first = np.zeros(shape, bool)
        first[0] = first[2, 0] = True
    ts = make_timestep(
        rng.normal(size=shape),
        terminated,
        truncated,
        first,
        observation=observation,
        final_observation=final_observation,
    )
    action = jnp.asarray(rng.integers(0, spec.num_actions, size=shape), jnp.int32)
    return Trajectory(ts, action, {} if extras is None else extras)


# MuZero at the size its unit tests need (the MuZero and Sampled MuZero files share it).
MUZERO_SMALL = MuZeroConfig(
    num_unroll_steps=3,
    td_steps=3,
    gamma=0.9,
    search=SearchConfig(policy="muzero", num_simulations=4),
    value_support=DiscreteSupport(-3.0, 3.0, 13, scaled=True),
    reward_support=DiscreteSupport(-2.0, 2.0, 9, scaled=True),
    torso_hidden_sizes=(8,),
    latent_size=8,
    hidden_sizes=(8,),
    value_bootstrap="network",  # learnable targets (the default bootstraps fixed search values)
    learning_rate=3e-3,  # fast enough for test_update_lowers_the_loss's 30 steps
)


# Test modules cannot import this file under --import-mode=importlib: fixtures hand out
# the helpers instead.
@pytest.fixture(scope="session")
def vector_spec() -> EnvSpec:
    return VECTOR_SPEC


@pytest.fixture(scope="session")
def frames_spec() -> EnvSpec:
    return FRAMES_SPEC


@pytest.fixture(scope="session")
def muzero_small() -> MuZeroConfig:
    return MUZERO_SMALL


@pytest.fixture(scope="session", name="make_timestep")
def make_timestep_fixture():
    return make_timestep


@pytest.fixture(scope="session", name="random_trajectory")
def random_trajectory_fixture():
    return random_trajectory


# --- References: plain Python loops over one sequence, independent of rlax. -------------


def ref_bookkeeping(ts, values, final_values, gamma):
    """Per-transition reward, discount, cut, mask and bootstrap value `[T, B]` (numpy)."""
    term = np.asarray(ts.terminated)[1:]
    trunc = np.asarray(ts.truncated)[1:]
    first = np.asarray(ts.first)[1:]
    values = np.asarray(values, np.float64)
    v_boot = values[1:].copy()
    if final_values is not None:
        v_boot[trunc] = np.asarray(final_values, np.float64)[trunc]
    return dict(
        r=np.asarray(ts.reward, np.float64)[1:],
        disc=gamma * (1.0 - term),
        cut=term | trunc,
        mask=~(first & ~term & ~trunc),
        v=values[:-1],
        v_boot=v_boot,
    )


def ref_gae(b, lambda_):
    """PureJaxRL-style GAE loop; the trace stops at any episode end."""
    num_steps, batch = b["r"].shape
    adv = np.zeros((num_steps, batch))
    for j in range(batch):
        gae = 0.0
        for t in reversed(range(num_steps)):
            delta = b["r"][t, j] + b["disc"][t, j] * b["v_boot"][t, j] - b["v"][t, j]
            gae = delta + b["disc"][t, j] * lambda_ * (1.0 - b["cut"][t, j]) * gae
            adv[t, j] = gae
    return adv


def ref_vtrace(b, rho, lambda_, rho_bar=1.0, pg_rho_bar=1.0):
    """V-trace by its definition (Espeholt et al., 2018, eq. 1) as an explicit sum.

    v_s = V(x_s) + sum_{t>=s} (prod_{i=s}^{t-1} discount_i c_i) rho_t delta_t, summed up to
    the first episode end; the pg advantage is rho_s (r_s + discount_s v_{s+1} - V(x_s))
    with v_{s+1} replaced by the bootstrap value at an episode end or the rollout's end.
    """
    num_steps, batch = b["r"].shape
    vs = np.zeros((num_steps, batch))
    adv = np.zeros((num_steps, batch))
    for j in range(batch):
        for s in range(num_steps):
            acc, coef = b["v"][s, j], 1.0
            for t in range(s, num_steps):
                delta = b["r"][t, j] + b["disc"][t, j] * b["v_boot"][t, j] - b["v"][t, j]
                acc += coef * min(rho_bar, rho[t, j]) * delta
                if b["cut"][t, j]:
                    break
                coef *= b["disc"][t, j] * lambda_ * min(1.0, rho[t, j])
            vs[s, j] = acc
        for s in range(num_steps):
            end = b["cut"][s, j] or s == num_steps - 1
            nxt = b["v_boot"][s, j] if end else vs[s + 1, j]
            adv[s, j] = min(pg_rho_bar, rho[s, j]) * (
                b["r"][s, j] + b["disc"][s, j] * nxt - b["v"][s, j]
            )
    return vs, adv


def ref_masked_mean(x, mask):
    return float(np.sum(np.where(mask, x, 0.0)) / max(np.sum(mask), 1))


def ref_log_softmax(logits):
    logits = np.asarray(logits, np.float64)
    z = logits - logits.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def ref_novelty(params, trajectory, observations, weight):
    """The novelty bonus by hand: `(trajectory, predictor_loss)`, the trajectory's rewards
    plus `weight` x each prediction error over the errors' running scale, and the
    predictor's loss (its masked mean error over the transitions)."""
    from podracer.agents import novelty

    ts = trajectory.timestep
    errors = novelty.prediction_errors(params, observations, 1)
    bonus = errors / np.sqrt(params[novelty.ERROR_KEY]["var"] + 1e-8)
    mask = np.asarray(ts.transition_mask[1:])
    predictor_loss = np.sum(np.asarray(errors[1:]) * mask) / mask.sum()
    with_bonus = ts._replace(reward=ts.reward + weight * bonus)
    return trajectory._replace(timestep=with_bonus), predictor_loss


def cheap_init(init, key, scale=0.05, seed=0):
    """Random-normal params shaped like `init(key)`'s, without running `init`.

    The Nature CNN's orthogonal init of its 3136x512 layer is a QR decomposition that
    takes seconds on a loaded CPU, and every new shape of `jax.random.normal` is another
    compile; tests of the loss plumbing need neither, so NumPy fills the shapes.
    """
    import jax

    rng = np.random.default_rng(seed)
    return jax.tree.map(
        lambda x: jnp.asarray(scale * rng.normal(size=x.shape), x.dtype), jax.eval_shape(init, key)
    )


@pytest.fixture(scope="session", name="cheap_init")
def cheap_init_fixture():
    return cheap_init


@pytest.fixture(scope="session")
def ref():
    """The reference implementations above, for test modules (which cannot import here)."""
    return types.SimpleNamespace(
        bookkeeping=ref_bookkeeping,
        gae=ref_gae,
        vtrace=ref_vtrace,
        masked_mean=ref_masked_mean,
        log_softmax=ref_log_softmax,
        novelty=ref_novelty,
    )
