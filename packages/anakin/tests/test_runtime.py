"""Chunks, resume and evaluation on a tiny Catch config."""

import dataclasses
import json
import math
import os
import shutil
import time

import jax
import numpy as np
import pytest

from podracer.agents import MuZeroConfig
from podracer.agents import PPOConfig
from podracer.agents import QLambdaConfig
from podracer.agents import ReplayConfig
from podracer.agents import make_agent
from podracer.anakin import AnakinConfig
from podracer.anakin import Plan
from podracer.anakin import make_chunk
from podracer.anakin import make_init
from podracer.anakin import make_mesh
from podracer.anakin import run as anakin_run
from podracer.anakin import train
from podracer.anakin.runtime import MAX_ROWS
from podracer.envs import make
from podracer.search import DiscreteSupport
from podracer.search import SearchConfig

# A tiny MuZero with prioritised replay: 2 updates per rollout on 6 sampled sequences.
TINY_MUZERO = MuZeroConfig(
    num_unroll_steps=2,
    td_steps=2,
    search=SearchConfig(policy="muzero", num_simulations=2),
    value_support=DiscreteSupport(-2.0, 2.0, 5, scaled=True),
    reward_support=DiscreteSupport(-1.0, 1.0, 3, scaled=True),
    torso_hidden_sizes=(8,),
    latent_size=8,
    hidden_sizes=(8,),
    replay=ReplayConfig(
        capacity=24,
        sequences_per_update=6,
        updates_per_rollout=2,
        priority_exponent=1.0,
        importance_exponent=0.5,
    ),
)
TINY = AnakinConfig(
    num_envs=8,
    rollout_length=4,
    updates_per_chunk=5,
    total_env_steps=3 * 160,
    log_interval=160,  # a row per chunk
    progress=False,
    tensorboard=False,
)


def test_chunk_compiles_once_and_counts_updates():
    env = make("catch")
    agent = make_agent("qlambda", env.spec)
    plan = Plan(make_mesh(1), num_envs=8, rollout_length=4, updates_per_chunk=5)
    state = make_init(agent, env, plan)(jax.random.PRNGKey(0))
    chunk = make_chunk(agent, env, plan)
    for _ in range(3):
        state, metrics = chunk(state)
    assert chunk.traces == 1
    assert int(state.train.update_step) == 15
    # The jitted chunk's HLO, for profiles (benchmarks/profile_chunk.py), from its trace.
    assert "while" in chunk.lower(state).as_text() and chunk.traces == 1
    # Catch episodes last exactly 9 steps; 15 updates x 4 steps x 8 envs = 480 steps.
    lengths, count = np.asarray(metrics.episode_length_sum), np.asarray(metrics.episode_count)
    assert lengths.shape == (MAX_ROWS + 1,) and lengths[0] == 9.0 * count[0] > 0
    assert not lengths[1:].any() and np.isfinite(float(metrics.losses["losses/value"][0]))


def test_an_env_with_weak_typed_reset_state_compiles_once():
    """gymnax Pendulum's reset leaves `last_u` weak-typed, its step strongly typed: the
    initial state is made strongly typed, so the second chunk reuses the first's program."""
    env = make("gymnax:Pendulum-v1")
    agent = make_agent("ppo", env.spec)
    plan = Plan(make_mesh(1), num_envs=4, rollout_length=4)
    state = make_init(agent, env, plan)(jax.random.PRNGKey(0))
    assert not any(x.weak_type for x in jax.tree.leaves(state))
    chunk = make_chunk(agent, env, plan)
    for _ in range(2):
        state, _ = chunk(state)
    assert chunk.traces == 1


