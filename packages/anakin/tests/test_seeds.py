"""Many seeds in one program (`num_seeds`): each seed is the run it would be alone."""

import dataclasses
import json
import os
import shutil
import subprocess
import sys

import jax
import numpy as np
import pytest

from podracer.anakin import AnakinConfig
from podracer.anakin import train

VOLATILE = ("time", "charts/SPS", "timing/")


def tiny(tmp_path, **changes) -> AnakinConfig:
    fields = dict(num_envs=8, rollout_length=8, updates_per_chunk=4, total_env_steps=3 * 256,
                  runs_root=str(tmp_path), progress=False, eval_interval=512, log_interval=256,
                  eval_episodes=4)  # fmt: skip
    return AnakinConfig(**{**fields, **changes})


def learning(rows):
    return [
        {k: v for k, v in r.items() if not k.startswith(VOLATILE) and k != "seed"} for r in rows
    ]


@pytest.mark.parametrize("agent", ["qlambda", pytest.param("ppo", marks=pytest.mark.slow)])
def test_seed_k_of_a_multi_seed_run_is_the_run_with_seed_plus_k(tmp_path, agent):
    multi = train(tiny(tmp_path, agent=agent, seed=10, num_seeds=3, run_name="multi"))
    for k in (0, 2):
        alone = train(tiny(tmp_path, agent=agent, seed=10 + k, run_name=f"alone{k}"))
        ours = jax.tree.map(
            lambda x, k=k: np.asarray(x)[k], jax.device_get(multi.state.train.params)
        )
        jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6),
                     ours, jax.device_get(alone.state.train.params))  # fmt: skip
        rows = [r for r in multi.history if r["seed"] == k]
        for a, b in zip(learning(rows), learning(alone.history), strict=True):
            assert a.keys() == b.keys()
            for name in a:
                assert a[name] == pytest.approx(b[name], rel=1e-4, abs=1e-6), name
    logged = [
        json.loads(x) for x in (tmp_path / "multi" / "metrics.jsonl").read_text().splitlines()
    ]
    assert [(r["env_steps"], r["seed"]) for r in logged][:3] == [(256, 0), (256, 1), (256, 2)]
    assert sorted(p.name for p in (tmp_path / "multi" / "tensorboard").iterdir()) == [
        "seed_0", "seed_1", "seed_2"
    ]  # fmt: skip


def test_a_multi_seed_run_resumes_exactly(tmp_path):
    config = tiny(tmp_path, num_seeds=2, run_name="a", checkpoint_interval=256)
    full = train(config)
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    for step in ("2", "3"):
        shutil.rmtree(tmp_path / "b" / "checkpoints" / step)
    resumed = train(dataclasses.replace(config, run_name="b", resume=True))
    jax.tree.map(
        np.testing.assert_array_equal, jax.device_get(full.state), jax.device_get(resumed.state)
    )
    rows = lambda name: learning(
        json.loads(x) for x in (tmp_path / name / "metrics.jsonl").read_text().splitlines()
    )  # noqa: E501,E731
    assert rows("a") == rows("b")


# Builds a 3-seed PPO init (Flax's orthogonal initialisers are LAPACK QRs) and calls it
# again and again, with XLA's default flags: vmapped over seeds it deadlocked XLA:CPU's
# concurrency-optimized scheduler within a few calls (benchmarks/results/xla_cpu_deadlock.py).
_REPEATED_INIT = """
import jax
from podracer.anakin import AnakinConfig
from podracer.anakin.run import build, make_env, seed_keys
config = AnakinConfig(env="gymnax:MemoryChain-bsuite", agent="ppo", num_envs=8, num_seeds=3,
                      rollout_length=8, progress=False)
_, program = build(config, make_env(config))
for k in range(40):
    jax.block_until_ready(program.init(seed_keys(k, 3)))
print("done")
"""


@pytest.mark.slow
def test_multi_seed_programs_never_hang_under_xla_defaults(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    init = subprocess.run([sys.executable, "-c", _REPEATED_INIT], env=env, timeout=240,
                          capture_output=True, text=True)  # fmt: skip
    assert init.returncode == 0 and "done" in init.stdout, init.stderr[-2000:]
    for seeds in (3, 32):
        run = subprocess.run(
            [sys.executable, "-m", "podracer.anakin.cli", "--env", "gymnax:MemoryChain-bsuite",
             "--agent", "ppo", "--num-seeds", str(seeds), "--num-envs", "8",
             "--rollout-length", "8", "--updates-per-chunk", "4", "--total-env-steps", "512",
             "--runs-root", str(tmp_path), "--run-name", f"seeds{seeds}", "--no-progress"],
            env=env, timeout=240, capture_output=True, text=True,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr[-2000:]
        lines = (tmp_path / f"seeds{seeds}" / "metrics.jsonl").read_text().splitlines()
        rows = [json.loads(line) for line in lines]
        assert {r["seed"] for r in rows} == set(range(seeds))
