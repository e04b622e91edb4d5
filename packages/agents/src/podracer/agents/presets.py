"""Presets: per agent and task family, a config that learns, for both runtimes.

A preset is one agent config, the same on Anakin and Sebulba (the same flags mean the
same agent), and a line saying what it is (where its settings come from). What each
preset reached, and what was tried on the way, is kept with the measurements in the
repository's `benchmarks/results/presets.md`. It is named for a task
family (`podracer.envs.env_family`: catch, classic, control, minatar, atari, mujoco,
brax) or, where one task of a family wants its own, for that task (the env's name
without its backend: `Acrobot-v1`). The sizes that go with it (batch, rollout length,
budget) are each runtime's own, named as its config names them: its `LAYOUTS`
(`podracer/anakin/presets.py`, `podracer/sebulba/presets.py`;
`podracer.runs.register_layout` for yours). Presets live here, beside the configs they
build, and import without JAX as those do. Command lines pick the env's task preset,
else its family's, unless `--preset` names another; they print which one they use and
apply explicit flags on top.
"""

from __future__ import annotations

import dataclasses
from typing import Any
from typing import NamedTuple

from podracer.agents.configs import ImpalaConfig
from podracer.agents.configs import MuZeroConfig
from podracer.agents.configs import PPOConfig
from podracer.agents.configs import PQNConfig
from podracer.agents.configs import QLambdaConfig
from podracer.agents.validation import ConfigError


class Preset(NamedTuple):
    agent_config: Any  # the agent's hyperparameters
    source: str  # one line: what it is, where its settings come from


PRESETS: dict[tuple[str, str], Preset] = {}  # (agent, family or task) -> preset


def register_preset(agent: str, name: str, preset: Preset) -> None:
    """Adds (or replaces) the preset of `agent` named `name`: a task family, or a task."""
    PRESETS[(agent, name)] = preset


def preset_names(agent: str) -> list[str]:
    return sorted(n for a, n in PRESETS if a == agent)


def find_preset(agent: str, env: str, name: str | None = None) -> tuple[str, Preset] | None:
    """`(name, preset)` for `agent` on `env`: the preset `name`, or the env's task's, or
    its family's; None when there is none for the agent (its defaults then apply)."""
    if name is not None:
        if (agent, name) not in PRESETS:
            raise ConfigError(
                f"--preset must be one of {preset_names(agent)} for agent {agent!r}, got {name!r}"
            )
        return name, PRESETS[(agent, name)]
    from podracer.envs import env_family

    for name in (env.rpartition(":")[2], env_family(env)):
        if (agent, name) in PRESETS:
            return name, PRESETS[(agent, name)]
    return None


# Actor-critic agents on classic control (CartPole, Acrobot, MountainCar): PureJaxRL's
# CartPole PPO; IMPALA as it reaches 500 on envpool CartPole.
_PUREJAXRL_PPO = PPOConfig()
_CLASSIC_IMPALA = ImpalaConfig(learning_rate=1e-3, separate_critic=True, max_grad_norm=0.5)

register_preset("qlambda", "catch", Preset(
    QLambdaConfig(),
    "the Podracer paper's Catch demo layout (128 envs x 16 steps), lr 1e-3",
))  # fmt: skip
register_preset("ppo", "catch", Preset(
    PPOConfig(learning_rate=1e-3, anneal_lr=False),
    "lr 1e-3, not annealed",
))  # fmt: skip
register_preset("impala", "catch", Preset(
    ImpalaConfig(learning_rate=2e-3),
    "lr 2e-3",
))  # fmt: skip
register_preset("ppo", "classic", Preset(
    _PUREJAXRL_PPO,
    "PureJaxRL's CartPole PPO (4 envs x 128 steps, 4 epochs x 4 minibatches, lr 2.5e-4 "
    "annealed)",
))  # fmt: skip
register_preset("impala", "classic", Preset(
    _CLASSIC_IMPALA,
    "lr 1e-3, a separate critic, gradients clipped at 0.5",
))  # fmt: skip
register_preset("ppo", "Acrobot-v1", Preset(
    PPOConfig(learning_rate=5e-4, anneal_lr=False, max_grad_norm=1.0, activation="relu"),
    "gymnax-blines' Acrobot PPO (16 envs x 32 steps, 4 epochs x 4 minibatches, lr 5e-4, MLP "
    "64x64 relu, grad norm 1.0)",
))  # fmt: skip
# MuZero's defaults with twice the replay ratio: 4 updates per rollout (each sequence
# replayed ~4x). With the defaults' 2, Catch was still learning at 4e5 steps (greedy
# 0.3-1.0 over seeds); with 4, every seed caught every ball from 2e5 steps on.
_CATCH_MUZERO = MuZeroConfig(
    replay=dataclasses.replace(MuZeroConfig().replay, updates_per_rollout=4)
)

