"""End to end: failures, timeouts, determinism, checkpoints and resume, interruption."""

import json
import os
import signal
import threading
import time
import traceback

import jax
import numpy as np
import pytest

from podracer.agents import MuZeroConfig
from podracer.agents import PPOConfig
from podracer.agents import ReplayConfig
from podracer.envs import make_host
from podracer.runs import Checkpointer
from podracer.search import SearchConfig
from podracer.sebulba import StageTimeout
from podracer.sebulba import train

NONDETERMINISTIC = ("charts/SPS", "timing/", "utilisation/")
METRICS = (
    "charts/episodic_return", "charts/episodic_length", "charts/SPS", "losses/total",
    "losses/policy", "policy_lag/mean", "timing/actor_env_and_inference", "timing/learner_update",
    "utilisation/actor", "utilisation/learner", "eval/episodic_return", "charts/learning_rate",
)  # fmt: skip


class _Wrapped:
    """A HostEnv that delegates to envpool CartPole (without its XLA interface)."""

    def __init__(self, num_envs, seed):
        self._env = make_host("envpool:CartPole-v1", num_envs=num_envs, seed=seed)
        self.spec, self.num_envs, self.batch_size = self._env.spec, num_envs, num_envs
        self.calls = 0

    def __getattr__(self, name):
        if name == "xla":
            raise AttributeError(name)
        return getattr(self._env, name)

    def recv(self):
        self.calls += 1
        return self._env.recv()


class _FailingEnv(_Wrapped):
    def recv(self):
        if self.calls >= 20:
            raise RuntimeError("the env exploded")
        return super().recv()


def _actor_threads():
    return [t.name for t in threading.enumerate() if t.name.startswith("actor-")]


def test_actor_failure_reraises_in_main_thread_and_stops_every_thread(tiny):
    config = tiny(total_env_steps=10**7, actor_threads_per_device=2)
    with pytest.raises(RuntimeError, match="the env exploded") as info:
        train(config, env_fn=_FailingEnv)
    frames = [f.name for f in traceback.extract_tb(info.value.__traceback__)]
    assert "recv" in frames and "rollout" in frames  # the actor thread's traceback
    assert any("actor-" in note for note in info.value.__notes__)
    assert _actor_threads() == []


def test_stuck_env_times_out_naming_the_stage(tiny):
    release = threading.Event()

    class StuckEnv(_Wrapped):
        def recv(self):
            if self.calls >= 12:
                release.wait()
            return super().recv()

    config = tiny(total_env_steps=10**7, stage_timeout_s=3.0)
    start = time.monotonic()
    try:
        with pytest.raises(
            StageTimeout,
            match=r"learner waiting for a trajectory from actor-0; "
            r"actor-0 is in 'rollout \(env step and inference\)'",
        ):
            train(config, env_fn=StuckEnv)
    finally:
        release.set()
    assert time.monotonic() - start < 60


def _learning_metrics(history):
    return [{k: v for k, v in row.items() if not k.startswith(NONDETERMINISTIC)} for row in history]


@pytest.mark.parametrize("actor_loop", ["xla", "python"])
def test_deterministic_mode_repeats_exactly(tiny, actor_loop):
    config = tiny(
        deterministic=True,
        actor_threads_per_device=2,
        trajectories_per_update=1,
        total_env_steps=8 * 4 * 6,
        log_interval=32,
        actor_loop=actor_loop,
    )
    first, second = train(config), train(config)
    assert first.steps == second.steps == 6
    a, b = _learning_metrics(first.history), _learning_metrics(second.history)
    assert a == b
    assert [row["policy_lag/max"] for row in a] == [0.0] + [1.0] * 5
    for x, y in zip(
        jax.tree.leaves(first.state.params), jax.tree.leaves(second.state.params), strict=True
    ):
        np.testing.assert_array_equal(x, y)


@pytest.mark.slow
@pytest.mark.parametrize("actor_loop", ["xla", "python"])
def test_sampled_muzero_acts_in_a_box_and_repeats_exactly(tiny, actor_loop):
    """Sampled MuZero on envpool Pendulum: box actions through both actor loops, its
    sampled actions carried to the learner's replay, the same run twice."""
    small = MuZeroConfig(num_action_samples=4, search=SearchConfig(num_simulations=4),
                         latent_size=8, hidden_sizes=(8,), torso_hidden_sizes=(8,),
                         replay=ReplayConfig(capacity=16, sequences_per_update=4))  # fmt: skip
    config = tiny(env="envpool:Pendulum-v1", agent="muzero", agent_config=small,
                  deterministic=True, actor_loop=actor_loop)  # fmt: skip
    first, second = train(config), train(config)
    assert first.steps == 6 and np.isfinite(first.history[-1]["losses/total"])
    assert _learning_metrics(first.history) == _learning_metrics(second.history)


