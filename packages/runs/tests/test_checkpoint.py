"""Orbax checkpoints: exact round trips, retention, resharding, and crash safety."""

import dataclasses
import os
import signal
import subprocess
import sys
import textwrap
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp
import pytest

from podracer.agents import QLambdaConfig
from podracer.agents import init_train_state
from podracer.agents import make_qlambda
from podracer.envs import EnvSpec
from podracer.runs import Checkpointer
from podracer.runs import CheckpointError
from podracer.runs import CheckpointMismatch
from podracer.runs import abstract_like
from podracer.runs import package_versions
from podracer.runs import to_jsonable

CONFIG = QLambdaConfig(torso="mlp", hidden_sizes=(4,))


@pytest.fixture(scope="module")
def state(vector_spec):
    agent = make_qlambda(vector_spec, CONFIG)
    state = jax.jit(lambda k: init_train_state(agent, k))(jax.random.key_data(jax.random.key(0)))
    # A state that has trained: non-trivial Adam moments and counter.
    return state._replace(
        opt_state=jax.tree.map(
            lambda x: x + 0.5 if x.dtype == jnp.float32 else x + 3, state.opt_state
        ),
        update_step=jnp.int32(42),
    )


def assert_exact(a, b):
    chex.assert_trees_all_equal_structs(a, b)
    chex.assert_trees_all_equal_dtypes(a, b)
    chex.assert_trees_all_equal(a, b)


def metadata(spec):
    return {
        "config": CONFIG,
        "env_spec": spec.to_json(),
        "agent": "qlambda",
        "env_steps": 2**40 + 1,
    }


def test_round_trip_is_bit_exact_with_json_metadata(tmp_path, state, vector_spec):
    with Checkpointer(tmp_path / "ckpt") as ckpt:
        assert ckpt.save(7, state, metadata(vector_spec))
        assert ckpt.latest_step() == 7
        restored, runtime, md = ckpt.restore(jax.tree.map(jnp.zeros_like, state))
    assert runtime is None  # a concrete target
    assert_exact(restored, state)
    assert md["agent"] == "qlambda" and md["env_steps"] == 2**40 + 1  # exact beyond int32
    assert EnvSpec.from_json(md["env_spec"]) == vector_spec
    assert md["config"] == to_jsonable(CONFIG) and md["config"]["hidden_sizes"] == [4]
    restored_config = QLambdaConfig(
        **{k: tuple(v) if isinstance(v, list) else v for k, v in md["config"].items()}
    )
    assert restored_config == CONFIG
    assert md["versions"]["jax"] == package_versions()["jax"]
    # A fresh Checkpointer finds it; metadata alone needs no target.
    with Checkpointer(tmp_path / "ckpt") as ckpt:
        assert ckpt.all_steps() == [7]
        assert ckpt.metadata()["agent"] == "qlambda"


def test_restore_into_an_abstract_target_with_shardings(tmp_path, state, vector_spec):
    device = jax.devices()[0]
    sharding = jax.sharding.SingleDeviceSharding(device)
    with Checkpointer(tmp_path) as ckpt:
        ckpt.save(1, state, metadata(vector_spec))
        target = abstract_like(state, sharding)
        assert all(isinstance(x, jax.ShapeDtypeStruct) for x in jax.tree.leaves(target))
        restored, _, _ = ckpt.restore(target)
    assert_exact(restored, state)
    assert all(x.sharding == sharding for x in jax.tree.leaves(restored))


def test_restore_without_checkpoints_fails_clearly(tmp_path, state):
    with Checkpointer(tmp_path) as ckpt:
        assert ckpt.latest_step() is None
        with pytest.raises(FileNotFoundError, match="no checkpoint"):
            ckpt.restore(state)


def tiny(value):
    return {"w": jnp.full((2,), value, jnp.float32)}


def test_keeps_the_newest_n(tmp_path):
    with Checkpointer(tmp_path, max_to_keep=2) as ckpt:
        for step in (1, 2, 3, 4):
            ckpt.save(step, tiny(step), {})
        assert ckpt.all_steps() == [3, 4]
        restored, _, _ = ckpt.restore(tiny(0.0), step=3)
    np.testing.assert_array_equal(restored["w"], [3.0, 3.0])
    assert sorted(os.listdir(tmp_path)) == ["3", "4"]


@pytest.mark.parametrize("mode", ["max", "min"])
def test_keeps_the_best_n_by_metric_and_the_newest(tmp_path, mode):
    returns = {1: 5.0, 2: 9.0, 3: 1.0, 4: 7.0, 5: 3.0}
    sign = 1.0 if mode == "max" else -1.0
    with Checkpointer(
        tmp_path, max_to_keep=2, best_metric="charts/episodic_return", best_mode=mode
    ) as ckpt:
        for step, ret in returns.items():
            ckpt.save(step, tiny(step), {}, metrics={"charts/episodic_return": sign * ret})
        # max: 9 and 7 are best; min of the negated values: the same two. 5 is the newest.
        assert ckpt.all_steps() == [2, 4, 5]
        assert ckpt.best_step() == 2
        restored, _, _ = ckpt.restore(tiny(0.0), step=ckpt.best_step())
    np.testing.assert_array_equal(restored["w"], [2.0, 2.0])


