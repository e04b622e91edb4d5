"""The run lifecycle (`Run`) on a toy loop: names, reuse, resume checks, fallback, signals.

The toy runtime below is what Anakin's and Sebulba's `train` look like with the loop
body replaced by one numpy update, so every rule of the harness is tested in
milliseconds; the runtimes' own tests run the same rules through their real loops.
"""

import json
import os
import platform
import signal
import subprocess
import sys

import numpy as np
import pytest

from podracer.agents import ImpalaConfig
from podracer.agents import QLambdaConfig
from podracer.agents.validation import ConfigError
from podracer.runs import CheckpointError
from podracer.runs import RunConfig
from podracer.runs import RunResult
from podracer.runs import final_return
from podracer.runs import to_jsonable
from podracer.runs.tools.aggregate import final_value

STEPS = 10  # env steps per loop step of the toy runtime (conftest.toy_train)


def toy(tmp_path, **changes) -> RunConfig:
    fields = dict(total_env_steps=5 * STEPS, runs_root=str(tmp_path), progress=False,
                  tensorboard=False, run_name="toy")  # fmt: skip
    return RunConfig(**{**fields, **changes})


def steps_logged(path) -> list[int]:
    with open(os.path.join(path, "metrics.jsonl")) as f:
        return [json.loads(line)["env_steps"] for line in f]


def test_a_run_writes_its_config_metrics_and_final_checkpoint(tmp_path, toy_train):
    result = toy_train(toy(tmp_path, checkpoint_interval=2 * STEPS))
    assert result.env_steps == 50 and result.steps == 5 and not result.interrupted
    stored = json.loads((tmp_path / "toy" / "config.json").read_text())
    assert stored["runtime"] == "toy" and stored["agent_config"] == to_jsonable(QLambdaConfig())
    assert steps_logged(result.run_dir) == [10, 20, 30, 40, 50]
    assert sorted(os.listdir(tmp_path / "toy" / "checkpoints")) == ["2", "4", "5"]
    assert final_return(result, last=2) == 4.5


def test_compile_time_is_the_first_step_beyond_a_typical_one(tmp_path, toy_train):
    # Step 1 compiles; the last one also evaluates and saves, which is not compiling.
    result = toy_train(toy(tmp_path), pause=[0.6, 0.01, 0.01, 0.01, 0.6])
    assert 0.5 < result.compile_seconds < 0.7, result.compile_seconds


def test_without_a_name_the_run_gets_a_new_one(tmp_path, toy_train):
    first = toy_train(toy(tmp_path, run_name=None, seed=3))
    second = toy_train(toy(tmp_path, run_name=None, seed=3))
    assert os.path.basename(first.run_dir).startswith("catch__qlambda__3__")
    assert first.run_dir != second.run_dir and os.path.exists(second.run_dir + "/config.json")


def test_reusing_a_name_is_refused_before_anything_is_written(tmp_path, toy_train):
    toy_train(toy(tmp_path))
    before = {p: os.path.getmtime(tmp_path / "toy" / p) for p in ("config.json", "metrics.jsonl")}
    with pytest.raises(ConfigError, match=r"run_name='toy' names an existing run .*--resume"):
        toy_train(toy(tmp_path, seed=1))
    assert before == {p: os.path.getmtime(tmp_path / "toy" / p) for p in before}
    os.makedirs(tmp_path / "mine")
    (tmp_path / "mine" / "notes.txt").write_text("a file the user wrote")
    with pytest.raises(ConfigError, match="not a run directory"):
        toy_train(toy(tmp_path, run_name="mine"))


def test_resuming_a_run_that_does_not_exist_is_an_error(tmp_path, toy_train):
    toy_train(toy(tmp_path, run_name="cartpole-1"))
    with pytest.raises(ConfigError, match=r"no run 'cartpol-1' .*did you mean \['cartpole-1'\]"):
        toy_train(toy(tmp_path, run_name="cartpol-1", resume=True))


def test_a_resume_continues_where_the_run_stopped(tmp_path, toy_train):
    toy_train(toy(tmp_path, total_env_steps=30))
    result = toy_train(toy(tmp_path, total_env_steps=60, resume=True, eval_interval=20))
    np.testing.assert_array_equal(result.state["w"], [6.0, 6.0])  # 3 steps, then 3 more
    assert [h["env_steps"] for h in result.history] == [40, 50, 60]
    assert steps_logged(result.run_dir) == [10, 20, 30, 40, 50, 60]
    (record,) = [
        json.loads(x) for x in (tmp_path / "toy" / "resumes.jsonl").read_text().splitlines()
    ]
    assert record["restored"] == {"env_steps": 30, "step": 3}
    assert record["changes"] == {"total_env_steps": [30, 60], "eval_interval": [0, 20]}
    assert json.loads((tmp_path / "toy" / "config.json").read_text())["total_env_steps"] == 60


