"""podracer.sebulba: the Sebulba runtime (host environments, actor and learner devices).

`train(SebulbaConfig(...))` runs a whole training run; the command is `sebulba`.
The pieces are public for tests, benchmarks and custom runtimes. Names are imported on
first use (SPEC 1 lazy loading), so `sebulba --help` does not wait for JAX.
"""

import lazy_loader

# The public names and their modules are listed once, in __init__.pyi (which type checkers
# and IDEs read); each name's module is imported on first use (scientific-python's SPEC 1).
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
__version__ = "0.2.0"
