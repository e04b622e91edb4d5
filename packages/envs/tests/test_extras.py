"""An extra's install command: uv's in this project's checkout, pip's when installed."""

import pathlib
import subprocess

from podracer.envs import extras


def test_in_the_checkout_the_command_is_uv_s_and_it_knows_the_extra():
    assert extras.workspace_root() == pathlib.Path(__file__).resolve().parents[3]
    command = extras.install_command("podracer-runs", "plot")
    assert command == "uv sync --inexact --all-packages --extra plot"
    # The command names an extra uv knows (a dry run changes nothing).
    done = subprocess.run([*command.split(), "--locked", "--dry-run"], capture_output=True,
                          text=True, cwd=extras.workspace_root())  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_installed_from_an_index_the_command_is_pip_s(monkeypatch):
    monkeypatch.setattr(extras, "workspace_root", lambda: None)
    assert extras.install_command("podracer-runs", "plot") == "pip install 'podracer-runs[plot]'"


def test_a_folder_that_is_not_this_checkout_is_not_taken_for_one(tmp_path, monkeypatch):
    fake = tmp_path / "site-packages" / "podracer" / "envs" / "extras.py"
    monkeypatch.setattr(extras, "__file__", str(fake))
    extras.workspace_root.cache_clear()
    try:
        assert extras.workspace_root() is None
    finally:
        extras.workspace_root.cache_clear()