def test_a_chunk_bins_its_metrics_by_the_rows_it_is_given():
    env = make("catch")
    agent = make_agent("qlambda", env.spec)
    # A rollout of 9 steps: an episode per env.
    plan = Plan(make_mesh(1), num_envs=8, rollout_length=9, updates_per_chunk=6)
    init, chunk = make_init(agent, env, plan), make_chunk(agent, env, plan)
    whole, totals = chunk(init(jax.random.PRNGKey(0)))
    binned, bins = chunk(init(jax.random.PRNGKey(0)), 6, rows=(1, 3))
    jax.tree.map(np.testing.assert_array_equal, jax.device_get(whole), jax.device_get(binned))
    # Rows of 1 and 2 updates, then 3 updates after the last row: 8 episodes an update.
    np.testing.assert_array_equal(bins.episode_count[:4], [8, 16, 24, 0])
    for name, total in totals.losses.items():
        np.testing.assert_allclose(bins.losses[name].sum(), total.sum(), rtol=1e-5)
        assert not bins.losses[name][3:].any() and bins.losses[name][0] != 0
    for bad in ((3, 1), (0,), (7,), tuple(range(1, MAX_ROWS + 2))):
        with pytest.raises(ValueError, match="increasing update counts"):
            chunk(binned, 6, rows=bad)


def test_a_chunk_split_into_calls_gives_the_same_state():
    # What the run loop does with a chunk too long to stop in bounded time.
    env = make("catch")
    agent = make_agent("ppo", env.spec)
    plan = Plan(make_mesh(1), num_envs=8, rollout_length=4, updates_per_chunk=5)
    init, chunk = make_init(agent, env, plan), make_chunk(agent, env, plan)
    whole, _ = chunk(init(jax.random.PRNGKey(0)))
    split = init(jax.random.PRNGKey(0))
    for updates in (2, 1, 2):
        split, metrics = chunk(split, updates)
    assert chunk.traces == 1 and int(split.train.update_step) == int(whole.train.update_step)
    jax.tree.map(np.testing.assert_array_equal, jax.device_get(whole), jax.device_get(split))
    with pytest.raises(ValueError, match="at least 1 update"):
        chunk(split, 0)


def test_run_writes_config_metrics_and_evaluates(tmp_path):
    config = dataclasses.replace(
        TINY, run_name="tiny", runs_root=str(tmp_path), eval_interval=160, eval_episodes=4,
        tensorboard=True,
    )  # fmt: skip
    rows = []  # a notebook's live view: each row as it is logged
    result = train(config, on_row=rows.append)
    assert rows == result.history
    run = tmp_path / "tiny"
    stored = json.loads((run / "config.json").read_text())
    assert stored["env"] == "catch" and stored["runtime"] == "anakin"
    lines = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [m["env_steps"] for m in lines] == [160, 320, 480]
    assert all(-1.0 <= m["eval/episodic_return"] <= 1.0 for m in lines)
    assert any(f.startswith("events") for f in os.listdir(run / "tensorboard"))
    assert result.env_steps == 480 and not math.isnan(result.sps)


def test_a_run_of_one_chunk_reports_its_compile_and_leaves_it_out_of_sps(tmp_path):
    # The whole run is one loop step: without a measured compile, SPS would count the
    # compile and the summary would say "after 0.0s compile" (seen on an H200).
    per_update = TINY.steps_per_update
    config = dataclasses.replace(
        TINY, runs_root=str(tmp_path), updates_per_chunk=4, total_env_steps=per_update * 4,
        log_interval=per_update,
    )  # fmt: skip
    start = time.perf_counter()
    result = train(config)
    wall = time.perf_counter() - start
    assert result.steps == 1 and result.env_steps == config.steps_per_update * 4
    assert 0.1 < result.compile_seconds < wall, result.compile_seconds
    # The chunk runs in a fraction of the compile: SPS well above the wall-clock rate.
    assert result.sps > 3 * result.env_steps / wall, (result.sps, result.env_steps / wall)
    # The rows within the chunk are timed after the compile too, so `podracer plot`'s SPS
    # (first row to last) is the summary's.
    rows = result.history
    assert [r["env_steps"] for r in rows] == [per_update * k for k in (1, 2, 3, 4)]
    plotted = (rows[-1]["env_steps"] - rows[0]["env_steps"]) / (
        rows[-1]["timing/elapsed"] - rows[0]["timing/elapsed"]
    )
    assert plotted == pytest.approx(result.sps, rel=0.1)


@pytest.fixture
def compile_threads(monkeypatch):
    """The compile threads `ChunkAhead` starts, as they start."""
    threads = []
    started = anakin_run.ChunkAhead.__init__

    def spy(self, program, run):
        started(self, program, run)
        threads.append(self._thread)

    monkeypatch.setattr(anakin_run.ChunkAhead, "__init__", spy)
    return threads


