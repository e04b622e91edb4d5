"""podracer.runs: the run harness below both runtimes.

Everything around a runtime's loop lives here once: the common run config, the run
directory, metric writers, checkpoints, resume and its checks, progress, stop signals,
presets, multi-host set-up and the local launcher, the result type and the command-line
helper. A runtime's `train` keeps only its loop (see `Run`).

Names are imported on first use (SPEC 1 lazy loading), so command lines start fast.
"""

import lazy_loader

# Each module and the public names it defines, one per line; a name's module is
# imported on first use (scientific-python's SPEC 1 lazy loading).
_NAMES = {
    "config": [
        "RunConfig",
        "changed_fields",
        "config_from_json",
        "to_jsonable",
    ],
    "run": [
        "Run",
        "RunResult",
        "Restored",
        "final_return",
    ],
    "directory": [
        "RunDir",
        "auto_name",
        "read_jsonl",
    ],
    "writer": [
        "MetricWriter",
        "read_tensorboard",
    ],
    "progress": [
        "Progress",
    ],
    "signals": [
        "StopSignals",
        "block",
    ],
    "checkpoint": [
        "CheckpointError",
        "CheckpointMismatch",
        "Checkpointer",
        "abstract_like",
        "package_versions",
    ],
    "presets": [
        "PRESETS",
        "Preset",
        "apply_preset",
        "find_preset",
        "register_preset",
    ],
    "distributed": [
        "DistributedConfig",
        "initialize_distributed",
        "is_main_process",
        "shutdown_distributed",
    ],
    "cli": [
        "parse_cli",
        "run_cli",
    ],
}

__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs=_NAMES)