def test_a_resumed_runs_final_return_is_the_whole_runs_as_plot_reads_it(tmp_path, toy_train):
    # The summary printed 18.31 for a resumed Pong run whose metrics.jsonl plotted 18.52:
    # it averaged the last 10% of this session's steps, not of the run's.
    toy_train(toy(tmp_path, total_env_steps=30))
    result = toy_train(toy(tmp_path, total_env_steps=60, resume=True))
    assert [r["env_steps"] for r in result.earlier] == [10, 20, 30]
    rows = [json.loads(x) for x in (tmp_path / "toy" / "metrics.jsonl").read_text().splitlines()]
    steps = np.array([r["env_steps"] for r in rows])
    values = np.array([r["charts/episodic_return"] for r in rows])
    # Rows 40-60; this session's last half (50, 60) alone would say 5.5.
    assert final_return(result, 0.5) == final_value(steps, values, 0.5) == 5.0


def test_a_resume_that_changes_what_is_learned_is_refused_naming_each_field(tmp_path, toy_train):
    toy_train(toy(tmp_path, total_env_steps=30))
    changed = toy(tmp_path, resume=True, seed=4, agent="impala", agent_config=ImpalaConfig())
    with pytest.raises(ConfigError) as info:
        toy_train(changed)
    message = str(info.value)
    assert "agent: 'qlambda' -> 'impala'" in message and "seed: 0 -> 4" in message
    assert "agent_config.lambda_: 0.9 -> 1.0" in message
    lr = toy(tmp_path, resume=True, agent_config=QLambdaConfig(learning_rate=0.5))
    with pytest.raises(ConfigError, match=r"agent_config.learning_rate: 0.001 -> 0.5"):
        toy_train(lr)


def test_a_resume_says_when_rows_the_run_logged_were_deleted(tmp_path, toy_train, capsys):
    toy_train(toy(tmp_path, total_env_steps=30))
    metrics = tmp_path / "toy" / "metrics.jsonl"
    metrics.write_text(metrics.read_text().splitlines(keepends=True)[-1])  # 2 of 3 deleted
    capsys.readouterr()
    toy_train(toy(tmp_path, total_env_steps=40, resume=True))
    assert ("toy: metrics.jsonl holds 1 rows up to env step 30, where the run had logged 3: "
            "rows deleted from it are not made again") in capsys.readouterr().err  # fmt: skip
    toy_train(toy(tmp_path, total_env_steps=50, resume=True))  # nothing deleted since
    assert "deleted" not in capsys.readouterr().err


@pytest.mark.parametrize("line", ["{garbled", "[1, 2]", '"a string"'])
def test_a_resume_of_a_run_whose_records_were_edited_is_refused_before_anything_is_written(
    tmp_path, toy_train, line
):
    toy_train(toy(tmp_path, total_env_steps=30))
    run = tmp_path / "toy"
    metrics = run / "metrics.jsonl"
    metrics.write_text(metrics.read_text() + line + "\n" + '{"env_steps": 40}\n')
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    with pytest.raises(ConfigError) as info:
        toy_train(toy(tmp_path, total_env_steps=60, resume=True))
    assert str(info.value).startswith(f"RunConfig.resume: {metrics}:4: not a JSON object")
    assert "\n" not in str(info.value)
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before  # no resume


@pytest.mark.parametrize("damage", ["truncated", "garbled metadata"])
def test_a_checkpoint_that_does_not_restore_falls_back_to_the_previous(
    tmp_path, capsys, damage, toy_train
):
    toy_train(toy(tmp_path, total_env_steps=30, checkpoint_interval=10))
    newest = tmp_path / "toy" / "checkpoints" / "3"
    if damage == "truncated":
        for root, _, files in os.walk(newest / "train"):
            for name in files:
                if os.path.basename(root) == "d":
                    os.truncate(os.path.join(root, name), 3)
    else:
        (newest / "metadata" / "metadata").write_text("{not json")
    result = toy_train(toy(tmp_path, total_env_steps=50, resume=True))
    err = capsys.readouterr().err
    assert f"skipping checkpoint {newest}" in err
    np.testing.assert_array_equal(result.state["w"], [5.0, 5.0])  # 2 restored + 3
    assert (tmp_path / "toy" / "checkpoints" / "3.corrupt").is_dir()
    assert steps_logged(result.run_dir) == [10, 20, 30, 40, 50]  # step 30 once


