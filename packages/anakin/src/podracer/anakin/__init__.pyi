"""Public names of podracer.anakin, one per line: what type checkers and IDEs read,
and what `lazy_loader.attach_stub` in `__init__.py` imports on first use."""

from .config import AnakinConfig as AnakinConfig
from .plan import Plan as Plan
from .run import train as train
from .runtime import ChunkMetrics as ChunkMetrics
from .runtime import RunnerState as RunnerState
from .runtime import make_chunk as make_chunk
from .runtime import make_evaluate as make_evaluate
from .runtime import make_init as make_init
from .runtime import make_mesh as make_mesh
from .runtime import make_rollout as make_rollout

__version__: str
