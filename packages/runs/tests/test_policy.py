"""`podracer.runs.load`: a saved agent as a Policy that acts, on run directories written as
the runtimes write them (both runtimes' runs: tests/test_load_policy.py)."""

import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from podracer.agents import ImpalaConfig
from podracer.agents import QLambdaConfig
from podracer.agents import init_train_state
from podracer.agents import make_agent
from podracer.envs import EnvSpec
from podracer.runs import Checkpointer
from podracer.runs import Policy
from podracer.runs import load
from podracer.runs import to_jsonable
from podracer.runs.sweep import num_members

SPEC = EnvSpec("probe", (3,), "float32", 4)
QLAMBDA = QLambdaConfig(hidden_sizes=(8,))
OBS = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)


def save_run(root, name, agent_name="qlambda", agent_config=QLAMBDA, num_seeds=1, sweep=(),
             steps=(1, 2)):  # fmt: skip
    """A run directory as a runtime writes it; member k's params at step s are its own
    initial params (key k) + s."""
    config = {"runtime": "toy", "env": "probe", "agent": agent_name, "num_seeds": num_seeds,
              "seed": 10, "sweep": list(sweep),
              "agent_config": to_jsonable(agent_config)}  # fmt: skip
    agent = make_agent(agent_name, SPEC, agent_config)
    count = num_members(config)
    members = [init_train_state(agent, jax.random.PRNGKey(k)) for k in range(count)]
    state = members[0] if count == 1 else jax.tree.map(lambda *x: np.stack(x), *members)
    (root / name).mkdir()
    (root / name / "config.json").write_text(json.dumps(config))
    with Checkpointer(root / name / "checkpoints") as ckpt:
        for step in steps:
            moved = state._replace(params=jax.tree.map(lambda x, s=step: x + s, state.params))
            meta = {"runtime": "toy", "agent": agent_name, "config": config,
                    "env_spec": SPEC.to_json(), "env_steps": 100 * step, "step": step}  # fmt: skip
            ckpt.save(step, moved, meta)
    return agent, [m.params for m in members]


def shifted(params, step):
    return jax.tree.map(lambda x: x + step, params)


def test_greedy_actions_are_the_agent_s_for_numpy_and_jax_single_and_batch(tmp_path):
    agent, (params,) = save_run(tmp_path, "a")
    policy = load("a", runs_root=tmp_path)
    assert isinstance(policy, Policy) and policy.step == 2 and policy.env_steps == 200
    assert policy.spec == SPEC and policy.agent.config == QLAMBDA
    assert policy.config["agent"] == "qlambda" and policy.member == {"seed": 10}
    expected, _ = agent.greedy_act(shifted(params, 2), jnp.asarray(OBS))
    batch = policy.act(OBS)
    assert isinstance(batch, np.ndarray) and batch.shape == (5,)
    np.testing.assert_array_equal(batch, expected)
    on_device = policy.act(jnp.asarray(OBS))
    assert isinstance(on_device, jax.Array) and on_device.shape == (5,)
    np.testing.assert_array_equal(on_device, expected)
    for i in range(5):  # one observation: one action, no batch axis
        one = policy.act(OBS[i])
        assert isinstance(one, np.ndarray) and one.shape == () and one == expected[i]
        assert policy.act(jnp.asarray(OBS[i])) == expected[i]
    assert policy.act(OBS.tolist()).tolist() == np.asarray(expected).tolist()  # lists, float64
    with pytest.raises(ValueError, match=r"of shape \(3,\) or \[B, \*\(3,\)\].*got \(5, 4\)"):
        policy.act(np.zeros((5, 4)))


def test_a_checkpoint_is_named_by_step_folder_or_keyword(tmp_path):
    agent, (params,) = save_run(tmp_path, "a")
    expected, _ = agent.greedy_act(shifted(params, 1), jnp.asarray(OBS))
    for policy in (load(tmp_path / "a" / "checkpoints" / "1"), load("a@1", runs_root=tmp_path),
                   load(tmp_path / "a", checkpoint=1)):  # fmt: skip
        assert policy.step == 1
        np.testing.assert_array_equal(policy.act(OBS), expected)
    assert load(tmp_path / "a", checkpoint="latest").step == 2