@pytest.mark.parametrize("actor_loop, async_envs", [("xla", True), ("python", False)])
def test_a_recurrent_agent_carries_its_core_and_repeats_exactly(tiny, actor_loop, async_envs):
    # The core state travels step to step and rollout to rollout inside both loops (and
    # across the two lanes of async envs); each trajectory's start state is recorded.
    lstm = PPOConfig(core="lstm", core_size=8, hidden_sizes=(8,), num_minibatches=2)
    config = tiny(agent="ppo", agent_config=lstm, deterministic=not async_envs,
                  actor_loop=actor_loop, async_envs=async_envs)  # fmt: skip
    first = train(config)
    assert first.steps == 6 and np.isfinite(first.history[-1]["losses/total"])
    if not async_envs:
        second = train(config)
        assert _learning_metrics(first.history) == _learning_metrics(second.history)


@pytest.mark.slow
def test_checkpoint_and_resume(tiny, tmp_path):
    config = tiny(
        run_name="resume",
        runs_root=str(tmp_path),
        total_env_steps=8 * 4 * 4,
        checkpoint_interval=64,
    )
    first = train(config)
    assert first.steps == 4 and first.env_steps == 128
    checkpoints = Checkpointer(os.path.join(first.run_dir, "checkpoints"))
    assert checkpoints.all_steps() == [2, 4]
    assert checkpoints.metadata()["env_steps"] == 128
    checkpoints.close()

    resumed = train(
        tiny(
            run_name="resume",
            runs_root=str(tmp_path),
            total_env_steps=8 * 4 * 8,
            resume=True,
            eval_interval=64,
            eval_episodes=2,
        )
    )
    assert resumed.steps == 8 and resumed.env_steps == 256
    assert [h["env_steps"] for h in resumed.history] == [192, 256]
    with open(os.path.join(first.run_dir, "metrics.jsonl")) as f:
        steps = [json.loads(line)["env_steps"] for line in f]
    assert steps == [64, 128, 192, 256]
    assert int(resumed.state.update_step) == 8
    row = resumed.history[-1]
    for name in METRICS:
        assert name in row, name
    assert 8 <= row["eval/episodic_return"] <= 500


def test_sigint_stops_cleanly_with_a_final_checkpoint(tiny, tmp_path):
    config = tiny(
        run_name="interrupt", runs_root=str(tmp_path), total_env_steps=10**9, log_interval=32
    )
    metrics_file = tmp_path / "interrupt" / "metrics.jsonl"

    def interrupt_after_first_row():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if metrics_file.exists() and metrics_file.stat().st_size > 0:
                os.kill(os.getpid(), signal.SIGINT)
                return
            time.sleep(0.05)

    threading.Thread(target=interrupt_after_first_row, daemon=True).start()
    result = train(config)
    assert result.interrupted
    assert result.steps >= 1
    with Checkpointer(tmp_path / "interrupt" / "checkpoints") as checkpoints:
        assert checkpoints.latest_step() == result.steps
    assert _actor_threads() == []


def test_async_envs_step_two_lanes_in_the_compiled_rollout(tiny):
    # (The Python loop's two lanes are tested in test_rollout.)
    result = train(tiny(async_envs=True, actor_loop="xla", total_env_steps=8 * 4 * 4))
    assert result.steps == 4 and result.env_steps == 128
    assert np.isfinite(result.history[-1]["losses/total"])


def test_cpu_actors_on_a_cpu_machine_are_the_default_layout(tiny):
    # Without an accelerator the CPU is the default backend: the same run as without it.
    result = train(tiny(actor_backend="cpu", total_env_steps=8 * 4 * 2))
    assert result.steps == 2 and np.isfinite(result.history[-1]["losses/total"])


@pytest.mark.parametrize("actor_loop", ["xla", "python"])
def test_the_run_ends_with_its_stage_breakdown(tiny, actor_loop, capsys):
    train(tiny(actor_loop=actor_loop, total_env_steps=8 * 4 * 4))
    line = next(x for x in capsys.readouterr().err.splitlines() if "stages" in x)
    phases = ("env_and_inference",) if actor_loop == "xla" else ("env", "inference")
    for phase in (*phases, "queue_put", "wait", "update", "publish", "actors busy"):
        assert f"{phase} " in line, (phase, line)
    # ms per rollout: every actor phase is a non-negative number.
    actor = line.split("ms per rollout: ")[1].split(" |")[0]
    assert all(float(part.rsplit(" ", 1)[1].replace(",", "")) >= 0 for part in actor.split(", "))


def test_a_run_films_greedy_episodes_at_its_video_interval(tiny, tmp_path):
    pytest.importorskip("imageio_ffmpeg", reason="videos need the video extra")
    config = tiny(env="catch", video_interval=64, video_episodes=1, run_name="films",
                  runs_root=str(tmp_path))  # fmt: skip
    result = train(config)
    films = sorted(os.listdir(os.path.join(result.run_dir, "videos")), key=lambda f: int(f[:-4]))
    assert films == ["64.mp4", "128.mp4", "192.mp4"]  # each interval crossed, and the end
