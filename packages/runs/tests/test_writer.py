"""Metric rows: metrics.jsonl and TensorBoard hold each step once, also after a resume."""

import json
import math
import os
import subprocess
import sys

import numpy as np
import pytest

from podracer.runs import MetricWriter
from podracer.runs import RunDir
from podracer.runs import read_tensorboard


def test_rows_go_to_jsonl_and_tensorboard(tmp_path):
    run = RunDir(tmp_path, "exp")
    writer = MetricWriter(run)
    writer.write(100, {"charts/episodic_return": np.float32(1.5), "losses/value": 0.25})
    writer.write(200, {"charts/episodic_return": 2.0, "charts/SPS": float("nan")})
    writer.close()
    rows = run.read_metrics()
    assert [r["env_steps"] for r in rows] == [100, 200] and rows[0]["losses/value"] == 0.25
    assert all(abs(r["time"] - rows[0]["time"]) < 60 for r in rows)
    assert math.isnan(rows[1]["charts/SPS"])
    scalars = read_tensorboard(run.tensorboard)
    assert ("charts/episodic_return", 100, 1.5) in scalars
    assert ("charts/episodic_return", 200, 2.0) in scalars
    assert not any(tag == "charts/SPS" for tag, _, _ in scalars)  # NaN is not written


def test_a_resume_replaces_later_rows_keeping_the_old_ones_aside(tmp_path):
    run = RunDir(tmp_path, "resume")
    writer = MetricWriter(run)
    for steps in (10, 20, 30, 40):
        writer.write(steps, {"x": steps})
    writer.close()
    # The run resumes from its checkpoint at step 20; steps 30 and 40 are replayed.
    writer = MetricWriter(run, truncate_after=20)
    writer.write(30, {"x": -30})
    writer.write(40, {"x": -40})
    writer.close()
    assert [(m["env_steps"], m["x"]) for m in run.read_metrics()] == [
        (10, 10), (20, 20), (30, -30), (40, -40)
    ]  # fmt: skip
    assert sorted(read_tensorboard(run.tensorboard)) == [
        ("x", 10, 10.0), ("x", 20, 20.0), ("x", 30, -30.0), ("x", 40, -40.0)
    ]  # fmt: skip
    # Nothing is deleted: the replaced rows and the old event files are kept aside.
    (aside,) = (tmp_path / "resume" / "replaced").iterdir()
    old = [json.loads(line) for line in (aside / "metrics.jsonl").read_text().splitlines()]
    assert [(m["env_steps"], m["x"]) for m in old] == [(30, 30), (40, 40)]
    assert sorted(read_tensorboard(aside / "tensorboard")) == [
        ("x", 10, 10.0), ("x", 20, 20.0), ("x", 30, 30.0), ("x", 40, 40.0)
    ]  # fmt: skip


def test_a_line_torn_by_a_crash_is_dropped_before_appending(tmp_path):
    run = RunDir(tmp_path, "torn")
    os.makedirs(run.path)
    with open(run.metrics_file, "w") as f:
        f.write('{"env_steps": 10, "x": 1.0}\n{"env_steps": 20, "x"')
    writer = MetricWriter(run, tensorboard=False)
    writer.write(30, {"x": 3.0})
    writer.close()
    assert [(m["env_steps"], m["x"]) for m in run.read_metrics()] == [(10, 1.0), (30, 3.0)]


def test_multi_seed_rows_carry_their_seed_and_a_tensorboard_run_each(tmp_path):
    run = RunDir(tmp_path, "seeds")
    writer = MetricWriter(run)
    for seed in range(3):
        writer.write(8, {"charts/episodic_return": float(seed)}, {"seed": seed})
    writer.close()
    assert [r["seed"] for r in run.read_metrics()] == [0, 1, 2]
    assert sorted(os.listdir(run.tensorboard)) == ["seed_0", "seed_1", "seed_2"]
    assert read_tensorboard(os.path.join(run.tensorboard, "seed_2")) == [
        ("charts/episodic_return", 8, 2.0)
    ]


def test_a_writer_without_a_run_dir_drops_everything():
    writer = MetricWriter(None)
    writer.write(1, {"x": 1.0})
    writer.close()


