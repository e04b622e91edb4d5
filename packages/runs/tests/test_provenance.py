"""What a run ran with: versions, the git checkout, the command line; never an error."""

import os
import platform
import shutil
import subprocess
import sys

import pytest

from podracer.runs.provenance import git_state
from podracer.runs.provenance import package_versions
from podracer.runs.provenance import provenance


def test_provenance_names_python_the_command_line_and_the_packages():
    import importlib.metadata

    record = provenance()
    assert record["python"] == platform.python_version() and record["argv"] == sys.argv
    versions = record["packages"]
    for name in ("podracer-runs", "podracer-agents", "podracer-envs", "jax", "jaxlib"):
        assert versions[name] == importlib.metadata.version(name)
    assert "not-a-package" not in versions and versions == package_versions()
    git = record["git"]  # the checkout these tests run from, if they do
    assert git is None or (len(git["commit"]) == 40 and git["dirty"] in (True, False, None))


def test_no_git_or_no_checkout_is_none(tmp_path, monkeypatch):
    (tmp_path / "code.py").write_text("")
    assert git_state(tmp_path / "code.py") is None  # not in a checkout
    monkeypatch.setenv("PATH", str(tmp_path))  # git not found
    assert git_state() is None and provenance()["git"] is None


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_the_commit_and_whether_tracked_files_changed(tmp_path):
    def git(*args):
        return subprocess.run(["git", "-C", str(tmp_path), *args], check=True,
                              capture_output=True, text=True).stdout.strip()  # fmt: skip

    git("init", "-q")
    (tmp_path / "code.py").write_text("a = 1\n")
    git("add", "code.py")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first")
    state = git_state(tmp_path / "code.py")
    assert state == {"commit": git("rev-parse", "HEAD"), "dirty": False,
                     "root": os.path.realpath(tmp_path)}  # fmt: skip
    (tmp_path / "notes.txt").write_text("untracked: not the code")
    assert git_state(tmp_path / "code.py")["dirty"] is False
    assert git_state(tmp_path / "notes.txt") is None  # code not tracked: not the checkout's
    (tmp_path / "code.py").write_text("a = 2\n")
    assert git_state(tmp_path / "code.py")["dirty"] is True
