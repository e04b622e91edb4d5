"""Many seeds (`num_seeds`) or a sweep's members (`sweep`) in one program: each is the
run it would be alone; bad sweep specs fail in one line before anything compiles."""

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

from podracer.agents import QLambdaConfig
from podracer.agents.validation import ConfigError
from podracer.anakin import AnakinConfig
from podracer.anakin import train
from podracer.runs import parse_cli
from podracer.runs.source import load
from podracer.runs.source import parse_source
from podracer.runs.sweep import num_members
from podracer.runs.sweep import tags_of_member
from podracer.runs.tools.records import group_runs
from podracer.runs.tools.records import load_runs
from podracer.runs.tools.sweep_best import main as sweep_best
from podracer.runs.writer import read_tensorboard

VOLATILE = ("time", "charts/SPS", "timing/")
SWEEP = ("qlambda.learning_rate=1e-3,3e-3", "qlambda.lambda_=0.5,0.9")


def tiny(tmp_path, **changes) -> AnakinConfig:
    fields = dict(num_envs=8, rollout_length=8, updates_per_chunk=4, total_env_steps=3 * 256,
                  runs_root=str(tmp_path), progress=False, eval_interval=512, log_interval=256,
                  eval_episodes=4)  # fmt: skip
    return AnakinConfig(**{**fields, **changes})


def learning(rows):
    skip = lambda k: k.startswith((*VOLATILE, "sweep/")) or k in ("seed", "member")  # noqa: E731
    return [{k: v for k, v in r.items() if not skip(k)} for r in rows]


def rows_of(path):
    return [json.loads(line) for line in (path / "metrics.jsonl").read_text().splitlines()]


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


PBT = {"sweep": SWEEP, "pbt_interval": 256}


@pytest.mark.parametrize("members", [{"num_seeds": 2}, {"sweep": SWEEP[:1]}, PBT])
def test_a_multi_seed_run_a_sweep_or_pbt_resumes_exactly(tmp_path, members):
    config = tiny(tmp_path, **members, run_name="a", checkpoint_interval=256)
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
    if "pbt_interval" in members:  # mid-PBT: the same steps, the same lineage
        swept = lambda name: [{k: v for k, v in r.items() if k.startswith("sweep/")}  # noqa: E731
                              for r in rows_of(tmp_path / name)]  # fmt: skip
        assert swept("a") == swept("b")
        lineage = lambda name: (tmp_path / name / "pbt.jsonl").read_text()  # noqa: E731
        assert lineage("a") == lineage("b") and len(lineage("a").splitlines()) == 3
    if "sweep" in members:  # the grid defines what is learned: a resume keeps it
        with pytest.raises(ConfigError, match="sweep"):
            train(dataclasses.replace(config, run_name="b", resume=True, sweep=()))


@pytest.mark.parametrize("members", [{"num_seeds": 4}, pytest.param(PBT, marks=pytest.mark.slow)])
def test_members_in_turns_learn_as_side_by_side(tmp_path, members):
    # Four members two at a time (a scan over vmapped pairs): the same rows and state as
    # all four side by side, PBT's exploit steps included. Not bit for bit: XLA may order
    # a batched matmul's sums differently for 2 members than for 4.
    side = train(tiny(tmp_path, **members, run_name="side"))
    turns = train(tiny(tmp_path, **members, members_at_once=2, run_name="turns"))
    jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6),
                 jax.device_get(side.state), jax.device_get(turns.state))  # fmt: skip
    for a, b in zip(learning(side.history), learning(turns.history), strict=True):
        assert a.keys() == b.keys()
        for name in a:
            assert a[name] == pytest.approx(b[name], rel=1e-4, abs=1e-6), name


def test_members_in_turns_need_a_fraction_of_the_temporaries():
    # What the setting is for: XLA's own count of the chunk's temporaries (activations,
    # gradients) for 4 members side by side, two at a time and one at a time.
    from podracer.anakin.run import build
    from podracer.anakin.run import make_env
    from podracer.anakin.run import member_keys

    temporaries = []
    for at_once in (0, 2, 1):
        config = AnakinConfig(num_seeds=4, members_at_once=at_once, num_envs=128, progress=False)
        _, program = build(config, make_env(config))
        state = program.init(member_keys(config))
        temporaries.append(
            program.chunk.lower(state).compile().memory_analysis().temp_size_in_bytes
        )
    side, pairs, single = temporaries
    assert pairs < 0.6 * side and single < 0.6 * pairs, temporaries


