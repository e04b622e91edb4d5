"""PPO and IMPALA on a continuous box: their losses against numpy and scipy with Gaussian
policies (clipped or tanh-squashed) and normalised observations and values, the first
ratio of on-policy data, and the statistics each update leaves in the params."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from podracer.agents import ImpalaConfig
from podracer.agents import PPOConfig
from podracer.agents import Trajectory
from podracer.agents import make_agent
from podracer.agents import make_impala
from podracer.agents import make_ppo
from podracer.agents.networks import GaussianActorCritic
from podracer.agents.normalization import STATS_KEY
from podracer.agents.normalization import VALUE_KEY
from podracer.agents.normalization import update_stats
from podracer.agents.validation import ConfigError
from podracer.envs import EnvSpec

T, B = 4, 2
# Observations (3,) like the shared `vector_spec`, and a box of 2 actions.
BOX = EnvSpec("box", (3,), "float32", None, max_episode_steps=10, action_shape=(2,),
              action_low=(-1.0, -0.5), action_high=(1.0, 2.0))  # fmt: skip
LOW, HIGH = (np.asarray(b, np.float64) for b in BOX.action_bounds())
# Non-trivial statistics, put into the params of agents that normalise.
OBS_STATS = {"mean": jnp.array([0.5, -1.0, 2.0]), "var": jnp.array([4.0, 0.25, 1.0]),
             "count": jnp.float32(100.0)}  # fmt: skip
VALUE_STATS = {"mean": jnp.float32(-3.0), "var": jnp.float32(9.0), "count": jnp.float32(100.0)}
COMMON = dict(torso="mlp", hidden_sizes=(8,), learning_rate=1e-2, gamma=0.9,
              normalize_observations=True, normalize_values=True, observation_clip=1.5)  # fmt: skip


def with_stats(params):
    return {**params, STATS_KEY: OBS_STATS, VALUE_KEY: VALUE_STATS}


def continuous_trajectory(random_trajectory, vector_spec, layout, extras, seed=0):
    """The shared random trajectory (episode ends in known places) with float actions."""
    traj = random_trajectory(vector_spec, T, B, layout=layout, extras=extras, seed=seed)
    rng = np.random.default_rng(seed + 1)
    return traj._replace(action=jnp.asarray(rng.normal(size=(T + 1, B, 2)), jnp.float32))


def behaviour_extras(squash, seed=5):
    rng = np.random.default_rng(seed)
    extras = {
        "log_prob": jnp.asarray(rng.normal(-2.0, 0.5, size=(T + 1, B)), jnp.float32),
        "value": jnp.asarray(rng.normal(-3.0, 2.0, size=(T + 1, B)), jnp.float32),
    }
    if squash == "tanh":
        extras["raw_action"] = jnp.asarray(rng.normal(size=(T + 1, B, 2)), jnp.float32)
    return extras


def reference_outputs(params, config, observation):
    """The network on normalised observations, numpy float64: mean, std, value (raw) and
    the value head's own output (normalised units)."""
    net = GaussianActorCritic((2,), "mlp", 1, config.hidden_sizes, config.activation,
                              config.separate_critic, config.log_std == "network")  # fmt: skip
    obs = (np.asarray(observation) - np.asarray(OBS_STATS["mean"])) / np.sqrt(
        np.asarray(OBS_STATS["var"]) + 1e-8
    )
    obs = np.clip(obs, -config.observation_clip, config.observation_clip)
    dist, head = net.apply({"params": params["params"]}, jnp.asarray(obs, jnp.float32))
    head = np.asarray(head, np.float64)
    scale = np.sqrt(float(VALUE_STATS["var"]) + 1e-8)
    f64 = lambda x: np.asarray(x, np.float64)  # noqa: E731
    return (
        f64(dist.mean),
        np.exp(f64(dist.log_std)),
        float(VALUE_STATS["mean"]) + scale * head,
        head,
    )


