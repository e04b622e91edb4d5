"""A tabular toy model with known answers, shared by the search tests."""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from podracer.search import MuZeroModel
from podracer.search import search

# A deterministic MDP with 3 actions; the observation `[B]` is the start state.
# State 0: greedy immediate reward misleads. Action 0 pays 1 and ends, action 2 pays 0.5
#   and ends, action 1 pays 0 but leads to state 1, where every action pays 2 to 3.
#   Best first action: 1 (return >= 2).
# State 1: the second step of state 0's action 1.
# State 2: absorbing terminal (reward 0, discount 0).
# States 3-8: one-step bandits, arms paying each permutation of (0, 0.5, 1).
_BANDITS = [[0.0, 0.5, 1.0], [0.0, 1.0, 0.5], [0.5, 0.0, 1.0],
            [0.5, 1.0, 0.0], [1.0, 0.0, 0.5], [1.0, 0.5, 0.0]]  # fmt: skip
REWARDS = np.array(
    [[1.0, 0.0, 0.5], [2.0, 3.0, 2.5], [0.0, 0.0, 0.0], *_BANDITS], np.float32
)  # [S, A]
NEXT_STATE = np.full(REWARDS.shape, 2, np.int32)  # [S, A]
NEXT_STATE[0, 1] = 1
DISCOUNT = np.ones(REWARDS.shape, np.float32)  # [S, A]
DISCOUNT[2] = 0.0
BANDIT_STATES = np.array([3, 4, 5, 6, 7, 8, 3, 4], np.int32)  # [B]
TREE_STATES = np.array([0, 0, 0, 0, 3, 5, 7, 8], np.int32)  # [B]


class Tabular(NamedTuple):
    model: MuZeroModel
    rewards: np.ndarray  # [S, A]
    next_state: np.ndarray  # [S, A]
    discount: np.ndarray  # [S, A]
    bandit_states: np.ndarray  # [B]
    tree_states: np.ndarray  # [B]
    tree_best: np.ndarray  # [B] best first action from tree_states


def _tabular_model() -> MuZeroModel:
    """Uniform prior and zero value everywhere, so only the search can find the answers."""

    def representation(params, observation):
        return observation.astype(jnp.int32)

    def dynamics(params, state, action):
        return (
            jnp.asarray(REWARDS)[state, action],
            jnp.asarray(DISCOUNT)[state, action],
            jnp.asarray(NEXT_STATE)[state, action],
        )

    def prediction(params, state):
        num_actions = REWARDS.shape[1]
        return jnp.zeros(state.shape + (num_actions,)), jnp.zeros(state.shape)

    return MuZeroModel(representation, dynamics, prediction)


@pytest.fixture(scope="session")
def tabular() -> Tabular:
    tree_best = np.where(TREE_STATES == 0, 1, REWARDS[TREE_STATES].argmax(-1))
    return Tabular(
        _tabular_model(), REWARDS, NEXT_STATE, DISCOUNT, BANDIT_STATES, TREE_STATES, tree_best
    )


@pytest.fixture(scope="session")
def jit_search():
    """`search` jitted once for the session (model, config and writes static)."""
    return jax.jit(search, static_argnames=("model", "config", "writes"))
