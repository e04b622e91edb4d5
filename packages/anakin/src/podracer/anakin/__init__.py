"""podracer.anakin: environments and agent together on device (Hessel, Kroiss et al., 2021).

`train(AnakinConfig(...))` runs a whole training run; the command is `anakin`. Names are
imported on first use (SPEC 1 lazy loading), so `anakin --help` does not wait for JAX.
"""

import lazy_loader

# The public names and their modules are listed once, in __init__.pyi (which type checkers
# and IDEs read); each name's module is imported on first use (scientific-python's SPEC 1).
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
__version__ = "0.2.0"
