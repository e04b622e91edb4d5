"""podracer.anakin: environments and agent together on device (Hessel, Kroiss et al., 2021).

`train(AnakinConfig(...))` runs a whole training run; the command is `anakin`. Names are
imported on first use (SPEC 1 lazy loading), so `anakin --help` does not wait for JAX.
"""

import lazy_loader

# Each module and the public names it defines, one per line; a name's module is
# imported on first use (scientific-python's SPEC 1 lazy loading).
_NAMES = {
    "config": [
        "AnakinConfig",
    ],
    "runtime": [
        "ChunkMetrics",
        "RunnerState",
        "make_chunk",
        "make_evaluate",
        "make_init",
        "make_mesh",
        "make_rollout",
    ],
    "train": [
        "train",
    ],
}

__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs=_NAMES)
__version__ = "0.2.0"
