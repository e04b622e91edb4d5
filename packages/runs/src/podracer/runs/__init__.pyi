"""Public names of podracer.runs, one per line: what type checkers and IDEs read,
and what `lazy_loader.attach_stub` in `__init__.py` imports on first use."""

from .checkpoint import Checkpointer as Checkpointer
from .checkpoint import CheckpointError as CheckpointError
from .checkpoint import CheckpointMismatch as CheckpointMismatch
from .checkpoint import abstract_like as abstract_like
from .cli import parse_cli as parse_cli
from .cli import run_cli as run_cli
from .config import RunConfig as RunConfig
from .config import changed_fields as changed_fields
from .config import config_from_json as config_from_json
from .config import to_jsonable as to_jsonable
from .directory import RunDir as RunDir
from .directory import auto_name as auto_name
from .directory import read_jsonl as read_jsonl
from .distributed import DistributedConfig as DistributedConfig
from .distributed import initialize_distributed as initialize_distributed
from .distributed import is_main_process as is_main_process
from .distributed import shutdown_distributed as shutdown_distributed
from .layouts import apply_preset as apply_preset
from .layouts import register_layout as register_layout
from .policy import Policy as Policy
from .policy import load as load
from .progress import Progress as Progress
from .provenance import package_versions as package_versions
from .result import RunResult as RunResult
from .result import final_return as final_return
from .run import Run as Run
from .run_checkpoints import Restored as Restored
from .signals import StopSignals as StopSignals
from .signals import block as block
from .writer import MetricWriter as MetricWriter
from .writer import read_tensorboard as read_tensorboard

__version__: str
