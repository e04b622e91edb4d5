"""podracer.search: MuZero model interface, search policies on mctx, value transforms.

Names are imported on first use (lazy loading as in scientific-python's SPEC 1), so the
configs (`SearchConfig`, `DiscreteSupport`) import without JAX: command lines read them
before anything compiles.
"""

import lazy_loader

# The public names and their modules are listed once, in __init__.pyi (which type checkers
# and IDEs read); each name's module is imported on first use (scientific-python's SPEC 1).
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
__version__ = "0.2.0"