def test_best_mode_is_validated(tmp_path):
    with pytest.raises(ValueError, match="best_mode"):
        Checkpointer(tmp_path, best_metric="x", best_mode="largest")


def run_child(script, *args, devices=1):
    env = {
        **os.environ,
        "JAX_PLATFORMS": "cpu",
        "XLA_FLAGS": f"--xla_force_host_platform_device_count={devices}",
    }
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *map(str, args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


# One child process (a JAX import costs seconds) with 2 fake CPU devices: it saves a
# sharded step 1, then is SIGKILLed while saving a large step 2.
SAVE_ON_TWO_DEVICES_THEN_DIE = """
    import os, signal, sys, threading, time
    import jax, jax.numpy as jnp, numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    from podracer.runs import Checkpointer

    directory = sys.argv[1]
    assert len(jax.devices()) == 2, jax.devices()
    mesh = Mesh(np.array(jax.devices()), ("devices",))
    sharded = NamedSharding(mesh, P("devices"))
    replicated = NamedSharding(mesh, P())
    state = {
        "sharded": jax.device_put(jnp.arange(32, dtype=jnp.float32).reshape(8, 4), sharded),
        "replicated": jax.device_put(jnp.arange(3, dtype=jnp.int32), replicated),
        "key": jax.device_put(jax.random.key_data(jax.random.key(7)), replicated),
    }
    assert state["sharded"].addressable_shards[0].data.shape == (4, 4)
    ckpt = Checkpointer(directory)
    ckpt.save(1, state, {"devices": 2})

    # Fault injection that makes the test deterministic: step 2 is never renamed into
    # place, so the kill below always lands before the save completes (usually mid-write).
    try:
        from orbax.checkpoint._src.path import atomicity

        async def stall(self, *args, **kwargs):
            threading.Event().wait()

        atomicity.AtomicRenameTemporaryPath.finalize = stall
    except (ImportError, AttributeError):
        pass

    def kill_when_the_temporary_directory_appears():
        while not any(".orbax-checkpoint-tmp" in name for name in os.listdir(directory)):
            time.sleep(0.001)
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=kill_when_the_temporary_directory_appears, daemon=True).start()
    big = np.random.default_rng(0).normal(size=(8, 1024, 1024)).astype(np.float32)
    ckpt.save(2, {**state, "sharded": jax.device_put(big, sharded)}, {"devices": 2})
    print("step 2 completed: the kill came too late")
"""


@pytest.fixture(scope="module")
def killed_child(tmp_path_factory):
    directory = tmp_path_factory.mktemp("two-devices")
    return run_child(SAVE_ON_TWO_DEVICES_THEN_DIE, directory, devices=2), directory


def test_a_save_killed_midway_leaves_the_previous_checkpoint_loadable(killed_child):
    child, directory = killed_child
    assert child.returncode == -signal.SIGKILL, (
        child.returncode,
        child.stdout,
        child.stderr[-3000:],
    )
    assert any(".orbax-checkpoint-tmp" in name for name in os.listdir(directory))  # the torn save
    with Checkpointer(directory) as ckpt:
        assert ckpt.latest_step() == 1
        assert ckpt.all_steps() == [1]
        assert ckpt.metadata()["devices"] == 2


def test_checkpoint_from_two_devices_restores_onto_one(killed_child):
    child, directory = killed_child
    assert child.returncode == -signal.SIGKILL, child.stderr[-3000:]
    one = jax.sharding.SingleDeviceSharding(jax.devices()[0])
    target = {
        "sharded": jax.ShapeDtypeStruct((8, 4), jnp.float32, sharding=one),
        "replicated": jax.ShapeDtypeStruct((3,), jnp.int32, sharding=one),
        "key": jax.ShapeDtypeStruct((2,), jnp.uint32, sharding=one),
    }
    with Checkpointer(directory) as ckpt:
        restored, _, md = ckpt.restore(target)
    assert md["devices"] == 2 and len(jax.devices()) == 1
    expected = np.arange(32, dtype=np.float32).reshape(8, 4)
    np.testing.assert_array_equal(restored["sharded"], expected)
    np.testing.assert_array_equal(restored["replicated"], [0, 1, 2])
    np.testing.assert_array_equal(restored["key"], jax.random.key_data(jax.random.key(7)))
    assert all(x.sharding == one for x in jax.tree.leaves(restored))


def test_metadata_dataclasses_become_json(tmp_path):
    @dataclasses.dataclass(frozen=True)
    class Cfg:
        sizes: tuple = (1, 2)
        rate: float = 0.5

    with Checkpointer(tmp_path) as ckpt:
        ckpt.save(1, tiny(1.0), {"config": Cfg(), "scalar": np.float32(2.5)})
        md = ckpt.metadata(1)
    assert md["config"] == {"sizes": [1, 2], "rate": 0.5} and md["scalar"] == 2.5


def test_the_runtime_item_is_optional_and_restored_only_when_asked(tmp_path):
    with Checkpointer(tmp_path) as ckpt:
        ckpt.save(1, tiny(1.0), {"runtime": "anakin"}, runtime={"env": jnp.arange(3)})
        train, runtime, _ = ckpt.restore(tiny(0.0), {"env": jnp.zeros(3, jnp.int32)})
        np.testing.assert_array_equal(runtime["env"], [0, 1, 2])
        train, runtime, md = ckpt.restore(tiny(0.0))  # what another runtime or a tool reads
    np.testing.assert_array_equal(train["w"], [1.0, 1.0])
    assert runtime is None and md["runtime"] == "anakin" and md["format"] == 2


def test_saving_a_step_twice_keeps_the_first(tmp_path):
    # A final checkpoint at the step a periodic one just wrote (a signal right after it).
    with Checkpointer(tmp_path) as ckpt:
        assert ckpt.save(3, tiny(3.0), {})
        assert not ckpt.save(3, tiny(-1.0), {})
        train, _, _ = ckpt.restore(tiny(0.0), step=3)
    np.testing.assert_array_equal(train["w"], [3.0, 3.0])


def _corrupt_data(directory, step):
    """Truncates every array file of a step's train item (a disk that filled up, say)."""
    for root, _, files in os.walk(os.path.join(directory, str(step), "train")):
        for name in files:
            if os.path.basename(root) == "d":
                path = os.path.join(root, name)
                with open(path, "r+b") as f:
                    f.truncate(5)


@pytest.mark.parametrize("damage", ["truncated data", "garbled metadata"])
def test_restore_newest_skips_a_checkpoint_that_does_not_restore(tmp_path, damage):
    with Checkpointer(tmp_path) as ckpt:
        for step in (1, 2, 3):
            ckpt.save(step, tiny(float(step)), {"step": step})
    if damage == "truncated data":
        _corrupt_data(tmp_path, 3)
    else:
        with open(tmp_path / "3" / "metadata" / "metadata", "w") as f:
            f.write('{"step": 3,')
    skipped = []
    with Checkpointer(tmp_path) as ckpt:
        step, train, _, md = ckpt.restore_newest(
            tiny(0.0), on_skip=lambda s, e: skipped.append((s, str(e)))
        )
        assert step == 2 and md["step"] == 2 and ckpt.all_steps() == [1, 2]
    np.testing.assert_array_equal(train["w"], [2.0, 2.0])
    assert [s for s, _ in skipped] == [3] and str(tmp_path / "3") in skipped[0][1]
    assert (tmp_path / "3.corrupt").is_dir()  # kept for inspection, out of Orbax's way
    with Checkpointer(tmp_path) as ckpt:
        assert ckpt.save(3, tiny(30.0), {})  # the step number is free again


def test_restoring_a_missing_step_names_the_steps_there(tmp_path):
    with Checkpointer(tmp_path) as ckpt:
        ckpt.save(1, tiny(1.0), {})
        with pytest.raises(FileNotFoundError, match=r"step 5 .* steps: \[1\]"):
            ckpt.restore(tiny(0.0), step=5)


def test_a_checkpoint_of_another_format_is_refused_naming_it(tmp_path):
    manager = ocp.CheckpointManager(tmp_path, item_names=("train", "metadata"))
    manager.save(
        1,
        args=ocp.args.Composite(  # podracer 0.1's metadata had no format
            train=ocp.args.StandardSave(tiny(1.0)), metadata=ocp.args.JsonSave({"step": 1})
        ),
    )
    manager.wait_until_finished()
    manager.close()
    with Checkpointer(tmp_path) as ckpt, pytest.raises(CheckpointError, match="format 1"):
        ckpt.restore(tiny(0.0))


class _OldState(NamedTuple):  # a runtime state as older code saved it
    env: jax.Array


class _NewState(NamedTuple):  # ... and as newer code holds it: a field without arrays added
    env: jax.Array
    core: tuple = ()


class _OtherState(NamedTuple):  # ... or with a field that holds arrays
    env: jax.Array
    extra: jax.Array


def test_a_field_added_without_arrays_restores_from_older_checkpoints(tmp_path):
    with Checkpointer(tmp_path) as ckpt:
        ckpt.save(1, tiny(1.0), {}, runtime=_OldState(jnp.arange(3)))
        _, runtime, _ = ckpt.restore(tiny(0.0), _NewState(jnp.zeros(3, jnp.int32)))
    assert isinstance(runtime, _NewState) and runtime.core == ()
    np.testing.assert_array_equal(runtime.env, [0, 1, 2])


def test_a_sound_checkpoint_of_another_structure_is_refused_and_kept(tmp_path):
    with Checkpointer(tmp_path) as ckpt:
        ckpt.save(1, tiny(1.0), {}, runtime=_OldState(jnp.arange(3)))
        other = _OtherState(jnp.zeros(3, jnp.int32), jnp.zeros(2))
        fields = r"fields \['env'\], this code's \['env', 'extra'\]"
        with pytest.raises(CheckpointMismatch, match=fields):
            ckpt.restore_newest(tiny(0.0), other)
        assert ckpt.all_steps() == [1] and not (tmp_path / "1.corrupt").exists()
