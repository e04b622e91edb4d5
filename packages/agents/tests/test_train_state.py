"""The train state: fresh params, optimizer state, key and counter."""

import jax
import jax.numpy as jnp
import numpy as np

from podracer.agents import QLambdaConfig
from podracer.agents import TrainState
from podracer.agents import init_train_state
from podracer.agents import make_qlambda


def test_init_train_state_splits_the_key_and_starts_at_zero(vector_spec):
    agent = make_qlambda(vector_spec, QLambdaConfig(torso="mlp", hidden_sizes=(4,)))
    key = jax.random.key_data(jax.random.key(3))  # raw uint32 [2]
    state = jax.jit(lambda k: init_train_state(agent, k))(key)
    assert isinstance(state, TrainState)
    init_key, next_key = jax.random.split(key)
    np.testing.assert_array_equal(state.key, next_key)
    assert state.key.dtype == jnp.uint32 and state.key.shape == (2,)
    assert state.update_step.dtype == jnp.int32 and int(state.update_step) == 0
    expected = jax.jit(agent.init)(init_key)
    jax.tree.map(np.testing.assert_array_equal, state.params, expected)
    jax.tree.map(np.testing.assert_array_equal, state.opt_state, agent.optimizer.init(expected))