register_preset("muzero", "catch", Preset(
    _CATCH_MUZERO,
    "32 envs x 16 steps, 4 replay updates per rollout",
))  # fmt: skip
register_preset("muzero", "classic", Preset(
    MuZeroConfig(),
    "MuZero's defaults",
))  # fmt: skip
# Acrobot pays -1 on every step until the goal, and random play finds it too rarely for
# the value to learn anything: random network distillation's bonus (weight 10) leads the
# agent there, fading to 0 over the first 60% of the run; 8 replay updates per rollout
# (Catch's 4 left the seeds spread from -86 to -448) turn the goals found into values.
_MUZERO_ACROBOT = MuZeroConfig(
    novelty_weight=10.0, novelty_fade=0.6,
    replay=dataclasses.replace(MuZeroConfig().replay, updates_per_rollout=8),
)  # fmt: skip
register_preset("muzero", "Acrobot-v1", Preset(
    _MUZERO_ACROBOT,
    "the classic preset with a novelty bonus of 10 fading over 60% of the run and 8 replay "
    "updates per rollout",
))  # fmt: skip
# MountainCar pays -1 per step too, but the predictor learns its two-dimensional
# observations within a few updates: over the all-time error scale the bonus vanishes,
# over the last 5e4 errors it stays near 2 per step and leads the car up the hill; it
# fades over 60% of the run like Acrobot's, after which the goal is what the value seeks.
register_preset("muzero", "MountainCar-v0", Preset(
    dataclasses.replace(_MUZERO_ACROBOT, novelty_window=50_000),
    "Acrobot's preset with the bonus's scale over the last 5e4 errors",
))  # fmt: skip
# IMPALA on MountainCar: the same bonus (10, fading over 60% of the run, its scale over
# the last 5e4 errors) on the classic preset, with APPO's reuse (the clipped surrogate of
# V-trace's advantages, 4 epochs x 4 minibatches of whole sequences). With IMPALA's one
# step per batch the bonus's spikes drove the policy to one action (entropy ~0.01) and it
# never reached the flag; APPO without the bonus stays at -200 too.
register_preset("impala", "MountainCar-v0", Preset(
    dataclasses.replace(_CLASSIC_IMPALA, clip_eps=0.2, num_epochs=4, num_minibatches=4,
                        novelty_weight=10.0, novelty_fade=0.6, novelty_window=50_000),
    "the classic preset as APPO (clip 0.2, 4 epochs x 4 minibatches) with MuZero's "
    "MountainCar bonus (10 fading over 60% of the run, scale over the last 5e4 errors)",
))  # fmt: skip
register_preset("ppo", "minatar", Preset(
    PPOConfig(learning_rate=5e-3, num_epochs=4, num_minibatches=8, hidden_sizes=(64, 64),
              activation="relu", separate_critic=True),
    "PureJaxRL's MinAtar PPO (64 envs x 128 steps, 4 epochs x 8 minibatches, MLP 64x64 relu, "
    "lr 5e-3 annealed)",
))  # fmt: skip
register_preset("impala", "minatar", Preset(
    ImpalaConfig(learning_rate=5e-3, anneal_lr=True, lambda_=0.95, max_grad_norm=0.5,
                 num_epochs=4, num_minibatches=8, clip_eps=0.2, hidden_sizes=(64, 64),
                 activation="relu", separate_critic=True),
    "APPO (V-trace lambda 0.95, the clipped surrogate) with PPO's MinAtar settings, 4 epochs "
    "x 8 minibatches of whole sequences",
))  # fmt: skip
register_preset("muzero", "minatar", Preset(
    MuZeroConfig(torso="minatar_cnn", latent_norm="layer_norm", learning_rate=3e-3,
                 exploration_epsilon=0.02, exploration_fade=0.5, exploration_final=0.25,
                 policy_target_smoothing=0.1,
                 search=dataclasses.replace(MuZeroConfig().search, num_simulations=16,
                                            value_scale=0.0125),
                 replay=dataclasses.replace(MuZeroConfig().replay, updates_per_rollout=8)),
    "the MinAtar CNN as representation, its latent layer-normalised, 64 envs x 16 steps, 16 "
    "simulations with a soft policy target (value_scale 0.0125, smoothed 0.1 with uniform), "
    "8 replay updates per rollout, lr 3e-3, exploration (2% random actions) fading to a "
    "quarter over half the run",
))  # fmt: skip
register_preset("impala", "atari", Preset(
    ImpalaConfig(torso="nature_cnn", learning_rate=6e-4, entropy_cost=0.01, max_grad_norm=40.0),
    "IMPALA's Atari settings (Espeholt et al., 2018) with the Nature CNN torso, T=20",
))  # fmt: skip
register_preset("pqn", "minatar", Preset(
    PQNConfig(torso="minatar_cnn"),
    "PQN's published MinAtar settings (purejaxql pqn_minatar.yaml): 128 envs x 32 steps, 2 "
    "epochs x 32 minibatches, MinAtar CNN with LayerNorm, RAdam 5e-4 annealed",
))  # fmt: skip
_CLASSIC_PQN = PQNConfig(learning_rate=1e-4, lambda_=0.95, reward_scale=0.1, epsilon=0.2,
                         epsilon_decay=0.2, num_epochs=4, num_minibatches=16,
                         hidden_sizes=(256, 256), optimizer="radam")  # fmt: skip
