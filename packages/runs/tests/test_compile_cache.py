"""JAX's persistent compilation cache (`RunConfig.compile_cache`, podracer.runs.compile_cache).

Each run is a child process: JAX's config and its cache are process-wide, and opened
once. The children get no JAX_* cache variables (the suite's conftest sets some) and an
XDG_CACHE_HOME under the test's folder, so "auto" never writes to the real home. Hits
are JAX's own signal (a `jax.monitoring` event per program loaded), not timings.
"""

import json
import os
import subprocess
import sys
import tempfile

import pytest

from podracer.runs import RunConfig
from podracer.runs import run_cli

# A run of the harness that compiles one program (0.4 s on a 2-core AMD EPYC, 4x the
# 0.1 s threshold: with 10 steps instead of 40 it took 0.107 s there, and a start could
# write no entry), then says what the cache did.
TOY = """
import json, sys
import jax, jax.numpy as jnp
from podracer.runs import Run, RunConfig
setting, runs_root, own = sys.argv[1:4]
if own:  # the program's own choice (its threshold too: podracer's is not applied then)
    jax.config.update("jax_compilation_cache_dir", own)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
config = RunConfig(compile_cache=setting, runs_root=runs_root, progress=False)
with Run.open(config, "toy") as run:
    f = jax.jit(lambda x: [x := jnp.tanh(x @ x + i) for i in range(40)][-1])
    f(jnp.ones((8, 8))).block_until_ready()
    hits = run.compile_cache_hits
print(json.dumps({"hits": hits, "dir": jax.config.jax_compilation_cache_dir}))
"""


def _env(tmp_path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_")}
    env.update(JAX_PLATFORMS="cpu", XDG_CACHE_HOME=str(tmp_path / "xdg"), **extra)
    return env


def _start(tmp_path, setting: str, own: str = "", **env: str) -> subprocess.Popen:
    script = tmp_path / "toy.py"
    script.write_text(TOY)
    runs_root = tempfile.mkdtemp(dir=tmp_path)  # one each: children may run at once
    args = [sys.executable, str(script), setting, runs_root, own]
    return subprocess.Popen(args, env=_env(tmp_path, **env), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip


def _finish(child: subprocess.Popen) -> tuple[dict, str]:
    out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1]), err


def _toy(tmp_path, setting: str, own: str = "", **env: str) -> dict:
    return _finish(_start(tmp_path, setting, own, **env))[0]


def _entries(path, program: str = "") -> list[str]:
    """The cache's entries (of jitted `program`'s name): which other small programs pass
    the compile-time threshold depends on the machine's load."""
    return sorted(n for n in os.listdir(path) if n.endswith("-cache") and program in n)


def test_a_second_start_loads_its_program_from_the_cache(tmp_path):
    cache = tmp_path / "cache"
    first = _toy(tmp_path, str(cache))
    assert first == {"hits": 0, "dir": str(cache)}
    assert len(_entries(cache, "jit__lambda")) == 1
    assert _toy(tmp_path, str(cache))["hits"] >= 1


def test_auto_is_jax_s_env_var_else_the_user_cache_folder(tmp_path):
    auto = tmp_path / "xdg" / "podracer" / "jax"
    assert _toy(tmp_path, "auto")["dir"] == str(auto) and _entries(auto)
    from_env = tmp_path / "from-env"
    assert _toy(tmp_path, "auto", JAX_COMPILATION_CACHE_DIR=str(from_env))["dir"] == str(from_env)
    assert _entries(from_env)
    # An explicit folder is the run's choice over the environment's.
    flag = tmp_path / "flag"
    assert _toy(tmp_path, str(flag), JAX_COMPILATION_CACHE_DIR=str(from_env))["dir"] == str(flag)


def test_none_writes_nothing_even_with_jax_s_env_var(tmp_path):
    from_env = tmp_path / "from-env"
    assert _toy(tmp_path, "none", JAX_COMPILATION_CACHE_DIR=str(from_env)) == {
        "hits": 0, "dir": None,
    }  # fmt: skip
    assert not from_env.exists() and not (tmp_path / "xdg").exists()


def test_a_cache_folder_the_program_set_wins(tmp_path):
    own, flag = tmp_path / "own", tmp_path / "flag"
    assert _toy(tmp_path, str(flag), own=str(own))["dir"] == str(own)
    assert _entries(own) and not flag.exists()


def test_two_processes_starting_at_once_share_an_empty_cache(tmp_path):
    # JAX writes entries in place (no temporary file and rename): both compile and write
    # the same key; the entry must end whole, and a third start must load it.
    cache = tmp_path / "cache"
    children = [_start(tmp_path, str(cache)) for _ in range(2)]
    for child in children:
        assert _finish(child)[0]["dir"] == str(cache)
    assert len(_entries(cache, "jit__lambda")) == 1
    result, err = _finish(_start(tmp_path, str(cache)))
    assert result["hits"] >= 1 and "Error reading" not in err, err


@pytest.mark.parametrize("kind", ["file", "under a file", "read-only"])
def test_a_folder_that_cannot_hold_the_cache_is_refused_in_one_line(
    tmp_path, capsys, toy_train, kind
):
    if kind == "read-only" and os.geteuid() == 0:
        pytest.skip("root writes anywhere")
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    path = {"file": blocker, "under a file": blocker / "cache", "read-only": tmp_path / "ro"}[kind]
    if kind == "read-only":
        path.mkdir(mode=0o500)
    args = ["--compile-cache", str(path), "--runs-root", str(tmp_path / "runs"), "--no-progress"]
    assert run_cli(RunConfig, toy_train, args) == 2  # before Run.open changes JAX's config
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith(
        f"run: error: RunConfig.compile_cache must be a folder, 'auto' or 'none', got '{path}': "
    )
    assert not (tmp_path / "runs").exists()


def test_an_empty_name_is_refused_when_the_config_is_built():
    with pytest.raises(ValueError, match=r"RunConfig.compile_cache must be a folder, 'auto' or"):
        RunConfig(compile_cache="")


def test_the_cache_may_change_on_resume():
    assert "compile_cache" in RunConfig.MAY_CHANGE_ON_RESUME