def test_a_resume_is_checked_against_the_checkpoint_s_config_not_the_editable_file(
    tmp_path, toy_train
):
    toy_train(toy(tmp_path, total_env_steps=30))
    # config.json edited by hand (learning rate 0.001 -> 0.5), then resumed from it.
    path = tmp_path / "toy" / "config.json"
    stored = json.loads(path.read_text())
    stored["agent_config"]["learning_rate"] = 0.5
    path.write_text(json.dumps(stored))
    edited = toy(tmp_path, resume=True, agent_config=QLambdaConfig(learning_rate=0.5))
    with pytest.raises(ConfigError) as info:
        toy_train(edited)
    assert "checkpoint 3 was trained with" in str(info.value)
    assert "agent_config.learning_rate: 0.001 -> 0.5" in str(info.value)
    # The file put back, an allowed change is recorded, compared with the checkpoint's.
    stored["agent_config"]["learning_rate"] = 0.001
    path.write_text(json.dumps(stored))
    toy_train(toy(tmp_path, resume=True, total_env_steps=50))
    resumes = [json.loads(x) for x in (tmp_path / "toy" / "resumes.jsonl").read_text().splitlines()]
    assert resumes[-1]["changes"]["total_env_steps"] == [30, 50]


def test_a_run_whose_every_checkpoint_is_unreadable_is_refused_not_restarted(tmp_path, toy_train):
    toy_train(toy(tmp_path, total_env_steps=30, checkpoint_interval=10))
    for step in ("1", "2", "3"):
        (tmp_path / "toy" / "checkpoints" / step / "metadata" / "metadata").write_text("{")
    rows = steps_logged(str(tmp_path / "toy"))
    for _ in range(2):  # the first resume moves them aside; the second must not start over
        with pytest.raises(CheckpointError, match="no checkpoint of .* restores"):
            toy_train(toy(tmp_path, total_env_steps=50, resume=True))
    assert steps_logged(str(tmp_path / "toy")) == rows == [10, 20, 30]


def test_the_wall_clock_budget_ends_the_run_with_a_final_checkpoint(tmp_path, toy_train):
    result = toy_train(toy(tmp_path, total_env_steps=10**6, max_wall_seconds=0.05), pause=0.02)
    assert 1 <= result.steps < 100 and not result.interrupted
    assert os.listdir(tmp_path / "toy" / "checkpoints") == [str(result.steps)]


def test_each_session_of_a_resumed_run_has_its_own_wall_clock_budget(tmp_path, toy_train):
    """`--max-wall-seconds` with `--resume` runs that long again (a long run as bounded
    sessions joined by resumes), not only what the first session left of it."""
    # A budget well above a restore's time (0.3 s here, over 1 s under load; at 2.5 s a
    # loaded machine once left the resumed session fewer than 3 steps).
    first = toy_train(toy(tmp_path, total_env_steps=10**6, max_wall_seconds=4.0), pause=0.05)
    assert 3 <= first.steps < 160
    second = toy_train(toy(tmp_path, total_env_steps=10**6, max_wall_seconds=4.0, resume=True),
                       pause=0.05)  # fmt: skip
    assert second.steps >= first.steps + 3, (first.steps, second.steps)
    elapsed = [result.history[-1]["timing/elapsed"] for result in (first, second)]
    assert elapsed[1] > elapsed[0] + 1.0  # the run's clock still adds the sessions up


SIGNALLED = """
import os, signal, sys, threading, time
sys.path.insert(0, sys.argv[1])
from conftest import toy_train
from podracer.runs import RunConfig
from podracer.runs import RunResult
root, signals, pause = sys.argv[2], sys.argv[3].split(","), float(sys.argv[4])
def send():
    while not os.path.exists(os.path.join(root, "toy", "metrics.jsonl")):
        time.sleep(0.01)
    # The file appears as the run opens; a fifth of a step later the loop is in a step's
    # pause, where Python runs a handler at once. (Sent during start-up, two signals could
    # both arrive inside one long C call before the handler ran, and count as one.)
    time.sleep(pause / 5)
    for name in signals:
        os.kill(os.getpid(), getattr(signal, name))
        time.sleep(max(0.3, pause / 5))
threading.Thread(target=send, daemon=True).start()
result = toy_train(RunConfig(total_env_steps=10**6, runs_root=root, run_name="toy",
                             progress=False, tensorboard=False), pause=pause)
print("RESULT", result.steps, result.interrupted)
"""


