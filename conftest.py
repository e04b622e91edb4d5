"""Settings for every test of the workspace, each package's own included.

* `JAX_NUMPY_RANK_PROMOTION=raise`: implicit rank promotion is a bug here; set before any
  test imports JAX, and inherited by the subprocesses tests start.
* JAX's persistent compilation cache: the suite compiles the same programs many times (a
  run and its resume, a seed's run and the multi-seed run, one tiny config in a child
  process per signal test), and on CPU compiling dominates such tests. Executables are
  keyed by their HLO, the JAX version and the flags, so a hit runs exactly what a fresh
  compile would. Set as environment variables so child processes share it; a cache dir
  the user set is kept.
* Each test runs in its own empty folder, so a run it starts without a `runs_root` (the
  default `runs/`) never lands in the checkout.
"""

import os
import tempfile

import pytest

os.environ.setdefault("JAX_NUMPY_RANK_PROMOTION", "raise")
os.environ.setdefault(
    "JAX_COMPILATION_CACHE_DIR", os.path.join(tempfile.gettempdir(), "podracer-tests-jax-cache")
)
os.environ.setdefault("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "0.5")


@pytest.fixture(autouse=True)
def _run_in_an_empty_folder(tmp_path_factory, monkeypatch):
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))