@pytest.mark.parametrize(("members_at_once", "message"), [
    (3, "members_at_once must be 0 (all) or a divisor of the run's 4 members (num_seeds x "
        "sweep points): 1, 2, 4"),
    (8, "a divisor of the run's 4 members"),
    (-1, "members_at_once must be"),
])  # fmt: skip
def test_members_at_once_must_divide_the_members(members_at_once, message):
    with pytest.raises(ConfigError) as info:
        AnakinConfig(num_seeds=4, members_at_once=members_at_once)
    assert message in str(info.value) and "\n" not in str(info.value)


@pytest.mark.slow
def test_a_member_of_a_sweep_is_the_single_run_with_its_values_and_seed(tmp_path):
    sweep = train(tiny(tmp_path, seed=10, num_seeds=2, sweep=SWEEP, run_name="sweep"))
    params = jax.device_get(sweep.state.train.params)
    # Member 5: point (3e-3, 0.5) (the first field varies slowest), seed index 1.
    config = QLambdaConfig(learning_rate=3e-3, lambda_=0.5)
    alone = train(tiny(tmp_path, seed=11, agent_config=config, run_name="alone"))
    jax.tree.map(
        lambda a, b: np.testing.assert_allclose(np.asarray(a)[5], b, rtol=1e-5, atol=1e-6),
        params, jax.device_get(alone.state.train.params),
    )  # fmt: skip
    member = [r for r in sweep.history if r["member"] == 5]
    assert {(r["seed"], r["sweep/qlambda.learning_rate"], r["sweep/qlambda.lambda_"])
            for r in member} == {(1, 3e-3, 0.5)}  # fmt: skip
    for a, b in zip(learning(member), learning(alone.history), strict=True):
        assert a.keys() == b.keys()
        for name in a:
            assert a[name] == pytest.approx(b[name], rel=1e-4, abs=1e-6), name
    # A member's checkpoint loads as that member: its params, its point's agent config.
    loaded = load(parse_source("sweep:5", tmp_path))
    jax.tree.map(lambda a, b: np.testing.assert_array_equal(a, np.asarray(b)[5]),
                 loaded.params, params)  # fmt: skip
    assert loaded.agent.config == config
    with pytest.raises(ConfigError, match="member 8 of a run of 8 member"):
        load(parse_source("sweep:8", tmp_path))
    # Every member learned something different: the values reached the program.
    losses = {r["member"]: r["losses/total"] for r in sweep.history if r["env_steps"] == 768}
    assert len(set(losses.values())) == 8
    for r in sweep.history:  # each member's rows log its own learning rate
        assert r["charts/learning_rate"] == pytest.approx(r["sweep/qlambda.learning_rate"])

    # The rows, TensorBoard and the tools see the members and their values.
    logged = rows_of(tmp_path / "sweep")
    assert [r["member"] for r in logged[:8]] == list(range(8))
    stored = json.loads((tmp_path / "sweep" / "config.json").read_text())
    assert num_members(stored) == 8
    assert tags_of_member(stored, 5) == {
        k: v for k, v in logged[5].items() if k in ("member", "seed") or k.startswith("sweep/")
    }
    folders = sorted(p.name for p in (tmp_path / "sweep" / "tensorboard").iterdir())
    assert folders[5] == "member_5_qlambda.learning_rate=0.003_qlambda.lambda_=0.5_seed_1"
    scalars = read_tensorboard(tmp_path / "sweep" / "tensorboard" / folders[5])
    assert ("sweep/qlambda.learning_rate", 768, pytest.approx(3e-3)) in scalars
    groups = group_runs(load_runs([tmp_path / "sweep", tmp_path / "alone"]))
    assert len(groups) == 4 and [len(g.seeds) for g in groups] == [2, 2, 3, 2]
    by_lr = group_runs(load_runs([tmp_path / "sweep"]), by=["qlambda.learning_rate"])
    assert [g.label for g in by_lr] == ["qlambda on catch (learning_rate=0.001)",
                                         "qlambda on catch (learning_rate=0.003)"]  # fmt: skip
    assert [len(g.seeds) for g in by_lr] == [4, 4]

    # sweep-best writes the best point's config; rerun, its seeds are that point's members.
    assert sweep_best([str(tmp_path / "sweep")]) == 0
    best = json.loads((tmp_path / "sweep" / "best_config.json").read_text())
    assert best["sweep"] == [] and best["num_seeds"] == 2 and best["run_name"] is None
    finals = {}
    for r in logged:
        if r["env_steps"] == 768:
            finals.setdefault((r["sweep/qlambda.learning_rate"], r["sweep/qlambda.lambda_"]),
                              []).append(r["charts/episodic_return"])  # fmt: skip
    means = {k: np.nanmean(v) for k, v in finals.items()}
    lr, lam = max(means, key=means.get)  # one row per member: its final rows' mean is this
    assert (best["agent_config"]["learning_rate"], best["agent_config"]["lambda_"]) == (lr, lam)


