"""PPO: the clipped surrogate, value clipping and GAE against numpy; clipping regions."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import rlax

from podracer.agents import ActorCritic
from podracer.agents import PPOConfig
from podracer.agents import Trajectory
from podracer.agents import make_ppo
from podracer.agents.ppo import standardized
from podracer.agents.ppo import value_error
from podracer.agents.surrogate import clipped_surrogate

CONFIG = PPOConfig(
    gamma=0.9,
    lambda_=0.8,
    clip_eps=0.2,
    entropy_cost=0.05,
    value_cost=0.5,
    num_epochs=2,
    num_minibatches=2,
    torso="mlp",
    hidden_sizes=(8,),
    learning_rate=1e-2,
    anneal_lr=False,
)
T, B = 4, 2


def make_net(spec, config=CONFIG):
    return ActorCritic(
        spec.num_actions, "mlp", 1, config.hidden_sizes, config.activation, config.separate_critic
    )


@pytest.fixture(scope="module")
def agent(vector_spec):
    return make_ppo(vector_spec, CONFIG)


@pytest.fixture(scope="module")
def params(agent):
    return jax.jit(agent.init)(jax.random.key(1))


def behaviour_extras(spec, seed=5):
    rng = np.random.default_rng(seed)
    return {
        "log_prob": jnp.asarray(np.log(rng.uniform(0.2, 0.8, size=(T + 1, B))), jnp.float32),
        "value": jnp.asarray(rng.normal(size=(T + 1, B)), jnp.float32),
    }


@pytest.mark.parametrize("layout", ["jax", "envpool"])
def test_loss_matches_numpy_ppo(agent, params, vector_spec, random_trajectory, ref, layout):
    extras = behaviour_extras(vector_spec)
    traj = random_trajectory(vector_spec, T, B, layout=layout, extras=extras)
    ts, net, eps = traj.timestep, make_net(vector_spec), CONFIG.clip_eps
    final_v = None
    if ts.final_observation is not None:
        final_v = np.asarray(net.apply(params, ts.final_observation[1:], method=ActorCritic.value))
    b = ref.bookkeeping(ts, extras["value"], final_v, CONFIG.gamma)
    adv = ref.gae(b, CONFIG.lambda_)
    target = adv + b["v"]
    mean = ref.masked_mean(adv, b["mask"])
    std = np.sqrt(ref.masked_mean(np.square(adv - mean), b["mask"]))
    adv_n = (adv - mean) / (std + 1e-8)
    logits, value = (np.asarray(x, np.float64) for x in net.apply(params, ts.observation[:-1]))
    logp_all = ref.log_softmax(logits)
    logp = np.take_along_axis(logp_all, np.asarray(traj.action[:-1])[..., None], -1)[..., 0]
    ratio = np.exp(logp - np.asarray(extras["log_prob"][:-1]))
    pg = ref.masked_mean(
        -np.minimum(ratio * adv_n, np.clip(ratio, 1 - eps, 1 + eps) * adv_n), b["mask"]
    )
    clipped_value = b["v"] + np.clip(value - b["v"], -eps, eps)
    value_err = np.maximum(np.square(value - target), np.square(clipped_value - target))
    value_loss = 0.5 * ref.masked_mean(value_err, b["mask"])
    entropy = ref.masked_mean(-np.sum(np.exp(logp_all) * logp_all, -1), b["mask"])

    loss, metrics = jax.jit(agent.loss)(params, traj, jax.random.key(0))
    np.testing.assert_allclose(metrics["losses/policy"], pg, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(metrics["losses/value"], value_loss, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(metrics["losses/entropy"], entropy, rtol=1e-5)
    np.testing.assert_allclose(
        metrics["agent/clip_fraction"],
        ref.masked_mean(np.abs(ratio - 1) > eps, b["mask"]),
        atol=1e-6,
    )
    np.testing.assert_allclose(
        loss,
        pg + CONFIG.value_cost * value_loss - CONFIG.entropy_cost * entropy,
        rtol=1e-4,
        atol=1e-6,
    )


CLIP_CASES = [  # (ratio pi/mu, advantage, gradient cut by the clip)
    (1.5, 1.0, True),  # too far up with a positive advantage: no incentive to go further
    (0.5, 1.0, False),  # too far down with a positive advantage: the gradient pushes back up
    (0.5, -1.0, True),
    (1.5, -1.0, False),
    (1.1, 1.0, False),  # inside [1 - eps, 1 + eps]: the plain importance-weighted gradient
    (0.9, -1.0, False),
]


@pytest.fixture(scope="module")
def pg_only(vector_spec):
    config = PPOConfig(
        normalize_advantages=False,
        entropy_cost=0.0,
        value_cost=0.0,
        clip_eps=0.2,
        torso="mlp",
        hidden_sizes=(8,),
    )
    agent = make_ppo(vector_spec, config)
    return agent, make_net(vector_spec, config), jax.jit(jax.grad(agent.loss, has_aux=True))


@pytest.mark.parametrize(("ratio", "advantage", "clipped"), CLIP_CASES)
def test_policy_gradient_is_zero_exactly_where_the_ratio_is_clipped(
    pg_only, params, make_timestep, ratio, advantage, clipped
):
    agent, net, grad_fn = pg_only
    # One transition into a termination with reward = advantage and behaviour value 0.
    ts = make_timestep([[0.0], [advantage]], terminated=[[False], [True]])
    action = jnp.zeros((2, 1), jnp.int32)
    logits, _ = net.apply(params, ts.observation)
    logp = jax.nn.log_softmax(logits)[..., 0]  # [2, 1]
    extras = {"log_prob": logp - jnp.log(ratio), "value": jnp.zeros((2, 1))}
    traj = Trajectory(ts, action, extras)
    grads, metrics = grad_fn(params, traj, jax.random.key(0))
    lo, hi = 1 - 0.2, 1 + 0.2
    expected_loss = -min(ratio * advantage, min(max(ratio, lo), hi) * advantage)
    np.testing.assert_allclose(metrics["losses/policy"], expected_loss, rtol=1e-5)
    norm = float(jnp.sqrt(sum(jnp.sum(jnp.square(g)) for g in jax.tree.leaves(grads))))
    if clipped:
        assert norm == 0.0
    else:
        # d/dtheta of -A pi/mu = -A ratio dlog pi/dtheta.
        def surrogate(p):
            lp = jax.nn.log_softmax(net.apply(p, ts.observation[:1])[0])[0, 0, 0]  # action 0
            return -advantage * jnp.exp(lp - extras["log_prob"][0, 0])

        assert norm > 0
        chex.assert_trees_all_close(grads, jax.grad(surrogate)(params), rtol=1e-4, atol=1e-7)


def test_value_clipping_keeps_the_pessimistic_error(vector_spec, make_timestep, params):
    """The value is 0.5 above the behaviour value (clip 0.2) and below the target 2: the
    clipped prediction v_b + 0.2 is further from the target, and its error is the one used."""
    config = PPOConfig(
        normalize_advantages=False,
        entropy_cost=0.0,
        value_cost=1.0,
        clip_eps=0.2,
        torso="mlp",
        hidden_sizes=(8,),
    )
    agent, net = make_ppo(vector_spec, config), make_net(vector_spec, config)
    ts = make_timestep([[0.0], [2.0]], terminated=[[False], [True]])
    _, value = net.apply(params, ts.observation)
    # Shift the params' value by moving the behaviour value instead: v_b = v - 0.5.
    extras = {"log_prob": jnp.zeros((2, 1)), "value": value - 0.5}
    traj = Trajectory(ts, jnp.zeros((2, 1), jnp.int32), extras)
    _, metrics = jax.jit(agent.loss)(params, traj, jax.random.key(0))
    target = 2.0  # terminated: advantage + v_b = r
    v = float(value[0, 0])
    assert v < 1.0  # a fresh tiny network
    expected = 0.5 * (v - 0.5 + 0.2 - target) ** 2  # the clipped error, the larger one
    np.testing.assert_array_less((v - target) ** 2, (v - 0.3 - target) ** 2)
    np.testing.assert_allclose(metrics["losses/value"], expected, rtol=1e-5)


def test_clipped_surrogate_matches_rlax():
    ratio = jax.random.uniform(jax.random.key(0), (64,), minval=0.5, maxval=1.5)
    advantage = jax.random.normal(jax.random.key(1), (64,))
    np.testing.assert_allclose(
        jnp.mean(clipped_surrogate(ratio, advantage, 0.2)),
        rlax.clipped_surrogate_pg_loss(ratio, advantage, 0.2),
        rtol=1e-6,
    )


def test_value_error_by_hand():
    value, behaviour, target = jnp.array([1.0, 1.0, 0.0]), jnp.array([0.5, 1.1, 0.0]), 2.0
    np.testing.assert_allclose(value_error(value, behaviour, target, None), [1.0, 1.0, 4.0])
    # 1.0 is 0.5 above its behaviour value: clipped to 0.7, error 1.69 > 1.0 is kept;
    # 1.0 within 0.2 of 1.1 is itself; 0.0 equals its behaviour value.
    np.testing.assert_allclose(value_error(value, behaviour, target, 0.2), [1.69, 1, 4], rtol=1e-6)


def test_standardized_ignores_masked_entries():
    x, mask = jnp.array([1.0, 3.0, 100.0]), jnp.array([True, True, False])
    np.testing.assert_allclose(standardized(x, mask)[:2], [-1.0, 1.0], rtol=1e-6)


def test_update_runs_epochs_of_minibatches_and_anneals_to_zero(vector_spec, random_trajectory):
    traj = random_trajectory(vector_spec, T, B, extras=behaviour_extras(vector_spec))
    config = PPOConfig(
        num_epochs=2, num_minibatches=2, anneal_lr=True, torso="mlp", hidden_sizes=(8,)
    )
    agent = make_ppo(vector_spec, config, total_updates=1)
    params = jax.jit(agent.init)(jax.random.key(0))
    chex.clear_trace_counter()
    update = jax.jit(chex.assert_max_traces(agent.update, n=1))
    opt_state = agent.optimizer.init(params)
    p1, opt_state, metrics = update(params, opt_state, traj, jax.random.key(1))
    assert float(metrics["losses/grad_norm"]) > 0 and np.isfinite(float(metrics["losses/policy"]))
    assert not np.allclose(
        p1["params"]["policy_head"]["kernel"], params["params"]["policy_head"]["kernel"]
    )
    # total_updates=1: the second update's learning rate has annealed to exactly 0.
    p2, _, _ = update(p1, opt_state, traj, jax.random.key(2))
    chex.assert_trees_all_equal(p2, p1)


def test_minibatches_must_divide_the_rollout(vector_spec, random_trajectory):
    agent = make_ppo(vector_spec, PPOConfig(num_minibatches=3, torso="mlp", hidden_sizes=(8,)))
    traj = random_trajectory(vector_spec, T, B, extras=behaviour_extras(vector_spec))
    params = jax.eval_shape(agent.init, jax.random.key(0))
    with pytest.raises(ValueError, match="num_minibatches"):
        jax.eval_shape(agent.update, params, agent.optimizer.init(params), traj, jax.random.key(0))


def test_act_returns_log_prob_and_value_of_the_sampled_action(agent, params, vector_spec):
    obs = jnp.asarray(np.random.default_rng(3).normal(size=(4, 3)), jnp.float32)
    action, extras, _ = jax.jit(agent.act)(params, jax.random.key(2), obs)
    logits, value = make_net(vector_spec).apply(params, obs)
    expected = np.take_along_axis(
        np.asarray(jax.nn.log_softmax(logits)), np.asarray(action)[:, None], -1
    )
    np.testing.assert_allclose(extras["log_prob"], expected[:, 0], rtol=1e-6)
    np.testing.assert_allclose(extras["value"], value, rtol=1e-6)


def test_gradients_are_finite_on_uint8_frames(frames_spec, random_trajectory, cheap_init):
    agent = make_ppo(frames_spec, PPOConfig(torso="nature_cnn", separate_critic=False))
    params = cheap_init(agent.init, jax.random.key(0))
    extras = {"log_prob": jnp.full((3, 2), -1.4), "value": jnp.zeros((3, 2))}
    traj = random_trajectory(frames_spec, 2, 2, extras=extras)
    (loss, _), grads = jax.jit(jax.value_and_grad(agent.loss, has_aux=True))(
        params, traj, jax.random.key(0)
    )
    assert np.isfinite(loss)
    chex.assert_tree_all_finite(grads)
    assert float(jnp.sqrt(sum(jnp.sum(jnp.square(g)) for g in jax.tree.leaves(grads)))) > 0
