"""The actor-critic parts PPO and IMPALA share: what each config flag builds."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from podracer.agents import ImpalaConfig
from podracer.agents import PPOConfig
from podracer.agents import actor_critic_parts
from podracer.agents.normalization import STATS_KEY
from podracer.agents.normalization import VALUE_KEY
from podracer.envs import EnvSpec

BOX_SPEC = EnvSpec("box", (3,), "float32", None, 10, (2,), (-1.0, -2.0), (1.0, 2.0))
SMALL = dict(torso="mlp", hidden_sizes=(8,))


def test_greedy_act_is_the_argmax_of_the_logits(vector_spec):
    ac = actor_critic_parts(vector_spec, PPOConfig(**SMALL), "PPOConfig", None)
    params = ac.init(jax.random.key(0))
    observation = jax.random.normal(jax.random.key(1), (5, 3))
    action, core = ac.greedy_act(params, observation)
    (logits, value), _ = ac.forward(params, observation)
    np.testing.assert_array_equal(action, jnp.argmax(logits, axis=-1))
    assert action.dtype == jnp.int32 and value.shape == (5,) and core == ()


def test_greedy_act_on_a_box_is_the_clipped_mean():
    ac = actor_critic_parts(BOX_SPEC, PPOConfig(**SMALL), "PPOConfig", None)
    params = ac.init(jax.random.key(0))
    observation = 10.0 * jax.random.normal(jax.random.key(1), (64, 3))
    action, _ = ac.greedy_act(params, observation)
    (dist, _), _ = ac.forward(params, observation)
    expected = np.clip(np.asarray(dist.mean), [-1.0, -2.0], [1.0, 2.0])
    np.testing.assert_allclose(action, expected)


@pytest.mark.parametrize("observations, values", [(True, False), (False, True), (True, True)])
def test_statistics_live_in_the_params_and_the_optimizer_leaves_them(
    vector_spec, observations, values
):
    config = ImpalaConfig(**SMALL, normalize_observations=observations, normalize_values=values)
    ac = actor_critic_parts(vector_spec, config, "ImpalaConfig", None)
    params = ac.init(jax.random.key(0))
    assert (STATS_KEY in params) == observations and (VALUE_KEY in params) == values
    grads = jax.tree.map(jnp.ones_like, params)
    updates, _ = ac.optimizer.update(grads, ac.optimizer.init(params), params)
    for key in (STATS_KEY, VALUE_KEY):
        if key in updates:
            assert all(np.all(u == 0) for u in jax.tree.leaves(updates[key]))
    assert any(np.any(u != 0) for u in jax.tree.leaves(updates["params"]))


def test_a_recurrent_core_is_carried_and_reset(vector_spec):
    ac = actor_critic_parts(
        vector_spec, PPOConfig(**SMALL, core="gru", core_size=4), "PPOConfig", None
    )
    assert ac.recurrent
    params = ac.init(jax.random.key(0))
    observation = jax.random.normal(jax.random.key(1), (2, 3))
    start = ac.initial_core(2)
    _, after = ac.forward(params, observation, start, jnp.zeros(2, bool))
    # A reset where `first` makes the step start from the initial state again.
    (out_reset, _), _ = ac.forward(params, observation, after, jnp.ones(2, bool))
    (out_fresh, _), _ = ac.forward(params, observation, start, jnp.zeros(2, bool))
    (out_carried, _), _ = ac.forward(params, observation, after, jnp.zeros(2, bool))
    np.testing.assert_allclose(out_reset, out_fresh, rtol=1e-6)
    assert not np.allclose(out_carried, out_fresh)


def test_the_learning_rate_anneals_over_the_updates(vector_spec):
    config = PPOConfig(**SMALL, anneal_lr=True, learning_rate=1.0, num_epochs=1,
                       num_minibatches=1, max_grad_norm=None)  # fmt: skip
    ac = actor_critic_parts(vector_spec, config, "PPOConfig", total_updates=2)
    params = ac.init(jax.random.key(0))
    state = ac.optimizer.init(params)
    grads = jax.tree.map(jnp.ones_like, params)
    first, state = ac.optimizer.update(grads, state, params)
    second, state = ac.optimizer.update(grads, state, params)
    third, _ = ac.optimizer.update(grads, state, params)
    # Adam's first steps on a constant gradient are ~lr: 1.0, then 0.5, then 0.
    leaf = lambda u: float(jax.tree.leaves(u)[0].ravel()[0])  # noqa: E731
    np.testing.assert_allclose(
        [leaf(first), leaf(second), leaf(third)], [-1.0, -0.5, 0.0], atol=1e-3
    )