register_preset("pqn", "classic", Preset(
    _CLASSIC_PQN,
    "PQN's CartPole settings (purejaxql pqn_cartpole.yaml): 32 envs x 64 steps, 4 epochs x 16 "
    "minibatches, MLP 256x2 with LayerNorm, rewards x 0.1, epsilon 1 -> 0.2 over 20%",
))  # fmt: skip
register_preset("pqn", "MountainCar-v0", Preset(
    dataclasses.replace(_CLASSIC_PQN, learning_rate=1e-3, epsilon=0.05),
    "the classic PQN preset with lr 1e-3 and a final epsilon of 0.05",
))  # fmt: skip
register_preset("pqn", "catch", Preset(
    PQNConfig(num_minibatches=4, hidden_sizes=(256,)),
    "the Catch demo layout with PQN's other settings, 4 minibatches",
))  # fmt: skip

# Continuous control: a Gaussian policy (CleanRL's state-independent log-std, samples
# clipped by the env) with observations and values normalised by running statistics.
_CONTROL_PPO = PPOConfig(learning_rate=5e-4, max_grad_norm=1.0, entropy_cost=0.01,
                         normalize_observations=True, normalize_values=True)  # fmt: skip
register_preset("ppo", "control", Preset(
    _CONTROL_PPO,
    "gymnax-blines' Pendulum/MountainCarContinuous PPO (32 envs x 16 steps, 4 epochs x 4 "
    "minibatches, lr 5e-4, clip 1.0) with annealing and obs/value normalisation",
))  # fmt: skip
register_preset("ppo", "mujoco", Preset(
    PPOConfig(learning_rate=3e-4, max_grad_norm=0.5, entropy_cost=0.0, num_epochs=10,
              num_minibatches=32, normalize_observations=True, normalize_values=True),
    "CleanRL's ppo_continuous_action (10 epochs x 32 minibatches, lr 3e-4 annealed, no "
    "entropy bonus, obs normalisation; values normalised for its reward scaling) as 8 envs x "
    "256 steps",
))  # fmt: skip
# Sampled MuZero on bounded continuous control: a value support for returns of a few
# hundred to ~2,600 (Pendulum's reach -1,600 at gamma 0.99; the default covers ~110), 8
# sampled actions searched with 16 simulations, and a replay ratio 32x the defaults' (8
# updates of 64 sequences per rollout of 8 envs x 16 steps: ~64 unrolls per env step,
# LightZero's Pendulum ratio). At the defaults' ratio it stayed near a random -1,250.
_CONTROL_MUZERO = MuZeroConfig(
    value_support=dataclasses.replace(MuZeroConfig().value_support, min_value=-50.0,
                                      max_value=50.0, num_bins=101),
    num_action_samples=8,
    search=dataclasses.replace(MuZeroConfig().search, num_simulations=16),
    replay=dataclasses.replace(MuZeroConfig().replay, updates_per_rollout=8,
                               sequences_per_update=64),
)  # fmt: skip
register_preset("muzero", "control", Preset(
    _CONTROL_MUZERO,
    "Sampled MuZero, 8 samples x 16 simulations, 8 envs x 16 steps, 8 replay updates of 64 "
    "sequences per rollout",
))  # fmt: skip
register_preset("impala", "control", Preset(
    ImpalaConfig(learning_rate=1e-3, max_grad_norm=0.5, entropy_cost=0.0, separate_critic=True,
                 normalize_observations=True, normalize_values=True),
    "the classic IMPALA preset with obs/value normalisation and no entropy bonus",
))  # fmt: skip
