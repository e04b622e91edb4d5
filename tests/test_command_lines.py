"""Both runtimes' command lines as a shell runs them: `--help` of the chosen agent only,
and a reader that leaves early (`| head`) ends them quietly."""

import subprocess
import sys

import pytest


@pytest.mark.parametrize("runtime", ["anakin", "sebulba"])
def test_help_piped_into_a_reader_that_stops_early_is_quiet(runtime):
    # The reader is gone before the help is written (the command takes a second to start).
    command = f"{sys.executable} -m podracer.{runtime}.cli --agent muzero --help | true"
    child = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in child.stderr and "BrokenPipe" not in child.stderr, child.stderr


@pytest.mark.parametrize("runtime", ["anakin", "sebulba"])
def test_help_shows_the_chosen_agent_s_flags(runtime):
    args = [sys.executable, "-m", f"podracer.{runtime}.cli", "--agent", "ppo", "--help"]
    out = subprocess.run(args, capture_output=True, text=True, timeout=120).stdout
    assert "--ppo.learning-rate" in out and "--muzero." not in out and "--impala." not in out
