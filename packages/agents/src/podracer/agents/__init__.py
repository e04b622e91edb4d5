"""podracer.agents: networks, losses, replay and the learner step shared by both runtimes.

The agents (`make_agent(name, spec, config)`) and their configs are listed below; the run
harness around a runtime's loop (run directories, checkpoints, resume, metrics, the CLI
helper, the tools that read runs) is its own package, podracer-runs (`podracer.runs`).

Names are imported on first use (lazy loading as in scientific-python's SPEC 1): the
configs and the registry import without JAX, so command lines start fast.
"""

import lazy_loader

# The public names and their modules are listed once, in __init__.pyi (which type checkers
# and IDEs read); each name's module is imported on first use (scientific-python's SPEC 1).
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
__version__ = "0.2.0"
