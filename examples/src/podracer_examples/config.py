"""A2C's config and its registry entry: what the `podracer.agents` entry point names.

This module imports no JAX: command lines load every installed agent's entry point to
list its flags, and `--help` should not wait for JAX. The factory is named by its import
path and imported when an A2C agent is built.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from podracer.agents.registry import AgentEntry
from podracer.agents.validation import check_positive
from podracer.agents.validation import check_range


@dataclasses.dataclass(frozen=True)
class A2CConfig:
    """A2C's hyperparameters (checked here, before anything compiles)."""

    # The numbers `anakin --sweep` and PBT may vary per member: the factory reads them
    # from its `hyper` mapping (`podracer.agents.Hyperparams`), as arrays.
    SWEEPABLE: ClassVar[tuple[str, ...]] = (
        "learning_rate", "gamma", "lambda_", "value_cost", "entropy_cost", "max_grad_norm",
    )  # fmt: skip

    hidden: int = 64  # units of each of the two hidden layers
    learning_rate: float = 3e-3
    gamma: float = 0.99
    lambda_: float = 0.95
    value_cost: float = 0.5
    entropy_cost: float = 0.01
    max_grad_norm: float = 0.5

    def __post_init__(self) -> None:
        check_positive(self, "hidden", "learning_rate", "max_grad_norm")
        check_range(self, "gamma", 0.0, 1.0)
        check_range(self, "lambda_", 0.0, 1.0)


A2C = AgentEntry(
    A2CConfig,
    "podracer_examples.agents:make_a2c",
    "A2C: advantage actor-critic, one gradient step per rollout (the examples package)",
)
