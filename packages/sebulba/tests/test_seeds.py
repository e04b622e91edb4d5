"""`num_seeds`: several independent seeds in one Sebulba process, as Anakin's."""

import dataclasses
import os

import jax
import numpy as np
import pytest

from podracer.runs import Checkpointer
from podracer.runs import load
from podracer.runs.tools.evaluate import evaluate
from podracer.sebulba import SebulbaConfig
from podracer.sebulba import train

# Catch on host envs (the Python loop), 2 actor threads per seed, 4 updates.
SMALL = SebulbaConfig(
    env="catch", agent="ppo", envs_per_thread=8, rollout_length=4, actor_threads_per_device=2,
    total_env_steps=8 * 4 * 4, log_interval=32, deterministic=True, progress=False,
    tensorboard=False, stage_timeout_s=120.0,
)  # fmt: skip
NONDETERMINISTIC = ("charts/SPS", "timing/", "utilisation/")


def _learning(rows):
    return [{k: v for k, v in r.items() if not k.startswith(NONDETERMINISTIC)} for r in rows]


def test_num_seeds_is_checked():
    with pytest.raises(ValueError, match=r"SebulbaConfig\.num_seeds .*int >= 1"):
        SebulbaConfig(num_seeds=0)
    assert SebulbaConfig(num_seeds=3).member_tags() == [{"seed": 0}, {"seed": 1}, {"seed": 2}]
    assert SebulbaConfig().member_tags() == [{}]


@pytest.mark.slow
def test_seed_k_of_a_two_seed_run_trains_as_the_single_run_with_seed_plus_k(tmp_path):
    config = dataclasses.replace(SMALL, seed=3, num_seeds=2, runs_root=str(tmp_path),
                                 run_name="two", eval_interval=64, eval_episodes=4)  # fmt: skip
    both = train(config)
    assert both.env_steps == 128 and both.steps == 4  # one seed's steps, as Anakin counts
    assert [(r["env_steps"], r["seed"]) for r in both.history] == [
        (s, k) for s in (32, 64, 96, 128) for k in (0, 1)
    ]
    assert all(r["charts/SPS"] > 0 for r in both.history[2:])
    for k in range(2):
        alone = train(dataclasses.replace(config, seed=3 + k, num_seeds=1, run_name=f"one{k}"))
        ours = [{x: v for x, v in r.items() if x != "seed"} for r in both.history if r["seed"] == k]
        theirs = alone.history
        for a, b in zip(_learning(ours), _learning(theirs), strict=True):
            assert a.keys() == b.keys()
            np.testing.assert_allclose(list(a.values()), list(b.values()), rtol=1e-4, atol=1e-5)
        for x, y in zip(jax.tree.leaves(both.state.params), jax.tree.leaves(alone.state.params),
                        strict=True):  # fmt: skip
            np.testing.assert_allclose(np.asarray(x)[k], y, rtol=1e-4, atol=1e-5)
    seed0, seed1 = (np.asarray(x) for x in jax.tree.leaves(both.state.params)[0])
    assert not np.array_equal(seed0, seed1)


@pytest.mark.slow
def test_a_two_seed_run_saves_loads_evaluates_and_resumes_per_seed(tmp_path):
    config = dataclasses.replace(SMALL, num_seeds=2, runs_root=str(tmp_path), run_name="seeds",
                                 checkpoint_interval=64, deterministic=False)  # fmt: skip
    first = train(config)
    checkpoints = Checkpointer(os.path.join(first.run_dir, "checkpoints"))
    assert checkpoints.all_steps() == [2, 4]
    checkpoints.close()
    for leaf in jax.tree.leaves(first.state):
        assert leaf.shape[0] == 2
    for k in range(2):  # `podracer.runs.load` of RUN:K: seed k's final params
        policy = load(f"{first.run_dir}:{k}")
        assert policy.member == {"member": k, "seed": k}
        for ours, theirs in zip(jax.tree.leaves(policy.params),
                                jax.tree.leaves(first.state.params), strict=True):  # fmt: skip
            np.testing.assert_array_equal(ours, np.asarray(theirs)[k])
    records = evaluate(first.run_dir, episodes=4)  # `podracer eval RUN`: every seed
    assert [r["seed"] for r in records] == [0, 1]
    assert all(np.isfinite(r["mean"]) for r in records)

    resumed = train(dataclasses.replace(config, total_env_steps=8 * 4 * 6, resume=True))
    assert resumed.steps == 6 and resumed.env_steps == 192
    assert [(r["env_steps"], r["seed"]) for r in resumed.history] == [
        (s, k) for s in (160, 192) for k in (0, 1)
    ]
    assert np.asarray(resumed.state.update_step).tolist() == [6, 6]
