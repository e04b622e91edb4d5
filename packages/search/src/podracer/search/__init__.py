"""podracer.search: MuZero model interface, search policies on mctx, value transforms."""

# One public name per line, as mctx and rlax do (hence no isort merging here).
# ruff: noqa: I001

from podracer.search.model import DynamicsFn
from podracer.search.model import DynamicsOutput
from podracer.search.model import Latent
from podracer.search.model import make_recurrent_fn
from podracer.search.model import make_root
from podracer.search.model import MuZeroModel
from podracer.search.model import Params
from podracer.search.model import PredictionFn
from podracer.search.model import PredictionOutput
from podracer.search.model import RepresentationFn
from podracer.search.policies import run_policy
from podracer.search.policies import search
from podracer.search.policies import SearchConfig
from podracer.search.policies import SearchOutput
from podracer.search.transforms import DiscreteSupport
from podracer.search.transforms import signed_hyperbolic
from podracer.search.transforms import signed_parabolic

__version__ = "0.1.0"

__all__ = (
    "DiscreteSupport",
    "DynamicsFn",
    "DynamicsOutput",
    "Latent",
    "MuZeroModel",
    "Params",
    "PredictionFn",
    "PredictionOutput",
    "RepresentationFn",
    "SearchConfig",
    "SearchOutput",
    "make_recurrent_fn",
    "make_root",
    "run_policy",
    "search",
    "signed_hyperbolic",
    "signed_parabolic",
)
