"""Public names of podracer.search, one per line: what type checkers and IDEs read,
and what `lazy_loader.attach_stub` in `__init__.py` imports on first use."""

from .config import DiscreteSupport as DiscreteSupport
from .config import SearchConfig as SearchConfig
from .config import SearchNumbers as SearchNumbers
from .model import DynamicsFn as DynamicsFn
from .model import DynamicsOutput as DynamicsOutput
from .model import Latent as Latent
from .model import MuZeroModel as MuZeroModel
from .model import Params as Params
from .model import PredictionFn as PredictionFn
from .model import PredictionOutput as PredictionOutput
from .model import RepresentationFn as RepresentationFn
from .model import make_recurrent_fn as make_recurrent_fn
from .model import make_root as make_root
from .policies import SearchOutput as SearchOutput
from .policies import qtransform_fn as qtransform_fn
from .policies import run_policy as run_policy
from .policies import search as search
from .sampled import SampledMuZeroModel as SampledMuZeroModel
from .sampled import SampledSearchOutput as SampledSearchOutput
from .sampled import sampled_search as sampled_search
from .transforms import logits_to_scalar as logits_to_scalar
from .transforms import probs_to_scalar as probs_to_scalar
from .transforms import scalar_to_probs as scalar_to_probs
from .transforms import signed_hyperbolic as signed_hyperbolic
from .transforms import signed_parabolic as signed_parabolic
from .transforms import support_atoms as support_atoms

__version__: str
