"""Config validation: bad values fail at construction, naming the field."""

import dataclasses

import pytest

from podracer.agents import ImpalaConfig
from podracer.agents import PPOConfig
from podracer.agents import QLambdaConfig


@pytest.mark.parametrize(
    ("config_cls", "field", "value"),
    [
        (QLambdaConfig, "gamma", 1.5),
        (QLambdaConfig, "lambda_", -0.1),
        (QLambdaConfig, "epsilon", 2.0),
        (QLambdaConfig, "learning_rate", 0.0),
        (QLambdaConfig, "torso", "bogus"),
        (ImpalaConfig, "entropy_cost", -1.0),
        (ImpalaConfig, "clip_rho_threshold", 0.0),
        (ImpalaConfig, "torso", "bogus"),
        (ImpalaConfig, "num_minibatches", 0),
        (ImpalaConfig, "clip_eps", 0.0),
        (PPOConfig, "num_minibatches", 0),
        (PPOConfig, "num_epochs", 2.5),
        (PPOConfig, "clip_eps", -0.2),
        (PPOConfig, "lambda_", 1.01),
        (PPOConfig, "learning_rate", "fast"),
        (PPOConfig, "torso", "bogus"),
    ],
)
def test_bad_values_raise_naming_the_field(config_cls, field, value):
    with pytest.raises(ValueError, match=rf"{config_cls.__name__}\.{field} must be"):
        config_cls(**{field: value})


@pytest.mark.parametrize("config_cls", [QLambdaConfig, ImpalaConfig, PPOConfig])
def test_defaults_are_valid_frozen_and_hashable(config_cls):
    config = config_cls()
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.gamma = 0.5
    assert hash(config) == hash(config_cls())
    assert dataclasses.replace(config, gamma=0.5).gamma == 0.5


def test_impala_value_statistics_rule_out_sample_reuse():
    with pytest.raises(ValueError, match=r"ImpalaConfig\.normalize_values must be False with"):
        ImpalaConfig(normalize_values=True, num_epochs=2)
