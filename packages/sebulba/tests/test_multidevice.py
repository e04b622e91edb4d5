"""Actor device 0, learners 1..3 on fake CPU devices, in a subprocess (XLA_FLAGS)."""

import json
import os
import subprocess
import sys

import pytest

SCRIPT = r"""
import json
import jax
import numpy as np
from podracer.sebulba import SebulbaConfig, train, trajectory_sharding, learner_mesh

assert jax.device_count() == 4, jax.devices()
config = SebulbaConfig(envs_per_thread=6, rollout_length=8, trajectories_per_update=2,
                       total_env_steps=8 * 6 * 2 * 4, log_interval=2 * 96, progress=False,
                       tensorboard=False, actor_threads_per_device=2)
actor_ids, learner_ids = config.device_ids(4)
result = train(config)
params = result.state.params
leaf = jax.tree.leaves(params)[0]
mesh = learner_mesh([jax.devices()[i] for i in learner_ids])
shards = jax.device_put(np.zeros((9, 6, 4)), trajectory_sharding(mesh)).addressable_shards
errors = []
for bad in (dict(actor_device_ids=(0, 1), learner_device_ids=(1, 2, 3)), dict(envs_per_thread=8)):
    try:
        train(SebulbaConfig(progress=False, **bad))
    except ValueError as e:
        errors.append(str(e))
print("RESULT", json.dumps({
    "actor_ids": actor_ids, "learner_ids": learner_ids, "updates": result.steps,
    "env_steps": result.env_steps, "param_devices": sorted(d.id for d in leaf.devices()),
    "shards": sorted((s.device.id, s.data.shape) for s in shards),
    "loss_finite": bool(np.isfinite(result.history[-1]["losses/total"])), "errors": errors,
}))
"""


@pytest.mark.slow
def test_actor_on_device_0_learners_on_1_to_3():
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=4",
           "JAX_PLATFORMS": "cpu"}  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = next(line for line in proc.stdout.splitlines() if line.startswith("RESULT "))
    out = json.loads(line[len("RESULT ") :])
    assert out["actor_ids"] == [0] and out["learner_ids"] == [1, 2, 3]
    assert out["updates"] == 4 and out["env_steps"] == 4 * 2 * 8 * 6
    assert out["param_devices"] == [1, 2, 3]  # params replicated over the learners
    assert out["shards"] == [[1, [9, 2, 4]], [2, [9, 2, 4]], [3, [9, 2, 4]]]  # split along B
    assert out["loss_finite"]
    assert "overlap" in out["errors"][0] and "envs_per_thread" in out["errors"][1]
