"""Settings for every test of the workspace, each package's own included.

* `JAX_NUMPY_RANK_PROMOTION=raise`: implicit rank promotion is a bug here; set before any
  test imports JAX, and inherited by the subprocesses tests start.
* Each test runs in its own empty folder, so a run it starts without a `runs_root` (the
  default `runs/`) never lands in the checkout.
"""

import os

import pytest

os.environ.setdefault("JAX_NUMPY_RANK_PROMOTION", "raise")


@pytest.fixture(autouse=True)
def _run_in_an_empty_folder(tmp_path_factory, monkeypatch):
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))