def test_the_chunk_compiles_once_beside_the_init_before_the_loop(tmp_path, compile_threads):
    # `ChunkAhead` compiles the chunk from the abstract state on a second thread while the
    # init compiles and runs; the loop's calls must then find that program, not make
    # another (the state the init makes carries the abstract state's types and layouts).
    import jax.monitoring

    events = []
    listen = lambda event, _, **kw: events.append((event, kw.get("fun_name")))  # noqa: E731
    jax.monitoring.register_event_duration_secs_listener(listen)
    try:
        result = train(dataclasses.replace(TINY, runs_root=str(tmp_path), updates_per_chunk=2))
    finally:
        jax.monitoring.unregister_event_duration_listener(listen)
    assert result.steps > 1 and len(compile_threads) == 1
    assert not compile_threads[0].is_alive()
    traced = [e for e in events if e == ("/jax/core/compile/jaxpr_trace_duration", "traced")]
    compiled = [e for e in events
                if e == ("/jax/core/compile/backend_compile_duration", "jit(traced)")]  # fmt: skip
    assert len(traced) == 1 and len(compiled) == 1, events
    assert result.compile_seconds > 0.1, result.compile_seconds


def test_an_error_making_the_state_waits_for_the_chunk_s_compile(
    tmp_path, monkeypatch, compile_threads
):
    # The process must not exit under XLA: the compile thread ends first; the error is
    # raised as it was. The compile's own error is raised in the loop's first step.
    def broken(*_):
        raise OSError(28, "No space left on device")  # writing config.json

    monkeypatch.setattr(anakin_run.Run, "begin", broken)
    with pytest.raises(OSError, match="No space left"):
        train(dataclasses.replace(TINY, runs_root=str(tmp_path), run_name="a"))
    assert len(compile_threads) == 1 and not compile_threads[0].is_alive()

    monkeypatch.undo()
    made = anakin_run.make_chunk

    def failing_compile(*args, **kwargs):
        chunk = made(*args, **kwargs)

        class Lowered:
            def compile(self):
                raise RuntimeError("RESOURCE_EXHAUSTED: 9 TiB")

        chunk.lower = lambda *a, **k: Lowered()
        return chunk

    monkeypatch.setattr(anakin_run, "make_chunk", failing_compile)
    with pytest.raises(RuntimeError, match="RESOURCE_EXHAUSTED"):
        train(dataclasses.replace(TINY, runs_root=str(tmp_path), run_name="b"))


@pytest.mark.slow
def test_replay_fills_wraps_and_learns_from_samples():
    env = make("catch")
    agent = make_agent("muzero", env.spec, TINY_MUZERO)
    plan = Plan(make_mesh(1), num_envs=8, rollout_length=4, updates_per_chunk=2)
    state = make_init(agent, env, plan)(jax.random.PRNGKey(0))
    assert state.replay.items.action.shape == (1, 24, 5)  # [devices, capacity, T+1]
    chunk = make_chunk(agent, env, plan)
    state, _ = chunk(state)  # 2 rollouts x 8 envs = 16 sequences
    assert int(state.replay.size[0]) == 16 and int(state.replay.insert_index[0]) == 16
    # Every stored row is a real sequence: its first step is some env's observation.
    assert float(np.abs(np.asarray(state.replay.items.timestep.observation[0, :16])).sum()) > 0
    state, metrics = chunk(state)  # 32 sequences into 24 rows: wrapped
    assert int(state.replay.size[0]) == 24 and int(state.replay.insert_index[0]) == 8
    assert int(state.train.update_step) == 4 * 2  # 4 rollouts x 2 learner updates
    # Prioritised: learned priorities replaced the initial 1s of sampled rows.
    assert not np.all(np.asarray(state.replay.priorities) == 1.0)
    assert np.isfinite(float(metrics.losses["losses/total"][0]))
    assert chunk.traces == 1


