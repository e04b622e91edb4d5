"""Run directories: paths, atomic config, metrics that survive a torn line, CleanRL names."""

import json
import os

import pytest

from podracer.agents import PPOConfig
from podracer.runs import RunDir
from podracer.runs import auto_name
from podracer.runs import to_jsonable


def test_to_jsonable_handles_configs_tuples_and_scalars():
    import jax.numpy as jnp
    import numpy as np

    assert to_jsonable({"a": (1, np.int64(2)), 3: jnp.float32(0.5)}) == {"a": [1, 2], "3": 0.5}
    as_json = to_jsonable(PPOConfig())
    assert as_json["hidden_sizes"] == [64, 64] and as_json["clip_eps"] == 0.2
    assert list(as_json)[:2] == ["learning_rate", "anneal_lr"]  # field order kept


def test_config_is_written_atomically_and_read_back(tmp_path):
    run = RunDir(tmp_path, "exp1")
    assert not run.exists()
    run.write_config({"agent": "ppo", "config": to_jsonable(PPOConfig(num_epochs=2))})
    assert run.exists() and run.read_config()["config"]["num_epochs"] == 2
    assert os.listdir(run.path) == ["config.json"]  # no temporary file left behind
    assert RunDir.at(run.path).path == run.path


def test_a_garbled_config_is_reported_with_its_path(tmp_path):
    run = RunDir(tmp_path, "bad")
    os.makedirs(run.path)
    (tmp_path / "bad" / "config.json").write_text('{"env": ')
    with pytest.raises(ValueError, match=r"bad/config.json is not valid JSON"):
        run.read_config()
    with pytest.raises(FileNotFoundError, match="not a run directory"):
        RunDir(tmp_path, "none").read_config()


def test_metrics_leave_out_a_line_torn_by_a_crash(tmp_path):
    run = RunDir(tmp_path, "torn")
    os.makedirs(run.path)
    with open(run.metrics_file, "w") as f:
        f.write('{"env_steps": 10, "x": 1.0}\n{"env_steps": 20, "x"')  # killed mid-write
    assert run.read_metrics() == [{"env_steps": 10, "x": 1.0}]


def test_resumes_are_appended_one_line_each(tmp_path):
    run = RunDir(tmp_path, "r")
    os.makedirs(run.path)
    run.append_resume({"changes": {"total_env_steps": [1, 2]}})
    run.append_resume({"changes": {}})
    with open(run.resumes_file) as f:
        lines = [json.loads(x) for x in f]
    assert lines == [{"changes": {"total_env_steps": [1, 2]}}, {"changes": {}}]


def test_run_names_must_be_folder_names(tmp_path):
    for name in ("a/b", "", ".."):
        with pytest.raises(ValueError, match="run name"):
            RunDir(tmp_path, name)


def test_auto_names_follow_cleanrl_and_never_reuse_a_folder(tmp_path):
    name = auto_name("gymnax:CartPole-v1", "ppo", 3, tmp_path, now=1700000000.5)
    assert name == "gymnax-CartPole-v1__ppo__3__1700000000"
    os.makedirs(tmp_path / name)
    assert auto_name("gymnax:CartPole-v1", "ppo", 3, tmp_path, now=1700000000) == name + "-1"


def test_the_run_lock_is_a_filelock_held_until_release(tmp_path):
    import filelock

    from podracer.runs.directory import RunInUse

    run = RunDir(tmp_path, "held")
    held = run.lock()
    assert isinstance(held.lock, filelock.FileLock) and held.lock.is_locked
    with pytest.raises(RunInUse, match=rf"in use by pid {os.getpid()} on host"):
        run.lock()
    with pytest.raises(filelock.Timeout):  # what another filelock user sees
        filelock.FileLock(run.lock_file).acquire(blocking=False)
    held.release()
    assert os.listdir(tmp_path) == []  # no lock file left behind
    run.lock().release()  # free again


def test_a_killed_holder_s_lock_file_is_taken_over(tmp_path):
    run = RunDir(tmp_path, "stale")
    (tmp_path / ".stale.lock").write_text("pid 1 on host gone\n")  # flock died with it
    held = run.lock()
    assert (tmp_path / ".stale.lock").read_text().startswith(f"pid {os.getpid()} on host")
    held.release()


def test_a_lock_held_by_another_process_names_it(tmp_path):
    import subprocess
    import sys

    from podracer.runs.directory import RunInUse

    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from podracer.runs.directory import RunDir; "
         f"lock = RunDir({str(tmp_path)!r}, 'x').lock(); print('held', flush=True); "
         "sys.stdin.read(); lock.release()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline() == "held\n"
        with pytest.raises(RunInUse, match=rf"in use by pid {holder.pid} on host"):
            RunDir(tmp_path, "x").lock()
    finally:
        holder.communicate("", timeout=60)
    assert holder.returncode == 0 and os.listdir(tmp_path) == []
    RunDir(tmp_path, "x").lock().release()