def run_signalled(tmp_path, *signals, pause=0.05):
    return subprocess.run(
        [sys.executable, "-c", SIGNALLED, os.path.dirname(__file__), str(tmp_path),
         ",".join(signals), str(pause)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM"])
def test_a_signal_ends_the_run_after_the_step_with_a_checkpoint(tmp_path, name):
    child = run_signalled(tmp_path, name)
    assert child.returncode == 0, child.stderr[-2000:]
    assert "Traceback" not in child.stderr
    _, steps, interrupted = child.stdout.split()
    assert interrupted == "True"
    assert os.listdir(tmp_path / "toy" / "checkpoints") == [steps]
    assert f"interrupted at env step {int(steps) * STEPS:,}" in child.stderr
    assert "Resume with: toy --run-name toy --runs-root" in child.stderr


@pytest.mark.slow
def test_a_second_signal_exits_at_once(tmp_path):
    child = run_signalled(tmp_path, "SIGTERM", "SIGTERM", pause=5.0)  # both within a step
    assert child.returncode == 128 + signal.SIGTERM, child.stderr[-2000:]
    assert "second SIGTERM: exiting now" in child.stderr and "Traceback" not in child.stderr


STARTING = """
import signal, sys
from podracer.runs import Run, RunConfig, signals
signals.install()  # as a command line's first act
config = RunConfig(runs_root=sys.argv[1], run_name="toy", progress=False, tensorboard=False)
compiling = [sys.argv[2]]
with Run.open(config, "toy") as run:
    run.waiting(lambda: compiling[0] or None)
    signal.raise_signal(signal.SIGTERM)  # handled before it returns
    compiling[0] = None  # the work ended after the line was printed
    try:
        run.begin(None, "compiling ...")
    except signals.Interrupted as e:
        print("INTERRUPTED", e.signum)
"""


@pytest.mark.parametrize("waiting", ["", "XLA has compiled the chunk"])
def test_a_start_up_signal_is_one_line_that_says_what_the_exit_waits_for(tmp_path, waiting):
    # A runtime compiling on another thread (Anakin's `ChunkAhead`) cannot exit before XLA
    # ends; the signal's own line says so, and nothing is written.
    child = subprocess.run([sys.executable, "-c", STARTING, str(tmp_path), waiting],
                           capture_output=True, text=True, timeout=120)  # fmt: skip
    assert child.stdout.split() == ["INTERRUPTED", str(int(signal.SIGTERM))], child.stderr
    (line,) = child.stderr.strip().splitlines()
    done = "exiting once XLA has compiled the chunk" if waiting else "stopping"
    said = "SIGTERM before training began: nothing was written"
    assert line == f"{said}; {done} (again to exit at once)"
    assert os.listdir(tmp_path) == []


def test_a_run_is_held_by_one_process_at_a_time(tmp_path, toy_train):
    from podracer.runs import Run

    with Run.open(toy(tmp_path), "toy"):
        for resume in (False, True):  # a second start, or a resume, while it trains
            with pytest.raises(ConfigError, match=rf"in use by pid {os.getpid()} on host"):
                toy_train(toy(tmp_path, resume=resume))
    toy_train(toy(tmp_path))  # released on close
    with Run.open(toy(tmp_path, resume=True, total_env_steps=8 * STEPS), "toy"):
        pass
    toy_train(toy(tmp_path, resume=True, total_env_steps=8 * STEPS))  # released again
    assert steps_logged(tmp_path / "toy")[-1] == 80
    assert sorted(os.listdir(tmp_path)) == ["toy"]  # no lock file left behind


def test_a_runs_root_that_cannot_hold_a_run_is_one_line(tmp_path, toy_train):
    (tmp_path / "file").write_text("a user's file")
    with pytest.raises(ConfigError, match="runs_root=.* is a file, not a folder"):
        toy_train(toy(tmp_path / "file"))
    with pytest.raises(ConfigError, match="cannot hold run .*File name too long"):
        toy_train(toy(tmp_path, run_name="x" * 300))
    assert (tmp_path / "file").read_text() == "a user's file"


# Two command lines started at once on one run name: one trains it, the other is refused
# (by the lock while both run, or as an existing run if the first already ended).
_RACER = """
import sys
from podracer.runs import RunConfig
from podracer.runs import RunResult
from podracer.runs.cli import run_cli
sys.path.insert(0, {tests!r})
from conftest import toy_train
sys.exit(run_cli(RunConfig, lambda c: toy_train(c, pause=0.05),
                 ["--run-name", "raced", "--runs-root", {root!r}, "--total-env-steps", "400",
                  "--no-progress", "--no-tensorboard"]))
"""


@pytest.mark.slow
def test_two_processes_started_at_once_on_one_name_never_mix(tmp_path):
    code = _RACER.format(tests=os.path.dirname(__file__), root=str(tmp_path))
    racers = [subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True)
              for _ in range(2)]  # fmt: skip
    results = [(r.wait(timeout=120), r.stderr.read()) for r in racers]
    for r in racers:
        r.stderr.close()
    assert sorted(code for code, _ in results) == [0, 2], results
    refused = next(err for code, err in results if code == 2)
    assert "in use by pid" in refused or "names an existing run" in refused, refused
    assert steps_logged(tmp_path / "raced") == list(range(10, 410, 10))


def test_the_final_return_is_the_plot_s_each_seed_s_last_tenth_then_the_mean():
    # Seed 0 ends 10, 20, ..., 100 over steps 100..1000; seed 1 ends at 0.
    history = [{"env_steps": s, "seed": k, "charts/episodic_return": float(s / 10 * (1 - k))}
               for s in range(100, 1001, 100) for k in (0, 1)]  # fmt: skip
    result = RunResult(None, history, 1000, 10, 1.0, 0.0, False, "")
    # The last 10% of steps 100..1000 is >= 910: only step 1000 (100 and 0).
    assert final_return(result) == 50.0
    assert final_return(result, last=2) == (95.0 + 0.0) / 2


def test_a_run_result_s_repr_is_a_short_summary_naming_the_run_dir(tmp_path, toy_train):
    result = toy_train(toy(tmp_path))
    big = result._replace(
        state={"params": np.zeros((1000, 1000), np.float32)},
        history=[{"env_steps": s, "seed": k, "charts/episodic_return": 1.0}
                 for s in range(10, 10_001, 10) for k in range(4)],
    )  # fmt: skip
    for r in (result, big):
        text = repr(r)
        assert len(text) < 400 and "\n" not in text, text
        assert repr(result.run_dir) in text and "env_steps=" in text and "sps=" in text
    assert "members=4" in repr(big) and "final_return=1" in repr(big)
    assert "members=1" in repr(result) and "final_return=5," in repr(result)


def test_a_run_records_its_provenance_and_a_resume_adds_its_own(tmp_path, toy_train):
    toy_train(toy(tmp_path, total_env_steps=30))
    first = (tmp_path / "toy" / "provenance.json").read_text()
    record = json.loads(first)
    assert record["argv"] == sys.argv and record["python"] == platform.python_version()
    assert {"podracer-runs", "jax", "jaxlib"} <= record["packages"].keys()
    assert "git" in record and "time" in record
    toy_train(toy(tmp_path, total_env_steps=50, resume=True))
    toy_train(toy(tmp_path, total_env_steps=60, resume=True))
    assert (tmp_path / "toy" / "provenance.json").read_text() == first  # the first start's
    resumes = [json.loads(x) for x in (tmp_path / "toy" / "resumes.jsonl").read_text().splitlines()]
    assert [r["provenance"].keys() == record.keys() for r in resumes] == [True, True]
    assert resumes[0]["provenance"]["time"] > record["time"]


def test_a_run_shows_its_hyperparameters_in_tensorboard(tmp_path, toy_train):
    from podracer.runs.writer import read_tensorboard_text

    toy_train(toy(tmp_path, total_env_steps=30, tensorboard=True))
    toy_train(toy(tmp_path, total_env_steps=50, tensorboard=True, resume=True))
    ((tag, step, table),) = read_tensorboard_text(tmp_path / "toy" / "tensorboard")
    assert tag == "hyperparameters" and step == 30  # the resume's, from its start
    lines = table.splitlines()
    assert lines[:3] == ["|param|value|", "|-|-|", "|runtime|toy|"]
    assert "|total_env_steps|50|" in lines and "|agent_config.learning_rate|0.001|" in lines
    (aside,) = (tmp_path / "toy" / "replaced").iterdir()  # the first start's, kept
    assert [(t, s) for t, s, _ in read_tensorboard_text(aside / "tensorboard")] == [
        ("hyperparameters", 0)
    ]