def test_replay_capacity_below_num_envs_fails_naming_the_field():
    small = MuZeroConfig(replay=ReplayConfig(capacity=4))
    with pytest.raises(ValueError, match=r"MuZeroConfig.replay.capacity=4"):
        AnakinConfig(agent="muzero", num_envs=8, agent_config=small).check_devices(1)


# Recurrent cores: the checkpoint holds each env's core state, so resume stays exact.
RECURRENT = {
    "ppo-lstm": PPOConfig(core="lstm", core_size=8, hidden_sizes=(8,), num_minibatches=2),
    "qlambda-gru": QLambdaConfig(core="gru", core_size=8, hidden_sizes=(8,)),
}


@pytest.mark.parametrize(
    "agent",
    ["qlambda", "ppo", *(pytest.param(a, marks=pytest.mark.slow) for a in ["muzero", *RECURRENT])],
)
def test_resume_is_bit_exact(tmp_path, agent):
    agent_config = TINY_MUZERO if agent == "muzero" else RECURRENT.get(agent)
    agent = agent.split("-")[0]
    config = dataclasses.replace(
        TINY, agent=agent, agent_config=agent_config,
        run_name="a", runs_root=str(tmp_path), checkpoint_interval=TINY.steps_per_chunk,
    )  # fmt: skip
    if agent == "ppo":  # minibatches must divide the rollout
        config = dataclasses.replace(
            config, rollout_length=8, total_env_steps=3 * 320, checkpoint_interval=320,
            log_interval=320,
        )  # fmt: skip
    full = train(config)
    # Pretend the run died after its first checkpoint: keep only checkpoint 1, resume.
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    for step in ("2", "3"):
        shutil.rmtree(tmp_path / "b" / "checkpoints" / step)
    resumed = train(dataclasses.replace(config, run_name="b", resume=True))
    jax.tree.map(
        np.testing.assert_array_equal, jax.device_get(full.state), jax.device_get(resumed.state)
    )
    lines = lambda run: (tmp_path / run / "metrics.jsonl").read_text().splitlines()
    strip = lambda line: {
        k: v
        for k, v in json.loads(line).items()
        if not k.startswith(("timing/", "charts/SPS", "time"))
    }
    assert [strip(x) for x in lines("a")] == [strip(x) for x in lines("b")]


def test_wall_clock_budget_stops_after_the_call_that_passes_it(tmp_path):
    config = dataclasses.replace(TINY, max_wall_seconds=1e-9, run_name="w", runs_root=str(tmp_path))
    result = train(config)
    # A budget shorter than a chunk splits chunks into calls of fewer updates (here 1).
    assert result.env_steps == TINY.steps_per_update and len(result.history) == 1
    assert result.history[0]["timing/elapsed"] > 0
    assert os.listdir(tmp_path / "w" / "checkpoints") == ["1"]  # the final checkpoint
    with pytest.raises(ValueError, match="AnakinConfig.max_wall_seconds"):
        AnakinConfig(max_wall_seconds=-1.0)


def test_rows_within_chunks_fall_where_due_and_learn_what_whole_chunks_learn(tmp_path):
    # Four chunks of 50 updates, a row every 2 updates: the chunk bins its metrics by row,
    # evaluations fall where they are due.
    config = dataclasses.replace(
        TINY, updates_per_chunk=50, total_env_steps=4 * 50 * 32, log_interval=64,
        eval_interval=1600, eval_episodes=4, runs_root=str(tmp_path), run_name="rows",
    )  # fmt: skip
    rows = train(config)
    assert [r["env_steps"] for r in rows.history] == [64 * (i + 1) for i in range(100)]
    evaluated = [r["env_steps"] for r in rows.history if "eval/episodic_return" in r]
    assert evaluated == [1600, 3200, 4800, 6400]
    elapsed = [r["timing/elapsed"] for r in rows.history]
    assert elapsed == sorted(elapsed) and all(r["charts/SPS"] > 0 for r in rows.history)
    chunks = train(dataclasses.replace(config, log_interval=50 * 32, run_name="chunks"))
    assert len(chunks.history) == 4
    jax.tree.map(np.testing.assert_array_equal, jax.device_get(rows.state),
                 jax.device_get(chunks.state))  # fmt: skip
    assert rows.history[-1]["eval/episodic_return"] == chunks.history[-1]["eval/episodic_return"]
    # Episodes are counted once whichever rows they fall in, losses weighted by updates.
    total = lambda result, key: sum(r[key] for r in result.history)
    assert total(rows, "charts/episodes") == total(chunks, "charts/episodes") > 0
    np.testing.assert_allclose(
        total(rows, "losses/value") / 25, total(chunks, "losses/value"), rtol=1e-4
    )


