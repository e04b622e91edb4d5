"""Sebulba over JAX's distributed runtime: local processes joined over 127.0.0.1 (gloo).

Each process steps its own envpool CartPole envs on its own actor device; the learner
mesh spans both processes' devices, so every update trains on both hosts' trajectories.
"""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pytest.importorskip("envpool")

SCRIPT = textwrap.dedent(
    """
    import json, os, signal, sys, threading, time
    import jax, numpy as np
    from podracer.runs import DistributedConfig, final_return, initialize_distributed
    from podracer.sebulba import SebulbaConfig, train

    total, root, name, mode, where, action = sys.argv[1:7]
    dist = where == "dist"
    # The same global run either way: per update, 2 trajectories of 8 envs x 32 steps,
    # from 2 processes x 1 actor thread, or from 1 process x 2 actor threads.
    config, _ = SebulbaConfig.from_preset(  # envpool CartPole's classic preset
        envs_per_thread=8, actor_threads_per_device=1 if dist else 2,
        trajectories_per_update=1 if dist else 2, deterministic=True,
        total_env_steps=int(total), run_name=name, runs_root=root, resume=mode == "resume",
        checkpoint_interval=10 * 512, log_interval=5 * 512, progress=False, tensorboard=False,
        cluster=DistributedConfig(distributed=dist, heartbeat_timeout=10),
    )
    initialize_distributed(config.cluster)  # before jax.process_index() starts a backend
    if action != "none" and jax.process_index() == 1:
        folder = os.path.join(root, name, "checkpoints")
        latest = lambda: max((int(x) for x in os.listdir(folder) if x.isdigit()), default=0)
        first = latest()

        def strike():  # once this run has written a checkpoint of its own
            while latest() <= first:
                time.sleep(0.05)
            os.kill(os.getpid(), signal.SIGTERM if action == "term" else signal.SIGKILL)

        threading.Thread(target=strike, daemon=True).start()
    result = train(config)
    params = jax.tree.leaves(jax.device_get(result.state.params))
    print("RESULT " + json.dumps({
        "process": jax.process_index(), "updates": result.steps, "env_steps": result.env_steps,
        "return": final_return(result), "interrupted": result.interrupted,
        "params": [[float(np.sum(x)), float(np.sum(np.square(x)))] for x in params],
        "returns": [h["charts/episodic_return"] for h in result.history],
        "losses": [h["losses/total"] for h in result.history],
    }))
    """
)


def _run(script, root, total, mode, processes, action="none", name="run", timeout=400):
    args = [str(script), str(total), str(root), name, mode]
    if processes == 1:
        command = [sys.executable, *args, "local", action]
    else:
        launch = [sys.executable, "-m", "podracer.runs.launch", "-n", str(processes),
                  "-d", "1", "--timeout", str(timeout - 30), "--"]  # fmt: skip
        command = [*launch, sys.executable, *args, "dist", action]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "JAX_PLATFORMS": "cpu"})  # fmt: skip
    lines = [x.split("RESULT ", 1)[1] for x in proc.stdout.splitlines() if "RESULT " in x]
    return proc, sorted((json.loads(x) for x in lines), key=lambda r: r["process"])


def _metrics(root):
    lines = (root / "run" / "metrics.jsonl").read_text().splitlines()
    return [json.loads(x) for x in lines]


def _checkpoints(root):
    return sorted(int(x) for x in os.listdir(root / "run" / "checkpoints") if x.isdigit())


@pytest.mark.slow
def test_two_processes_learn_cartpole_as_one_process_would_and_resume_on_one(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    proc, results = _run(script, tmp_path, 200_000, "fresh", processes=2)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert [r["process"] for r in results] == [0, 1]
    a, b = results
    # One global update per step on both hosts: identical params, counters and metrics.
    assert a["params"] == b["params"] and a["updates"] == b["updates"]
    assert a["returns"] == b["returns"] and a["losses"] == b["losses"]
    assert a["env_steps"] == a["updates"] * 2 * 8 * 32  # both processes' trajectories
    assert a["return"] >= 150, a["returns"]  # random play: about 22
    rows = _metrics(tmp_path)  # written once, by process 0
    steps = [r["env_steps"] for r in rows]  # every 5 updates, and the last
    assert steps[:-1] == [5 * 512 * (i + 1) for i in range(len(rows) - 1)]
    assert steps[-1] == a["env_steps"]

    # One process with two actor threads runs the same global batch (same envs, keys and
    # lag): the same early learning curve, up to the float order of the gradient mean.
    proc, (one,) = _run(script, tmp_path, 15 * 512, "fresh", processes=1, name="single")
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert one["returns"][:2] == a["returns"][:2]
    np.testing.assert_allclose(one["losses"], a["losses"][:3], rtol=1e-2)

    # The two-process checkpoint resumes in one process and continues to the new total.
    proc, (one,) = _run(script, tmp_path, a["env_steps"] + 10_240, "resume", processes=1)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert one["env_steps"] == a["env_steps"] + 10_240 and one["updates"] == a["updates"] + 20
    steps = [r["env_steps"] for r in _metrics(tmp_path)]
    assert steps == sorted(set(steps)) and steps[-1] == one["env_steps"]


@pytest.mark.slow
def test_one_process_checkpoint_resumes_on_two_which_stop_together(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(SCRIPT)
    proc, (one,) = _run(script, tmp_path, 20_000, "fresh", processes=1)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert _checkpoints(tmp_path)[-1] == one["updates"]

    # A SIGTERM to process 1 alone is its stop vote: both stop after the same update and
    # save the same final checkpoint, cleanly.
    proc, (a, b) = _run(script, tmp_path, 10**8, "resume", processes=2, action="term")
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert a["interrupted"] and b["interrupted"]
    assert a["updates"] == b["updates"] > one["updates"] and a["params"] == b["params"]
    assert _checkpoints(tmp_path)[-1] == a["updates"]

    # A process killed without warning stops the other with an error, in bounded time;
    # the last checkpoint stays loadable.
    proc, results = _run(script, tmp_path, 10**8, "resume", processes=2, action="kill")
    assert proc.returncode != 0
    assert "stopping the others" in proc.stdout
    assert not results
    assert _checkpoints(tmp_path)[-1] > a["updates"]

    # Restarted with resume, the run continues from that checkpoint.
    last = _checkpoints(tmp_path)[-1]
    proc, (one,) = _run(script, tmp_path, (last + 10) * 512, "resume", processes=1)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert one["updates"] == last + 10 and one["env_steps"] == (last + 10) * 512
