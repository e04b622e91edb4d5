"""IMPALA: the V-trace actor-critic loss against a numpy reimplementation; APPO's reuse."""

import dataclasses

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from podracer.agents import ActorCritic
from podracer.agents import ImpalaConfig
from podracer.agents import make_impala

CONFIG = ImpalaConfig(
    gamma=0.9,
    lambda_=0.8,
    entropy_cost=0.05,
    value_cost=0.5,
    clip_rho_threshold=1.0,
    clip_pg_rho_threshold=1.5,
    torso="mlp",
    hidden_sizes=(8,),
    learning_rate=1e-2,
)
T, B = 4, 2


@pytest.fixture(scope="module")
def agent(vector_spec):
    return make_impala(vector_spec, CONFIG)


@pytest.fixture(scope="module")
def params(agent):
    return jax.jit(agent.init)(jax.random.key(1))


@pytest.fixture(scope="module")
def loss_and_grad(agent):
    return jax.jit(jax.value_and_grad(agent.loss, has_aux=True))


def behaviour_logits(spec, seed=5):
    return jnp.asarray(
        np.random.default_rng(seed).normal(size=(T + 1, B, spec.num_actions)), jnp.float32
    )


@pytest.mark.parametrize("layout", ["jax", "envpool"])
def test_loss_matches_numpy_vtrace(
    params, loss_and_grad, vector_spec, random_trajectory, ref, layout
):
    traj = random_trajectory(
        vector_spec, T, B, layout=layout, extras={"logits": behaviour_logits(vector_spec)}
    )
    ts = traj.timestep
    net = ActorCritic(vector_spec.num_actions, "mlp", 1, CONFIG.hidden_sizes, CONFIG.activation)
    logits, values = (np.asarray(x, np.float64) for x in net.apply(params, ts.observation))
    final_v = None
    if ts.final_observation is not None:
        final_v = np.asarray(net.apply(params, ts.final_observation[1:], method=ActorCritic.value))
    b = ref.bookkeeping(ts, values, final_v, CONFIG.gamma)
    a = np.asarray(traj.action[:-1])[..., None]
    logp_all = ref.log_softmax(logits[:-1])
    logp = np.take_along_axis(logp_all, a, -1)[..., 0]
    mu_logp = np.take_along_axis(ref.log_softmax(traj.extras["logits"][:-1]), a, -1)[..., 0]
    rho = np.exp(logp - mu_logp)
    vs, adv = ref.vtrace(
        b, rho, CONFIG.lambda_, CONFIG.clip_rho_threshold, CONFIG.clip_pg_rho_threshold
    )
    pg = -ref.masked_mean(logp * adv, b["mask"])
    baseline = 0.5 * ref.masked_mean(np.square(vs - b["v"]), b["mask"])
    entropy = ref.masked_mean(-np.sum(np.exp(logp_all) * logp_all, -1), b["mask"])

    (loss, metrics), grads = loss_and_grad(params, traj, jax.random.key(0))
    np.testing.assert_allclose(metrics["losses/policy"], pg, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(metrics["losses/value"], baseline, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(metrics["losses/entropy"], entropy, rtol=1e-5)
    np.testing.assert_allclose(
        metrics["agent/rho_mean"], ref.masked_mean(rho, b["mask"]), rtol=1e-5
    )
    np.testing.assert_allclose(
        loss,
        pg + CONFIG.value_cost * baseline - CONFIG.entropy_cost * entropy,
        rtol=1e-4,
        atol=1e-6,
    )

    # Targets, advantages and rho are constants: the gradient is the surrogate's.
    m = jnp.asarray(b["mask"], jnp.float32)
    mean = lambda x: jnp.sum(m * x) / jnp.sum(m)

    def surrogate(p):
        lg, v = net.apply(p, ts.observation[:-1])
        lp = jax.nn.log_softmax(lg)
        logp = jnp.take_along_axis(lp, traj.action[:-1, :, None], -1)[..., 0]
        ent = -jnp.sum(jnp.exp(lp) * lp, -1)
        return (
            -mean(logp * jnp.asarray(adv, jnp.float32))
            + CONFIG.value_cost * 0.5 * mean(jnp.square(jnp.asarray(vs, jnp.float32) - v))
            - CONFIG.entropy_cost * mean(ent)
        )

    chex.assert_trees_all_close(grads, jax.grad(surrogate)(params), rtol=1e-4, atol=1e-6)


def test_loss_ignores_the_dummy_transition(params, loss_and_grad, vector_spec, random_trajectory):
    logits = behaviour_logits(vector_spec)
    traj = random_trajectory(vector_spec, T, B, layout="envpool", extras={"logits": logits})
    other = traj._replace(
        action=traj.action.at[1, 0].set(1 - traj.action[1, 0]),
        timestep=traj.timestep._replace(reward=traj.timestep.reward.at[2, 0].add(50.0)),
        extras={"logits": logits.at[1, 0].set(jnp.array([9.0, -9.0]))},
    )
    (a, _), _ = loss_and_grad(params, traj, jax.random.key(0))
    (b, _), _ = loss_and_grad(params, other, jax.random.key(0))
    np.testing.assert_allclose(a, b, rtol=1e-6)


def test_act_returns_behaviour_logits_and_samples_them(agent, params, vector_spec):
    obs = jnp.asarray(np.random.default_rng(3).normal(size=(4, 3)), jnp.float32)
    action, extras, _ = jax.jit(agent.act)(params, jax.random.key(2), obs)
    net = ActorCritic(vector_spec.num_actions, "mlp", 1, CONFIG.hidden_sizes, CONFIG.activation)
    logits, _ = net.apply(params, obs)
    np.testing.assert_allclose(extras["logits"], logits, rtol=1e-6)
    assert action.shape == (4,) and action.dtype == jnp.int32
    assert np.all((np.asarray(action) >= 0) & (np.asarray(action) < vector_spec.num_actions))
    np.testing.assert_array_equal(agent.greedy_act(params, obs)[0], np.argmax(logits, -1))


def test_update_lowers_the_loss_without_retracing(agent, params, vector_spec, random_trajectory):
    traj = random_trajectory(vector_spec, T, B, extras={"logits": behaviour_logits(vector_spec)})
    chex.clear_trace_counter()  # sgd_update's `update` is shared by every agent
    update = jax.jit(chex.assert_max_traces(agent.update, n=1))
    opt_state = agent.optimizer.init(params)
    p, losses = params, []
    for i in range(4):
        p, opt_state, metrics = update(p, opt_state, traj, jax.random.key(i))
        losses.append(float(metrics["losses/value"]))
    assert losses[-1] < losses[0]
    assert set(metrics) >= {
        "losses/policy",
        "losses/value",
        "losses/entropy",
        "losses/total",
        "losses/grad_norm",
    }


def test_appo_has_impalas_gradient_on_policy(agent, params, vector_spec, random_trajectory):
    """Acting with the current policy (ratio 1, inside the clip), the clipped surrogate of
    the V-trace advantage differentiates to IMPALA's policy gradient; off it, they part."""
    appo = make_impala(vector_spec, dataclasses.replace(CONFIG, clip_eps=0.2))
    traj = random_trajectory(vector_spec, T, B, extras={"logits": behaviour_logits(vector_spec)})
    net = ActorCritic(vector_spec.num_actions, "mlp", 1, CONFIG.hidden_sizes, CONFIG.activation)
    on_policy = traj._replace(extras={"logits": net.apply(params, traj.timestep.observation)[0]})
    grad = lambda a, t: jax.grad(a.loss, has_aux=True)(params, t, jax.random.key(0))[0]  # noqa: E731
    chex.assert_trees_all_close(grad(appo, on_policy), grad(agent, on_policy), rtol=1e-5, atol=1e-7)
    off = optax_norm(jax.tree.map(jnp.subtract, grad(appo, traj), grad(agent, traj)))
    assert float(off) > 1e-3


def test_reuse_makes_epochs_of_gradient_steps(params, vector_spec, random_trajectory):
    """Two epochs of one minibatch are two of IMPALA's steps, V-trace recomputed between."""
    traj = random_trajectory(vector_spec, T, B, extras={"logits": behaviour_logits(vector_spec)})
    once = make_impala(vector_spec, CONFIG)
    twice = make_impala(vector_spec, dataclasses.replace(CONFIG, num_epochs=2))
    key = jax.random.key(0)
    p, opt = params, once.optimizer.init(params)
    for _ in range(2):
        p, opt, _ = jax.jit(once.update)(p, opt, traj, key)
    q, _, metrics = jax.jit(twice.update)(params, twice.optimizer.init(params), traj, key)
    chex.assert_trees_all_close(q, p, rtol=1e-5, atol=1e-7)
    assert {"losses/total", "losses/policy", "losses/grad_norm"} <= set(metrics)


def test_appo_minibatches_of_whole_sequences_lower_the_loss(params, vector_spec, random_trajectory):
    config = dataclasses.replace(CONFIG, clip_eps=0.2, num_epochs=2, num_minibatches=2)
    agent = make_impala(vector_spec, config)
    traj = random_trajectory(vector_spec, T, B, extras={"logits": behaviour_logits(vector_spec)})
    update = jax.jit(agent.update)
    p, opt_state, losses = params, agent.optimizer.init(params), []
    for i in range(4):
        p, opt_state, metrics = update(p, opt_state, traj, jax.random.key(i))
        losses.append(float(metrics["losses/value"]))
    assert losses[-1] < losses[0]
    assert {"agent/approx_kl", "agent/clip_fraction"} <= set(metrics)


def test_gradients_are_finite_on_uint8_frames(frames_spec, random_trajectory, cheap_init):
    agent = make_impala(frames_spec, ImpalaConfig(torso="nature_cnn"))
    params = cheap_init(agent.init, jax.random.key(0))
    logits = jnp.zeros((3, 2, frames_spec.num_actions))
    traj = random_trajectory(frames_spec, 2, 2, extras={"logits": logits})
    (loss, _), grads = jax.jit(jax.value_and_grad(agent.loss, has_aux=True))(
        params, traj, jax.random.key(0)
    )
    assert np.isfinite(loss)
    chex.assert_tree_all_finite(grads)
    assert float(optax_norm(grads)) > 0


def optax_norm(tree):
    return jnp.sqrt(sum(jnp.sum(jnp.square(x)) for x in jax.tree.leaves(tree)))


def test_novelty_bonus_joins_the_rewards_and_trains_the_predictor_only(
    params, vector_spec, random_trajectory, ref
):
    """With `novelty_weight`, the loss is IMPALA's on the trajectory whose rewards carry
    the weight times each reached observation's bonus, plus the predictor's error; an
    update merges the batch into the bonus's statistics first and never moves the fixed
    network; the actor-critic's initialisation is the one without the bonus."""
    from podracer.agents import novelty

    plain = make_impala(vector_spec, CONFIG)
    agent = make_impala(vector_spec, dataclasses.replace(CONFIG, novelty_weight=0.7))
    with_rnd = jax.jit(agent.init)(jax.random.key(1))
    chex.assert_trees_all_equal(with_rnd["params"], params["params"])
    traj = random_trajectory(vector_spec, T, B, extras={"logits": behaviour_logits(vector_spec)})
    ts = traj.timestep
    by_hand, predictor_loss = ref.novelty(with_rnd, traj, novelty.reached_observations(ts), 0.7)
    total, metrics = jax.jit(agent.loss)(with_rnd, traj, jax.random.key(0))
    expected, _ = jax.jit(plain.loss)(with_rnd, by_hand, jax.random.key(0))
    np.testing.assert_allclose(total, expected + predictor_loss, rtol=1e-5)
    np.testing.assert_allclose(metrics["losses/novelty"], predictor_loss, rtol=1e-5)
    assert metrics["agent/novelty_bonus"] > 0

    stepped, _, _ = jax.jit(agent.update)(
        with_rnd, agent.optimizer.init(with_rnd), traj, jax.random.key(0)
    )
    reached = novelty.reached_observations(ts)[1:]
    observed = novelty.observe(with_rnd, reached, 1, ts.transition_mask[1:])
    for key in (novelty.OBS_KEY, novelty.ERROR_KEY, novelty.UPDATES_KEY):
        chex.assert_trees_all_close(stepped[key], observed[key], rtol=1e-6)
    chex.assert_trees_all_equal(stepped[novelty.TARGET_KEY], with_rnd[novelty.TARGET_KEY])
    moved = jax.tree.map(
        lambda a, b: bool(np.any(a != b)), stepped[novelty.PREDICTOR_KEY],
        with_rnd[novelty.PREDICTOR_KEY],
    )  # fmt: skip
    assert all(jax.tree.leaves(moved))