def test_a_run_logs_about_a_hundred_rows_by_default_and_closes_one_at_a_checkpoint(tmp_path):
    config = dataclasses.replace(
        TINY, updates_per_chunk=50, total_env_steps=2 * 50 * 32, log_interval=0,
        checkpoint_interval=800, runs_root=str(tmp_path), run_name="default",
    )  # fmt: skip
    steps = [r["env_steps"] for r in train(config).history]
    # 3,200 env steps: a row every 32 (each update), and none twice at a chunk's end.
    assert steps == [32 * (i + 1) for i in range(100)]
    config = dataclasses.replace(config, total_env_steps=4 * 50 * 32, updates_per_chunk=25,
                                 run_name="checkpoints")  # fmt: skip
    steps = [r["env_steps"] for r in train(config).history]
    # A row every 64 env steps, and one where a checkpoint (every chunk of 800) ends an open
    # row, so that a resume loses none of its episodes.
    checkpoints = [800 * k for k in (1, 3, 5, 7)]
    assert steps == sorted([64 * (i + 1) for i in range(100)] + checkpoints)


def test_a_row_falls_at_the_first_update_that_reaches_each_log_interval(tmp_path):
    # 32 env steps per update, 160 per chunk; the run ends at 256, in its second chunk.
    config = dataclasses.replace(TINY, log_interval=50, total_env_steps=256,
                                 runs_root=str(tmp_path), run_name="i")  # fmt: skip
    steps = [r["env_steps"] for r in train(config).history]
    assert steps == [64, 128, 160, 224, 256]


def test_a_budget_ends_at_the_update_that_reaches_it_and_says_so_before_compiling(
    tmp_path, capfd, monkeypatch
):
    # 32 env steps per update: 100 rounds up to 128, four updates, made by chunks of 3
    # (calls of 3, then 1) as one chunk of 4 makes them.
    config = dataclasses.replace(TINY, total_env_steps=100, updates_per_chunk=3, log_interval=32,
                                 runs_root=str(tmp_path), run_name="rounded")  # fmt: skip
    assert config.num_updates == 4 and config.num_chunks == 2
    line = ("anakin: total_env_steps=100 rounds up to 128: whole updates of 32 env steps "
            "(num_envs 8 x rollout_length 4)")  # fmt: skip
    with monkeypatch.context() as patch:  # said before the chunk compiles (its first call)
        patch.setattr(anakin_run, "call_cap", lambda *_: pytest.fail("compiling"))
        with pytest.raises(pytest.fail.Exception):
            train(dataclasses.replace(config, run_name="stopped"))
    assert line in capfd.readouterr().err
    rounded = train(config)
    assert capfd.readouterr().err.count(line) == 1
    whole = train(dataclasses.replace(config, total_env_steps=128, updates_per_chunk=4,
                                      run_name="whole"))  # fmt: skip
    assert "rounds up" not in capfd.readouterr().err
    assert rounded.env_steps == whole.env_steps == 128
    timeless = lambda rows: [{k: v for k, v in r.items() if "SPS" not in k and "timing" not in k}
                             for r in rows]  # fmt: skip
    assert timeless(rounded.history) == timeless(whole.history)


def test_a_run_films_greedy_episodes_at_its_video_interval(tmp_path):
    pytest.importorskip("imageio_ffmpeg", reason="videos need the video extra")
    config = dataclasses.replace(
        TINY, env="catch", video_interval=160, video_episodes=1, run_name="films",
        runs_root=str(tmp_path),
    )  # fmt: skip
    result = anakin_run.train(config)
    films = sorted(os.listdir(os.path.join(result.run_dir, "videos")), key=lambda f: int(f[:-4]))
    assert films == ["160.mp4", "320.mp4", "480.mp4"]  # each interval crossed, and the end
