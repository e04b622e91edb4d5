"""podracer.search: MuZero model interface, search policies on mctx, value transforms.

Names are imported on first use (lazy loading as in scientific-python's SPEC 1), so the
configs (`SearchConfig`, `DiscreteSupport`) import without JAX: command lines read them
before anything compiles.
"""

import lazy_loader

# Each module and the public names it defines, one per line; a name's module is
# imported on first use (scientific-python's SPEC 1 lazy loading).
_NAMES = {
    "config": [
        "DiscreteSupport",
        "SearchConfig",
    ],
    "model": [
        "DynamicsFn",
        "DynamicsOutput",
        "Latent",
        "MuZeroModel",
        "Params",
        "PredictionFn",
        "PredictionOutput",
        "RepresentationFn",
        "make_recurrent_fn",
        "make_root",
    ],
    "policies": [
        "SearchOutput",
        "qtransform_fn",
        "run_policy",
        "search",
    ],
    "transforms": [
        "signed_hyperbolic",
        "signed_parabolic",
    ],
}

__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs=_NAMES)
__version__ = "0.2.0"
