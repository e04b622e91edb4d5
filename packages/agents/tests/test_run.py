"""Run directories, metric writers and the progress line."""

import dataclasses
import io
import json
import os

import jax.numpy as jnp
import numpy as np
import pytest

from podracer.agents import MetricWriter
from podracer.agents import PPOConfig
from podracer.agents import Progress
from podracer.agents import RunDir
from podracer.agents import to_jsonable


def test_to_jsonable_handles_configs_tuples_and_scalars():
    assert to_jsonable({"a": (1, np.int64(2)), 3: jnp.float32(0.5)}) == {"a": [1, 2], "3": 0.5}
    as_json = to_jsonable(PPOConfig())
    assert as_json["hidden_sizes"] == [64, 64] and as_json["clip_eps"] == 0.2
    assert json.loads(json.dumps(as_json)) == as_json
    assert len(as_json) == len(dataclasses.fields(PPOConfig))


def test_run_dir_writes_config_and_metrics(tmp_path):
    run = RunDir(tmp_path, "exp1")
    assert not run.exists()
    run.write_config({"agent": "ppo", "config": PPOConfig(num_epochs=2)})
    assert run.exists() and run.read_config()["config"]["num_epochs"] == 2
    assert os.listdir(run.path) == ["config.json"]  # no temporary file left behind
    writer = MetricWriter(run)
    writer.write(
        100, {"charts/episodic_return": jnp.float32(1.5), "losses/value": np.float64(0.25)}
    )
    writer.write(200, {"charts/episodic_return": 2.0, "charts/SPS": float("nan")})
    writer.close()
    with open(run.metrics_file) as f:
        lines = f.read().splitlines()
    assert json.loads(lines[0]) == {
        "env_steps": 100,
        "charts/episodic_return": 1.5,
        "losses/value": 0.25,
    }
    assert run.read_metrics()[1]["env_steps"] == 200 and np.isnan(
        run.read_metrics()[1]["charts/SPS"]
    )
    events = [f for f in os.listdir(os.path.join(run.path, "tensorboard")) if "tfevents" in f]
    assert (
        len(events) == 1 and os.path.getsize(os.path.join(run.path, "tensorboard", events[0])) > 0
    )


def test_truncate_after_drops_lines_logged_after_the_checkpoint(tmp_path):
    run = RunDir(tmp_path, "resume")
    writer = MetricWriter(run, tensorboard=False)
    for steps in (10, 20, 30, 40):
        writer.write(steps, {"x": steps})
    writer.close()
    writer = MetricWriter(run, tensorboard=False, truncate_after=20)
    writer.write(30, {"x": -30})
    writer.close()
    assert [(m["env_steps"], m["x"]) for m in run.read_metrics()] == [(10, 10), (20, 20), (30, -30)]
    assert not os.path.exists(os.path.join(run.path, "tensorboard"))


def test_truncate_after_survives_a_line_torn_by_a_crash(tmp_path):
    run = RunDir(tmp_path, "torn")
    os.makedirs(run.path)
    with open(run.metrics_file, "w") as f:
        f.write('{"env_steps": 10, "x": 1.0}\n{"env_steps": 20, "x"')  # killed mid-write
    assert run.read_metrics() == [{"env_steps": 10, "x": 1.0}]
    writer = MetricWriter(run, tensorboard=False)  # resuming without truncation
    writer.write(30, {"x": 3.0})
    writer.close()
    assert run.read_metrics() == [{"env_steps": 10, "x": 1.0}, {"env_steps": 30, "x": 3.0}]
    MetricWriter(run, tensorboard=False, truncate_after=20).close()
    assert run.read_metrics() == [{"env_steps": 10, "x": 1.0}]


def test_writer_without_a_run_dir_drops_everything():
    writer = MetricWriter(None)
    writer.write(1, {"x": 1.0})
    writer.close()


def test_run_name_must_be_a_folder_name(tmp_path):
    with pytest.raises(ValueError, match="run name"):
        RunDir(tmp_path, "a/b")
    with pytest.raises(ValueError, match="run name"):
        RunDir(tmp_path, "")


def test_progress_prints_steps_sps_and_return_when_piped():
    stream = io.StringIO()
    progress = Progress(1000, stream=stream)
    progress.update(500, 1234.0, 7.5)  # first line always printed
    progress.update(600, 1234.0, 8.0)  # throttled when not a terminal
    progress.update(1000, 2000.0, float("nan"), loss=0.125)  # the last one always printed
    progress.close()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 2
    assert "500/1,000 steps" in lines[0] and "1,234 SPS" in lines[0] and "7.50" in lines[0]
    assert "[##########----------]" in lines[0]
    assert "n/a" in lines[1] and "loss 0.125" in lines[1]
    Progress(10, enabled=False, stream=stream).update(5, 1.0)
    assert len(stream.getvalue().splitlines()) == 2