def test_sampled_actions_follow_the_key_or_the_policy_s_own_seed(tmp_path):
    save_run(tmp_path, "a", agent_config=QLambdaConfig(hidden_sizes=(8,), epsilon=1.0))
    policy = load(tmp_path / "a")
    obs = np.repeat(OBS[:1], 64, axis=0)
    key = jax.random.PRNGKey(3)
    drawn = policy.act(obs, greedy=False, key=key)
    np.testing.assert_array_equal(policy.act(obs, greedy=False, key=key), drawn)
    assert len(set(drawn.tolist())) > 1  # epsilon 1: uniform actions
    first, second = policy.act(obs, greedy=False), policy.act(obs, greedy=False)
    assert (first != second).any()  # the policy's own stream moves on
    again = load(tmp_path / "a")
    np.testing.assert_array_equal(again.act(obs, greedy=False), first)  # seed=0 both
    assert (load(tmp_path / "a", seed=1).act(obs, greedy=False) != first).any()


@pytest.mark.slow
def test_each_member_of_a_multi_seed_run_loads_its_own_params(tmp_path):
    agent, members = save_run(tmp_path, "m", num_seeds=3)
    for k, params in enumerate(members):
        for policy in (load(f"{tmp_path}/m:{k}"), load(tmp_path / "m", member=k)):
            assert policy.member == {"member": k, "seed": 10 + k}
            for ours, theirs in zip(jax.tree.leaves(policy.params),
                                    jax.tree.leaves(shifted(params, 2)), strict=True):  # fmt: skip
                np.testing.assert_array_equal(ours, theirs)
    line = (rf"{tmp_path}/m is a run of 3 seeds; name one: {tmp_path}/m:0 \.\. {tmp_path}/m:2, "
            r"or member=0 \.\. 2$")  # fmt: skip
    with pytest.raises(ValueError, match=line):
        load(tmp_path / "m")
    with pytest.raises(ValueError, match="seed 3 of a run of 3 seed"):
        load(tmp_path / "m", member=3)
    with pytest.raises(ValueError, match="names member 1, member=2 another"):
        load(f"{tmp_path}/m:1", member=2)


def test_a_sweep_member_carries_its_values(tmp_path):
    sweep = ["qlambda.learning_rate=0.001,0.01"]
    agent, members = save_run(tmp_path, "s", num_seeds=2, sweep=sweep)  # 2 points x 2 seeds
    policy = load(tmp_path / "s", member=2)  # the second point's first seed
    values = {"sweep/qlambda.learning_rate": 0.01}
    assert policy.member == {"member": 2, "seed": 10, "values": values}
    assert policy.agent.config.learning_rate == 0.01
    expected, _ = agent.greedy_act(shifted(members[2], 2), jnp.asarray(OBS))
    np.testing.assert_array_equal(policy.act(OBS), expected)
    with pytest.raises(ValueError, match=r"run of 4 members \(a sweep\)"):
        load(tmp_path / "s")


def test_a_recurrent_agent_keeps_its_state_per_batch_until_reset(tmp_path):
    config = ImpalaConfig(hidden_sizes=(8,), core="gru", core_size=4)
    agent, (params,) = save_run(tmp_path, "r", agent_name="impala", agent_config=config)
    policy = load(tmp_path / "r")
    params = shifted(params, 2)
    obs = jnp.asarray(OBS)
    core = agent.initial_core(5)
    for t in range(3):  # the agent's own loop, with a reset of env 0 at t = 2
        first = jnp.asarray([t == 2, False, False, False, False])
        expected, core = agent.greedy_act(params, obs * (t + 1), core, first)
        np.testing.assert_array_equal(policy.act(OBS * (t + 1), first=np.asarray(first)), expected)
        policy.act(OBS[0])  # another batch size: a state of its own
    policy.reset()
    expected, _ = agent.greedy_act(params, obs, agent.initial_core(5))
    np.testing.assert_array_equal(policy.act(OBS), expected)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("nowhere", r"podracer.runs.load: no run at 'nowhere'"),
        ("a@last", "STEP must be latest, best or a number"),
        ("a@9", r"no checkpoint 9; its checkpoints: \[1, 2\]"),
        ("a@best", "no evaluated checkpoint to call best"),
        ("garbled", r"checkpoints/2: metadata unreadable"),
    ],
)
def test_a_bad_source_is_one_line(tmp_path, source, message):
    save_run(tmp_path, "a")
    save_run(tmp_path, "garbled")
    for path in (tmp_path / "garbled" / "checkpoints" / "2").rglob("*"):
        if path.is_file():
            path.write_bytes(b"\0garbled")
    with pytest.raises(ValueError, match=message) as raised:
        load(source, runs_root=tmp_path)
    assert "\n" not in str(raised.value) and raised.value.__cause__ is None
    assert raised.value.__suppress_context__ or raised.value.__context__ is None