def test_wandb_offline_writes_its_files_and_continues_the_run_on_resume(tmp_path, monkeypatch):
    pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_SILENT", "true")
    run = RunDir(tmp_path, "wb")
    options = dict(project="podracer-test", entity=None, mode="offline", config={"seed": 3})
    writer = MetricWriter(run, tensorboard=False, wandb=options)
    writer.write(64, {"charts/episodic_return": 5.0})
    writer.close()
    with open(os.path.join(run.path, "wandb.json")) as f:
        run_id = json.load(f)["id"]
    offline = [
        d for d in os.listdir(os.path.join(run.path, "wandb")) if d.startswith("offline-run-")
    ]
    assert len(offline) == 1 and offline[0].endswith(run_id)
    files = os.listdir(os.path.join(run.path, "wandb", offline[0]))
    assert any(f.endswith(".wandb") for f in files)
    MetricWriter(run, tensorboard=False, wandb=options, truncate_after=64).close()
    with open(os.path.join(run.path, "wandb.json")) as f:
        assert json.load(f)["id"] == run_id  # the same W&B run


def test_tensorboard_loads_before_the_first_row_and_without_torch(tmp_path):
    """tensorboardX's package init imports torch when it is installed; the writer loads it
    when it opens (before a run's clock starts), with torch hidden, and leaves the process
    able to import torch after. A stand-in `torch` package records whether it was run."""
    import subprocess
    import sys

    fake = tmp_path / "site" / "torch"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text(
        "import os\nopen(os.environ['TORCH_MARK'], 'a').write('imported\\n')\nTensor = object\n"
    )
    mark = tmp_path / "mark"
    code = f"""
import sys
from podracer.runs import MetricWriter, RunDir
writer = MetricWriter(RunDir({str(tmp_path)!r}, "exp"))
assert "tensorboardX.event_file_writer" in sys.modules  # loaded by the constructor
assert "torch" not in sys.modules
writer.write(1, {{"x": 1.0}}); writer.close()
import torch  # the process can still import it
"""
    env = {**os.environ, "TORCH_MARK": str(mark)}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "site"), env.get("PYTHONPATH", "")])
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)
    assert mark.read_text() == "imported\n"  # once: by the last line, not by tensorboardX


def test_a_text_goes_to_every_tensorboard_run_and_not_among_the_scalars(tmp_path):
    from podracer.runs.writer import hyperparameter_table
    from podracer.runs.writer import read_tensorboard_text

    table = hyperparameter_table({"env": "a|b", "agent_config": {"lr": 0.1, "sizes": [64]}})
    assert table.splitlines() == ["|param|value|", "|-|-|", "|env|a\\|b|",
                                  "|agent_config.lr|0.1|", "|agent_config.sizes|[64]|"]  # fmt: skip
    run = RunDir(tmp_path, "seeds")
    writer = MetricWriter(run)
    writer.write(8, {"x": 0.0}, {"seed": 0})  # a TensorBoard run opened before the text
    writer.write_text("hyperparameters", table)
    for seed in range(2):
        writer.write(16, {"x": float(seed)}, {"seed": seed})
    writer.close()
    assert sorted(os.listdir(run.tensorboard)) == ["seed_0", "seed_1"]
    for seed in range(2):
        folder = os.path.join(run.tensorboard, f"seed_{seed}")
        assert read_tensorboard_text(folder) == [("hyperparameters", 0, table)]
        assert all(tag == "x" for tag, _, _ in read_tensorboard(folder))
    off = MetricWriter(RunDir(tmp_path, "off"), tensorboard=False)
    off.write_text("t", "x")  # nothing to write it to, as for other processes' writers
    off.close()
    MetricWriter(None).write_text("t", "x")
    assert not os.path.exists(os.path.join(tmp_path, "off", "tensorboard"))


OPEN_FILES = """
import resource, sys
from podracer.runs.writer import check_open_files
resource.setrlimit(resource.RLIMIT_NOFILE, (300, 2000))  # as `ulimit -n 300`, hard 2000
check_open_files(1200, "AnakinConfig")  # 1,200 members: raised to what they need
print("SOFT", resource.getrlimit(resource.RLIMIT_NOFILE)[0])
try:
    check_open_files(5000, "AnakinConfig")
except ValueError as e:
    print("ERROR", e)
"""


def test_a_sweep_s_event_files_raise_the_open_file_limit_or_are_one_line():
    child = subprocess.run([sys.executable, "-c", OPEN_FILES], capture_output=True, text=True,
                           timeout=60)  # fmt: skip
    assert child.returncode == 0, child.stderr
    soft, error = child.stdout.splitlines()
    assert soft == "SOFT 1456"  # 1,200 event files + OTHER_OPEN_FILES
    assert error.startswith("ERROR AnakinConfig.tensorboard: 5,000 members write 5,000 "
                            "TensorBoard event files, about 5,256 open files, and this process "
                            "may open at most 2,000 (ulimit -Hn)")  # fmt: skip
