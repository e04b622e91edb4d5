"""podracer.agents: networks, losses, replay and the learner step shared by both runtimes.

The agents (`make_agent(name, spec, config)`) and their configs are listed below; the run
harness around a runtime's loop (run directories, checkpoints, resume, metrics, the CLI
helper, the tools that read runs) is its own package, podracer-runs (`podracer.runs`).

Names are imported on first use (lazy loading as in scientific-python's SPEC 1): the
configs and the registry import without JAX, so command lines start fast.
"""

import lazy_loader

# Each module and the public names it defines, one per line; a name's module is
# imported on first use (scientific-python's SPEC 1 lazy loading).
_NAMES = {
    # Agents by name, and their hyperparameters.
    "registry": [
        "AGENTS",
        "AgentEntry",
        "agent_config",
        "agent_entry",
        "make_agent",
        "register_agent",
        "as_agent_entry",
        "flag_group",
    ],
    "configs": [
        "ImpalaConfig",
        "MuZeroConfig",
        "PPOConfig",
        "PQNConfig",
        "QLambdaConfig",
        "ReplayConfig",
    ],
    "validation": [
        "ConfigError",
    ],
    # The agent interface and the learner step.
    "types": [
        "Agent",
        "Trajectory",
        "masked_mean",
        "pmean_flat",
    ],
    "train_state": [
        "TrainState",
        "init_train_state",
    ],
    "learn": [
        "learner_updates",
        "make_learn",
        "make_optimizer",
        "sgd_update",
    ],
    # The agents, and what the actor-critic ones build alike.
    "actor_critic": [
        "ActorCriticParts",
        "actor_critic_parts",
    ],
    "impala": [
        "make_impala",
    ],
    "muzero": [
        "make_muzero",
    ],
    "ppo": [
        "make_ppo",
    ],
    "qlambda": [
        "make_qlambda",
    ],
    # Sequence replay.
    "replay": [
        "Replay",
        "ReplaySample",
        "ReplayState",
        "init_local_replays",
        "local_replay",
        "make_replay",
    ],
    # Whole episodes: evaluation and videos.
    "evaluation": [
        "Episodes",
        "env_keys",
        "host_episodes",
        "jax_episodes",
        "jax_observations",
    ],
    # Returns and targets.
    "returns": [
        "Boundaries",
        "bootstrap_values",
        "boundaries",
        "final_values",
        "lambda_advantages",
        "vtrace",
    ],
    # Networks.
    "networks": [
        "MLP",
        "ActorCritic",
        "ImpalaResNet",
        "NatureCNN",
        "QNetwork",
        "Torso",
        "preprocess",
    ],
    "muzero_networks": [
        "MuZeroNetwork",
    ],
}

__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs=_NAMES)
__version__ = "0.2.0"