def test_pbt_copies_the_best_members_into_the_worst_and_perturbs_within_the_grid():
    from podracer.agents import TrainState
    from podracer.anakin.runtime import PERTURB_FACTORS
    from podracer.anakin.runtime import Population
    from podracer.anakin.runtime import RunnerState
    from podracer.anakin.runtime import make_exploit
    from podracer.anakin.runtime import make_mesh

    members = 6
    ids = np.arange(members, dtype=np.float32)
    train = TrainState({"w": ids[:, None] * np.ones((members, 3), np.float32)},
                       {"mu": -ids}, np.zeros((members, 2), np.uint32),
                       np.zeros(members, np.int32))  # fmt: skip
    envs = np.zeros((members, 2), np.float32)  # [M, N]: each member's 2 envs
    returns = np.array([1.0, 5.0, -2.0, 3.0, 0.0, 9.0], np.float32)
    counts = np.array([1, 1, 1, 1, 0, 1], np.float32)  # member 4 saw no episode end: last
    lr = np.array([1e-3, 2e-3, 3e-3, 4e-3, 5e-3, 6e-3], np.float32)
    population = Population({"learning_rate": lr}, returns, counts)
    state = RunnerState(train, envs, envs, np.zeros((members, 2, 2), np.uint32), None, (),
                        population)  # fmt: skip
    exploit = make_exploit(make_mesh(1), members, 2, {"learning_rate": (1e-3, 6e-3)})
    new, sources = jax.device_get(exploit(state, jax.random.PRNGKey(0)))
    # Worst: 4 (no episode), then 2; best: 5, then 1. The rest keep their own state.
    assert list(sources[[0, 1, 3, 5]]) == [0, 1, 3, 5]
    assert sources[4] in (1, 5) and sources[2] in (1, 5)
    np.testing.assert_array_equal(new.train.params["w"][:, 0], sources.astype(np.float32))
    np.testing.assert_array_equal(new.train.opt_state["mu"], -sources.astype(np.float32))
    values = new.population.values["learning_rate"]
    np.testing.assert_array_equal(values[[0, 1, 3, 5]], lr[[0, 1, 3, 5]])
    for m in (2, 4):  # the source's value scaled by 0.8 or 1.2, clipped to the grid's range
        candidates = np.clip(lr[sources[m]] * np.float32(PERTURB_FACTORS), 1e-3, 6e-3)
        assert np.isclose(values[m], candidates).any(), (m, values[m], candidates)
    assert not new.population.return_sum.any() and not new.population.episode_count.any()


def test_a_pbt_run_records_its_lineage_and_rows_carry_the_values_in_force(tmp_path):
    result = train(tiny(tmp_path, run_name="pbt", **PBT, log_interval=128))
    lineage = [json.loads(x) for x in (tmp_path / "pbt" / "pbt.jsonl").read_text().splitlines()]
    assert [line["env_steps"] for line in lineage] == [256, 512, 768]
    for line in lineage:
        assert sum(s != m for m, s in enumerate(line["sources"])) == 1  # 0.25 of 4 members
    # A row after a step carries the values that step left in force.
    after = {r["member"]: r["sweep/qlambda.learning_rate"]
             for r in result.history if r["env_steps"] == 384}  # fmt: skip
    assert [after[m] for m in range(4)] == pytest.approx(
        lineage[0]["values"]["sweep/qlambda.learning_rate"]
    )
    # each written as its float32's shortest text, which reads back to the same float32
    for value in lineage[-1]["values"]["sweep/qlambda.learning_rate"]:
        assert len(repr(value)) <= 12 and str(np.float32(value)) == repr(value)
    # sweep-best writes a config that reruns (a single member: no population to train).
    assert sweep_best([str(tmp_path / "pbt")]) == 0
    best = json.loads((tmp_path / "pbt" / "best_config.json").read_text())
    assert best["pbt_interval"] == 0 and best["sweep"] == []
    assert parse_cli(AnakinConfig, ["--config", str(tmp_path / "pbt" / "best_config.json")])