def reference_log_prob(mean, std, action, raw, squash):
    """log-density of the action the env received: the raw sample's (clip), or the raw
    sample's over the tanh squash's Jacobian."""
    if squash == "clip":
        return stats.norm.logpdf(action, mean, std).sum(-1)
    jacobian = (HIGH - LOW) / 2 * (1 - np.tanh(raw) ** 2)
    return (stats.norm.logpdf(raw, mean, std) - np.log(jacobian)).sum(-1)


def to_normalised(x):
    return (x - float(VALUE_STATS["mean"])) / np.sqrt(float(VALUE_STATS["var"]) + 1e-8)


@pytest.mark.parametrize("squash", ["clip", "tanh"])
@pytest.mark.parametrize("layout", ["jax", "envpool"])
def test_ppo_loss_matches_numpy(vector_spec, random_trajectory, ref, squash, layout):
    config = PPOConfig(**COMMON, squash=squash, log_std="network", entropy_cost=0.05)
    agent = make_ppo(BOX, config)
    params = with_stats(jax.jit(agent.init)(jax.random.key(1)))
    extras = behaviour_extras(squash)
    traj = continuous_trajectory(random_trajectory, vector_spec, layout, extras)
    ts, eps = traj.timestep, config.clip_eps

    final_v = None
    if ts.final_observation is not None:
        final_v = reference_outputs(params, config, ts.final_observation[1:])[2]
    b = ref.bookkeeping(ts, extras["value"], final_v, config.gamma)
    adv = ref.gae(b, config.lambda_)
    target = adv + b["v"]
    m = ref.masked_mean(adv, b["mask"])
    adv_n = (adv - m) / (np.sqrt(ref.masked_mean(np.square(adv - m), b["mask"])) + 1e-8)
    mean, std, _, head = reference_outputs(params, config, ts.observation[:-1])
    raw = np.asarray(extras["raw_action"][:-1], np.float64) if squash == "tanh" else None
    logp = reference_log_prob(mean, std, np.asarray(traj.action[:-1], np.float64), raw, squash)
    ratio = np.exp(logp - np.asarray(extras["log_prob"][:-1]))
    pg = ref.masked_mean(
        -np.minimum(ratio * adv_n, np.clip(ratio, 1 - eps, 1 + eps) * adv_n), b["mask"]
    )
    # The value loss in normalised units: head vs (target - mu) / sigma, clipped around
    # the behaviour value in the same units.
    v_b, target_n = to_normalised(b["v"]), to_normalised(target)
    clipped = v_b + np.clip(head - v_b, -eps, eps)
    value_loss = 0.5 * ref.masked_mean(
        np.maximum(np.square(head - target_n), np.square(clipped - target_n)), b["mask"]
    )
    entropy = ref.masked_mean(stats.norm.entropy(0.0, std).sum(-1), b["mask"])

    loss, metrics = jax.jit(agent.loss)(params, traj, jax.random.key(0))
    np.testing.assert_allclose(metrics["losses/policy"], pg, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(metrics["losses/value"], value_loss, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(metrics["losses/entropy"], entropy, rtol=1e-5)
    np.testing.assert_allclose(
        loss, pg + config.value_cost * value_loss - config.entropy_cost * entropy, rtol=1e-4
    )


@pytest.mark.parametrize("squash", ["clip", "tanh"])
@pytest.mark.parametrize("make", [make_ppo, make_impala])
def test_acting_stores_the_log_prob_of_the_action_taken(make, squash):
    config = (PPOConfig if make is make_ppo else ImpalaConfig)(**COMMON, squash=squash)
    agent = make(BOX, config)
    params = with_stats(jax.jit(agent.init)(jax.random.key(1)))
    obs = jnp.asarray(np.random.default_rng(3).normal(size=(64, 3)) * 3, jnp.float32)
    action, extras, _ = jax.jit(agent.act)(params, jax.random.key(2), obs)
    assert action.shape == (64, 2) and action.dtype == jnp.float32
    mean, std, value, _ = reference_outputs(params, config, obs)
    raw = np.asarray(extras.get("raw_action", action), np.float64)
    if squash == "clip":  # the raw sample itself, leaving the box at times (the env clips)
        assert "raw_action" not in extras
        assert np.any(np.asarray(action) < LOW) or np.any(np.asarray(action) > HIGH)
    else:
        np.testing.assert_allclose(action, LOW + (HIGH - LOW) * (np.tanh(raw) + 1) / 2, rtol=1e-5)
    expected = reference_log_prob(mean, std, np.asarray(action, np.float64), raw, squash)
    np.testing.assert_allclose(extras["log_prob"], expected, rtol=1e-5, atol=1e-5)
    if make is make_ppo:
        np.testing.assert_allclose(extras["value"], value, rtol=1e-5, atol=1e-5)
    greedy = np.asarray(agent.greedy_act(params, obs)[0], np.float64)
    if squash == "clip":
        np.testing.assert_allclose(greedy, np.clip(mean, LOW, HIGH), rtol=1e-6)
    else:
        squashed = LOW + (HIGH - LOW) * (np.tanh(mean) + 1) / 2
        np.testing.assert_allclose(greedy, squashed, rtol=1e-5, atol=1e-6)


def on_policy_trajectory(agent, params, make_timestep, key=0):
    """A [T+1, B] trajectory whose actions and extras come from `agent.act` itself."""
    ts = make_timestep(np.zeros((T + 1, B)), seed=key)
    ts = ts._replace(observation=ts.observation * 3.0)
    keys = jax.random.split(jax.random.key(key), T + 1)
    action, extras, _ = jax.vmap(lambda k, o: agent.act(params, k, o))(keys, ts.observation)
    return Trajectory(ts, action, extras)


@pytest.mark.parametrize("squash", ["clip", "tanh"])
def test_on_policy_ratios_are_one(make_timestep, squash):
    ppo = make_ppo(BOX, PPOConfig(**COMMON, squash=squash))
    params = with_stats(jax.jit(ppo.init)(jax.random.key(1)))
    _, metrics = jax.jit(ppo.loss)(params, on_policy_trajectory(ppo, params, make_timestep),
                                   jax.random.key(0))  # fmt: skip
    assert abs(float(metrics["agent/approx_kl"])) < 1e-6
    assert float(metrics["agent/clip_fraction"]) == 0.0
    impala = make_impala(BOX, ImpalaConfig(**COMMON, squash=squash))
    params = with_stats(jax.jit(impala.init)(jax.random.key(1)))
    _, metrics = jax.jit(impala.loss)(params, on_policy_trajectory(impala, params, make_timestep),
                                      jax.random.key(0))  # fmt: skip
    np.testing.assert_allclose(metrics["agent/rho_mean"], 1.0, rtol=1e-5)


def test_impala_loss_matches_numpy_vtrace(vector_spec, random_trajectory, ref):
    config = ImpalaConfig(**COMMON, squash="tanh", lambda_=0.8, clip_pg_rho_threshold=1.5)
    agent = make_impala(BOX, config)
    params = with_stats(jax.jit(agent.init)(jax.random.key(1)))
    extras = behaviour_extras("tanh")
    del extras["value"]
    traj = continuous_trajectory(random_trajectory, vector_spec, "jax", extras)
    ts = traj.timestep
    mean, std, values, head = reference_outputs(params, config, ts.observation)
    final_v = reference_outputs(params, config, ts.final_observation[1:])[2]
    b = ref.bookkeeping(ts, values, final_v, config.gamma)
    raw = np.asarray(extras["raw_action"][:-1], np.float64)
    logp = reference_log_prob(mean[:-1], std[:-1], None, raw, "tanh")
    rho = np.exp(logp - np.asarray(extras["log_prob"][:-1]))
    vs, adv = ref.vtrace(b, rho, config.lambda_, config.clip_rho_threshold,
                         config.clip_pg_rho_threshold)  # fmt: skip
    pg = -ref.masked_mean(logp * adv, b["mask"])
    baseline = 0.5 * ref.masked_mean(np.square(to_normalised(vs) - head[:-1]), b["mask"])
    entropy = ref.masked_mean(stats.norm.entropy(0.0, std[:-1]).sum(-1), b["mask"])

    _, metrics = jax.jit(agent.loss)(params, traj, jax.random.key(0))
    np.testing.assert_allclose(metrics["losses/policy"], pg, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(metrics["losses/value"], baseline, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(metrics["losses/entropy"], entropy, rtol=1e-5)
    np.testing.assert_allclose(metrics["agent/rho_mean"], ref.masked_mean(rho, b["mask"]),
                               rtol=1e-5)  # fmt: skip


@pytest.mark.parametrize("make", [make_ppo, make_impala])
def test_updates_leave_the_statistics_of_the_data_in_the_params(make, make_timestep):
    config = (PPOConfig if make is make_ppo else ImpalaConfig)(**COMMON)
    agent = make(BOX, config)
    params = with_stats(jax.jit(agent.init)(jax.random.key(1)))
    traj = on_policy_trajectory(agent, params, make_timestep)
    rewards = jnp.asarray(np.random.default_rng(0).normal(size=(T + 1, B)), jnp.float32)
    traj = traj._replace(timestep=traj.timestep._replace(reward=rewards))
    new, _, metrics = jax.jit(agent.update)(
        params, agent.optimizer.init(params), traj, jax.random.key(0)
    )
    assert np.isfinite(float(metrics["losses/total"]))
    # Observations: rows 0..T-1 merged into the statistics the update started from.
    merged = update_stats(OBS_STATS, traj.timestep.observation[:-1])
    chex.assert_trees_all_close(new[STATS_KEY], merged)
    # Values: moved from the initial ones by this rollout's targets, towards their mean.
    assert float(new[VALUE_KEY]["count"]) == 100.0 + T * B
    assert float(new[VALUE_KEY]["mean"]) != -3.0
    # The weights trained.
    assert not np.allclose(new["params"]["mean_head"]["kernel"],
                           params["params"]["mean_head"]["kernel"])  # fmt: skip


def test_ppo_value_statistics_include_the_targets_before_the_update(make_timestep, ref):
    """PPO merges a rollout's GAE targets into the value statistics first (its loss scales
    them with the new statistics): the update's result holds exactly that merge."""
    agent = make_ppo(BOX, PPOConfig(**COMMON, num_epochs=1, num_minibatches=1))
    params = with_stats(jax.jit(agent.init)(jax.random.key(1)))
    traj = on_policy_trajectory(agent, params, make_timestep)
    rewards = np.random.default_rng(0).normal(size=(T + 1, B))
    traj = traj._replace(timestep=traj.timestep._replace(reward=jnp.asarray(rewards, jnp.float32)))
    ts = traj.timestep
    final_v = reference_outputs(params, agent.config, ts.final_observation[1:])[2]
    b = ref.bookkeeping(ts, np.asarray(traj.extras["value"]), final_v, agent.config.gamma)
    targets = ref.gae(b, agent.config.lambda_) + b["v"]
    new, _, _ = jax.jit(agent.update)(params, agent.optimizer.init(params), traj,
                                      jax.random.key(0))  # fmt: skip
    expected = update_stats(VALUE_STATS, jnp.asarray(targets, jnp.float32))
    chex.assert_trees_all_close(new[VALUE_KEY], expected, rtol=1e-5)


def test_without_normalisation_params_keep_the_networks_layout():
    agent = make_ppo(BOX, PPOConfig(torso="mlp", hidden_sizes=(8,)))
    params = jax.eval_shape(agent.init, jax.random.key(0))
    assert set(params) == {"params"} and params["params"]["log_std"].shape == (2,)


@pytest.mark.parametrize("name", ["qlambda", "pqn"])
def test_discrete_only_agents_refuse_a_box(name):
    with pytest.raises(
        ConfigError,
        match=rf"agent '{name}' acts in discrete action spaces; "
        r"box has continuous actions \(agents for them: \['impala', 'muzero', 'ppo'\]\)",
    ):
        make_agent(name, BOX)  # fmt: skip
    assert make_agent("ppo", BOX).spec is BOX and make_agent("impala", BOX).spec is BOX
