"""podracer.runs: the run harness below both runtimes.

Everything around a runtime's loop lives here once: the common run config, the run
directory, metric writers, checkpoints, resume and its checks, progress, stop signals,
the layouts of presets (each runtime's sizes for the agents' presets), multi-host set-up
and the local launcher, the result type and the command-line helper; and `load`, a saved
agent as a `Policy` that acts. A runtime's `train` keeps only its loop (see `Run`).

Names are imported on first use (SPEC 1 lazy loading), so command lines start fast.
"""

import lazy_loader

# The public names and their modules are listed once, in __init__.pyi (which type checkers
# and IDEs read); each name's module is imported on first use (scientific-python's SPEC 1).
_lazy_getattr, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
__version__ = "0.2.0"

# Presets moved beside the agent configs they build; their old names here say where.
_MOVED = ("PRESETS", "Preset", "find_preset", "register_preset")


def __getattr__(name: str):
    if name in _MOVED:
        raise AttributeError(f"podracer.runs.{name} moved: use podracer.agents.{name}")
    return _lazy_getattr(name)