def test_sweep_best_into_a_folder_that_cannot_hold_the_file_is_one_line(tmp_path, capsys):
    train(tiny(tmp_path, run_name="s", sweep=SWEEP[:1], total_env_steps=256))
    capsys.readouterr()
    assert sweep_best([str(tmp_path / "s"), "--write", str(tmp_path / "no" / "best.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("podracer sweep-best: error: ") and err.count("\n") == 1, err


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"pbt_interval": 256}, "AnakinConfig.pbt_interval must be 0 without a sweep"),
        ({"pbt_interval": 256, "sweep": SWEEP, "pbt_fraction": 0.6}, "must be in (0, 0.5]"),
        ({"pbt_interval": 256, "sweep": SWEEP, "pbt_fraction": 0.2}, "at least 1 / 4"),
        (
            {"pbt_interval": 5000, "sweep": SWEEP, "total_env_steps": 4096},
            "AnakinConfig.pbt_interval must be at most the run's 4,096 env steps",
        ),
    ],
)
def test_bad_pbt_settings_fail_in_one_line(changes, message):
    with pytest.raises(ConfigError) as info:
        AnakinConfig(**changes)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("qlambda.learning_rat=1e-3", "has no field 'learning_rat'; did you mean"),
        ("qlambda.num_epochs=1,2", "qlambda.num_epochs cannot be swept: members"),
        ("qlambda.max_grad_norm=1,2", "sweepable: qlambda.learning_rate, qlambda.gamma"),
        ("qlambda.optimizer=1", "qlambda.optimizer cannot be swept"),
        ("qlambda.learning_rate=", "needs a comma-separated list of numbers"),
        ("qlambda.learning_rate=1e-3,,1", "needs a comma-separated list of numbers"),
        ("qlambda.learning_rate=1e-3,inf", "values must be finite"),
        ("qlambda.learning_rate=1e-3,x", "values must be numbers, got 'x'"),
        ("qlambda.learning_rate=1e-3,1e-3", "lists a value twice"),
        ("qlambda.learning_rate=-1", "learning_rate=-1: QLambdaConfig.learning_rate must be"),
        ("ppo.learning_rate=1e-3", "the run's agent is 'qlambda'"),
        ("learning_rate", "must be FIELD=V1,V2"),
    ],
)
def test_a_bad_sweep_spec_fails_in_one_line_naming_it(spec, message):
    with pytest.raises(ConfigError, match="AnakinConfig.sweep") as info:
        AnakinConfig(sweep=(spec,))
    assert message in str(info.value) and "\n" not in str(info.value)


def test_a_field_the_agent_reads_in_python_is_refused_before_compiling(tmp_path):
    """An agent of the user's that declares a number sweepable but branches on it: the
    trace fails, naming it; one its config does not declare is refused when parsed; a
    factory that takes no `hyper` is refused before anything traces."""
    code = textwrap.dedent(
        """
        import dataclasses
        from typing import ClassVar
        from podracer.agents import Hyperparams, QLambdaConfig, make_agent, register_agent

        @dataclasses.dataclass(frozen=True)
        class BranchyConfig(QLambdaConfig):
            SWEEPABLE: ClassVar[tuple[str, ...]] = ("gamma", "threshold")
            threshold: float = 0.5
            strict: float = 1.0

        def make_branchy(spec, config, total_updates=None, hyper=None):
            hp = Hyperparams(config, hyper)
            lr = 1e-4 if hp.threshold > 0.7 else 1e-3  # Python reads it: it cannot be swept
            base = QLambdaConfig(**{f.name: getattr(config, f.name)
                                    for f in dataclasses.fields(QLambdaConfig)})
            base = dataclasses.replace(base, learning_rate=lr)
            return make_agent("qlambda", spec, base, total_updates,
                              {k: v for k, v in (hyper or {}).items() if k == "gamma"})

        def make_plain(spec, config, total_updates=None):
            return make_branchy(spec, config, total_updates)

        register_agent("branchy", BranchyConfig, make_branchy)
        register_agent("plain", BranchyConfig, make_plain)
        """
    )
    (tmp_path / "branchy_agent.py").write_text(code)
    sys.path.insert(0, str(tmp_path))
    try:
        import branchy_agent  # noqa: F401

        config = tiny(tmp_path, agent="branchy", run_name="b",
                      sweep=("branchy.threshold=0.5,0.9", "branchy.gamma=0.9,0.99"))  # fmt: skip
        with pytest.raises(ConfigError) as info:
            train(config)
        assert str(info.value).startswith(
            "AnakinConfig.sweep: agent 'branchy' reads branchy.threshold in Python"
        )
        with pytest.raises(ConfigError) as info:
            dataclasses.replace(config, sweep=("branchy.strict=1,2",), run_name="s")
        assert "branchy.strict cannot be swept" in str(info.value)
        assert "sweepable: branchy.gamma, branchy.threshold" in str(info.value)
        plain = dataclasses.replace(config, agent="plain", sweep=("plain.gamma=0.9,0.99",))
        with pytest.raises(ConfigError, match="its factory takes no `hyper`"):
            train(plain)
        # Sweeping only what it reads arithmetically runs.
        result = train(dataclasses.replace(config, sweep=("branchy.gamma=0.9,0.99",), run_name="c"))
        assert {r["member"] for r in result.history} == {0, 1}
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("branchy_agent", None)


