"""podracer.sebulba: the Sebulba runtime (host environments, actor and learner devices).

`train(SebulbaConfig(...))` runs a whole training run; the command is `sebulba`.
The pieces are public for tests, benchmarks and custom runtimes. Names are imported on
first use (SPEC 1 lazy loading), so `sebulba --help` does not wait for JAX.
"""

import lazy_loader

# Each module and the public names it defines, one per line; a name's module is
# imported on first use (scientific-python's SPEC 1 lazy loading).
_NAMES = {
    "config": [
        "SebulbaConfig",
    ],
    "run": [
        "EnvFn",
        "choose_loop",
        "train",
    ],
    "actor": [
        "Actor",
        "Rollout",
        "deterministic_schedule",
    ],
    "learner": [
        "Learner",
        "learn",
        "learner_mesh",
        "make_update",
        "trajectory_sharding",
    ],
    "lifetime": [
        "StageTimeout",
        "Stopped",
        "Supervisor",
    ],
    "params": [
        "ParameterServer",
    ],
    "rollout": [
        "PythonLoop",
        "RolloutOutput",
        "XlaLoop",
    ],
    "timing": [
        "PhaseTimer",
    ],
}

__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs=_NAMES)
__version__ = "0.2.0"
