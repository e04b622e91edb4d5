"""The compile cache through both runtimes' command lines (the harness's own tests are in
packages/runs/tests/test_compile_cache.py; these need podracer-anakin and -sebulba).

The run is a child process with no JAX_* cache variables (the suite's conftest sets some)
and an XDG_CACHE_HOME under the test's folder; hits are JAX's own signal, not timings.
"""

import os
import re
import subprocess
import sys

import pytest

from podracer.runs import parse_cli


def _env(tmp_path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_")}
    env.update(JAX_PLATFORMS="cpu", XDG_CACHE_HOME=str(tmp_path / "xdg"))
    return env


def _entries(path) -> list[str]:
    return sorted(n for n in os.listdir(path) if n.endswith("-cache"))


@pytest.mark.parametrize("runtime", ["anakin", "sebulba"])
def test_both_command_lines_have_the_flag_once(capsys, runtime):
    # One mechanism for both: `Run.open`, the first statement of both runtimes' `train`,
    # applies it (tested above on the harness; the Anakin run below is end to end).
    if runtime == "anakin":
        from podracer.anakin import AnakinConfig as config_cls
    else:
        from podracer.sebulba import SebulbaConfig as config_cls
    with pytest.raises(SystemExit):
        parse_cli(config_cls, ["--help"])
    assert capsys.readouterr().out.count("--compile-cache") == 1


@pytest.mark.slow
def test_a_tiny_anakin_run_loads_its_programs_on_its_second_start(tmp_path):
    cache = tmp_path / "cache"
    args = [sys.executable, "-m", "podracer.anakin.cli", "--env", "catch", "--num-envs", "8",
            "--rollout-length", "4", "--updates-per-chunk", "2", "--total-env-steps", "64",
            "--runs-root", str(tmp_path / "runs"), "--no-tensorboard", "--no-progress",
            "--compile-cache", str(cache)]  # fmt: skip
    summaries = []
    for _ in range(2):
        child = subprocess.run(args, env=_env(tmp_path), capture_output=True, text=True,
                               timeout=120)  # fmt: skip
        assert child.returncode == 0, child.stderr
        summaries.append(child.stdout.strip().splitlines()[-1])
        assert _entries(cache)
    compiled = [float(re.search(r"after ([\d.]+)s compile", s).group(1)) for s in summaries]
    assert "from the cache" not in summaries[0], summaries[0]
    # The init and the chunk at least (0.1 s and more to compile); the seconds, printed
    # on the same line, are the (shorter) time it took.
    hits = int(re.search(r"compile \((\d+) programs? from the cache\)", summaries[1]).group(1))
    assert hits >= 2, summaries[1]
    print(f"compile seconds, first and second start: {compiled}")