def test_a_sweep_s_compile_figure_counts_the_trace_its_check_made_before_the_loop(
    tmp_path, monkeypatch
):
    # A sweep's check traces and lowers the chunk in `build`; the first chunk call then
    # only compiles. The summary's compile figure counts that trace, as without a sweep
    # (on the chip a resumed sweep read 5.4 s where the same start without one read 15.8).
    import time

    import podracer.anakin.run as anakin_run

    made = anakin_run.make_chunk

    def slow_to_trace(*args, **kwargs):  # a chunk whose trace takes 3 s more
        chunk = made(*args, **kwargs)
        lower = chunk.lower
        chunk.lower = lambda *a, **k: (time.sleep(3.0), lower(*a, **k))[1]
        return chunk

    monkeypatch.setattr(anakin_run, "make_chunk", slow_to_trace)
    result = train(tiny(tmp_path, sweep=SWEEP[:1], total_env_steps=256, run_name="s"))
    assert result.compile_seconds >= 3.0, result.compile_seconds


# Builds a 3-seed PPO init (Flax's orthogonal initialisers are LAPACK QRs) and calls it
# again and again, with XLA's default flags: vmapped over seeds it deadlocked XLA:CPU's
# concurrency-optimized scheduler within a few calls (benchmarks/results/xla_cpu_deadlock.py).
def test_muzero_sweeps_its_search_s_numbers():
    """MuZero hands its search a member's swept numbers (a greedy copy without the
    noise): it traces."""
    from podracer.agents import MuZeroConfig
    from podracer.agents import ReplayConfig
    from podracer.anakin.run import build
    from podracer.anakin.run import make_env
    from podracer.search import DiscreteSupport
    from podracer.search import SearchConfig

    muzero = MuZeroConfig(
        num_unroll_steps=2, td_steps=2, search=SearchConfig(num_simulations=2),
        value_support=DiscreteSupport(-2.0, 2.0, 5, scaled=True),
        reward_support=DiscreteSupport(-1.0, 1.0, 3, scaled=True),
        torso_hidden_sizes=(8,), latent_size=8, hidden_sizes=(8,),
        replay=ReplayConfig(capacity=32, sequences_per_update=4),
    )  # fmt: skip
    config = AnakinConfig(agent="muzero", agent_config=muzero, num_envs=8, rollout_length=4,
                          updates_per_chunk=2, eval_interval=64, eval_episodes=4,
                          sweep=("muzero.search.value_scale=0.05,0.1",
                                 "muzero.search.gumbel_scale=1,2"))  # fmt: skip
    _, program = build(config, make_env(config))
    assert program.abstract.train.update_step.shape == (4,)


_REPEATED_INIT = """
import jax
from podracer.anakin import AnakinConfig
from podracer.anakin.run import build, make_env, member_keys
config = AnakinConfig(env="gymnax:MemoryChain-bsuite", agent="ppo", num_envs=8, num_seeds=3,
                      rollout_length=8, progress=False)
_, program = build(config, make_env(config))
for k in range(40):
    jax.block_until_ready(program.init(member_keys(config, offset=k)))
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
