"""Another run's checkpoint as a source: RUN[@STEP][:SEED], loading, warm starts, errors."""

import dataclasses
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from podracer.agents import QLambdaConfig
from podracer.agents import init_train_state
from podracer.agents import make_agent
from podracer.agents.validation import ConfigError
from podracer.envs import EnvSpec
from podracer.runs import Checkpointer
from podracer.runs import to_jsonable
from podracer.runs.source import load
from podracer.runs.source import parse_source
from podracer.runs.source import warm_start

SPEC = EnvSpec("probe", (3,), "float32", 2)
CONFIG = QLambdaConfig(hidden_sizes=(8,))


def save_run(root, name, steps=(1, 2), evaluated=None, num_seeds=1):
    """A run directory as a runtime writes it: config.json and checkpoints of a qlambda
    agent whose params at step s are its initial params + s."""
    agent = make_agent("qlambda", SPEC, CONFIG)
    state = init_train_state(agent, jax.random.PRNGKey(0))
    if num_seeds > 1:
        state = jax.tree.map(lambda x: np.stack([x] * num_seeds), state)
    config = {"runtime": "toy", "env": "probe", "agent": "qlambda", "num_seeds": num_seeds,
              "agent_config": to_jsonable(CONFIG)}  # fmt: skip
    (root / name).mkdir()
    (root / name / "config.json").write_text(json.dumps(config))
    best = "eval/episodic_return" if evaluated else None
    with Checkpointer(root / name / "checkpoints", best_metric=best) as ckpt:
        for step in steps:
            moved = state._replace(params=jax.tree.map(lambda x, s=step: x + s, state.params))
            metrics = {best: evaluated[step]} if evaluated else None
            meta = {"runtime": "toy", "agent": "qlambda", "config": config,
                    "env_spec": SPEC.to_json(), "env_steps": 100 * step, "step": step}  # fmt: skip
            ckpt.save(step, moved, meta, metrics=metrics)
    return agent, state


def first_param(params):
    return float(np.ravel(jax.tree.leaves(params)[0])[0])


def test_sources_name_a_run_a_step_and_a_seed(tmp_path):
    save_run(tmp_path, "a")
    source = parse_source("a", tmp_path)
    # No `:K`: None, so that `podracer eval` takes every member (loading reads member 0).
    expected = (str(tmp_path / "a"), "latest", None)
    assert (source.run.path, source.step, source.seed_index) == expected
    assert parse_source(str(tmp_path / "a")).run.path == source.run.path
    source = parse_source("a@best:3", tmp_path)
    assert (source.step, source.seed_index) == ("best", 3)
    assert parse_source("a@2", tmp_path).step == 2
    with pytest.raises(ConfigError, match="STEP must be latest, best or a number"):
        parse_source("a@last", tmp_path)
    with pytest.raises(ConfigError, match="no run at 'b'"):
        parse_source("b", tmp_path)


def test_load_reads_the_step_asked_for(tmp_path):
    agent, state = save_run(tmp_path, "a", steps=(1, 2, 3))
    base = first_param(state.params)
    for text, step in (("a", 3), ("a@1", 1)):
        loaded = load(parse_source(text, tmp_path), SPEC)
        assert loaded.step == step and loaded.metadata["env_steps"] == 100 * step
        assert first_param(loaded.params) == pytest.approx(base + step)
        assert loaded.agent.config == CONFIG
    with pytest.raises(ConfigError, match=r"no checkpoint 7; its checkpoints: \[1, 2, 3\]"):
        load(parse_source("a@7", tmp_path), SPEC)
    with pytest.raises(ConfigError, match="no evaluated checkpoint to call best"):
        load(parse_source("a@best", tmp_path), SPEC)


def test_best_is_the_checkpoint_with_the_highest_greedy_return(tmp_path):
    save_run(tmp_path, "e", steps=(1, 2, 3), evaluated={1: 5.0, 2: 9.0, 3: 1.0})
    assert load(parse_source("e@best", tmp_path)).step == 2


def test_a_seed_of_a_multi_seed_run(tmp_path):
    _, state = save_run(tmp_path, "m", steps=(1,), num_seeds=3)
    loaded = load(parse_source("m:2", tmp_path))
    assert first_param(loaded.params) == pytest.approx(first_param(state.params) + 1)
    with pytest.raises(ConfigError, match="seed 3 of a run of 3 seed"):
        load(parse_source("m:3", tmp_path))


def test_another_env_spec_is_refused_naming_both(tmp_path):
    save_run(tmp_path, "a")
    other = dataclasses.replace(SPEC, name="wide", observation_shape=(5,))
    with pytest.raises(ConfigError, match=r"trained on observations \(3,\) float32, 2 discrete "
                       r"actions; wide is observations \(5,\)"):  # fmt: skip
        load(parse_source("a", tmp_path), other)


def test_warm_start_takes_the_params_and_checks_the_network(tmp_path):
    save_run(tmp_path, "a")
    loaded = load(parse_source("a", tmp_path), SPEC)
    agent = make_agent("qlambda", SPEC, CONFIG)
    fresh = init_train_state(agent, jax.random.PRNGKey(9))
    started = warm_start(loaded, fresh, opt_state=False)
    assert first_param(started.params) == first_param(loaded.params)
    assert jax.tree.structure(started) == jax.tree.structure(fresh)
    seeds = jax.tree.map(lambda x: jnp.stack([x] * 2), fresh)
    both = warm_start(loaded, seeds, opt_state=True, num_seeds=2)
    np.testing.assert_array_equal(
        jax.tree.leaves(both.params)[0][1], jax.tree.leaves(loaded.params)[0]
    )
    wider = init_train_state(make_agent("qlambda", SPEC, QLambdaConfig(hidden_sizes=(16,))),
                             jax.random.PRNGKey(0))  # fmt: skip
    fits = r"network at .*float32\[2, 16\] here, float32\[2, 8\] there"
    with pytest.raises(ConfigError, match=fits):
        warm_start(loaded, wider, opt_state=False)
