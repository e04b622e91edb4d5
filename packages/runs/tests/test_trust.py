"""Trust for the code a run directory names (issue #54): a copied run dir must not choose
which module is imported. Each case checks the module was not imported (it writes a file
when it is) until the user trusts it: `--trust-code`, `trust_code=True`, or naming it."""

import json
import sys
import textwrap
import uuid

import jax
import pytest

from podracer.agents import QLambdaConfig
from podracer.agents import init_train_state
from podracer.agents import make_agent
from podracer.agents.registry import AGENTS
from podracer.agents.validation import ConfigError
from podracer.envs import make
from podracer.runs import Checkpointer
from podracer.runs import RunConfig
from podracer.runs import config_from_json
from podracer.runs import load as load_policy
from podracer.runs import to_jsonable
from podracer.runs.cli import defaults
from podracer.runs.source import load
from podracer.runs.source import parse_source
from podracer.runs.tools import evaluate
from podracer.runs.trust import check_trusted

CONFIG = QLambdaConfig(hidden_sizes=(8,))
MODULE = """
import pathlib
pathlib.Path({marker!r}).write_text("imported")

from podracer.agents import Agent, QLambdaConfig, make_agent


def make_mine(spec, config: QLambdaConfig, total_updates=None) -> Agent:
    return make_agent("qlambda", spec, config, total_updates)
"""


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """`(module name, marker file)`: a module of the user's, not imported yet; importing
    it writes the marker."""
    name = f"untrusted_{uuid.uuid4().hex[:8]}"
    marker = tmp_path / f"{name}.imported"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(MODULE.format(marker=str(marker))))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name, marker
    sys.modules.pop(name, None)
    AGENTS.pop(f"{name}:make_mine", None)


def save_run(root, agent, runtime="toy"):
    """A run of agent `agent` on catch, as a runtime writes it (config.json, a checkpoint)."""
    spec = make("catch").spec
    state = init_train_state(make_agent("qlambda", spec, CONFIG), jax.random.PRNGKey(0))
    config = {"runtime": runtime, "env": "catch", "agent": agent,
              "agent_config": to_jsonable(CONFIG)}  # fmt: skip
    (root / "a").mkdir()
    (root / "a" / "config.json").write_text(json.dumps(config))
    with Checkpointer(root / "a" / "checkpoints") as ckpt:
        meta = {"runtime": runtime, "agent": agent, "config": config,
                "env_spec": spec.to_json(), "env_steps": 100, "step": 1}  # fmt: skip
        ckpt.save(1, state, meta)
    return config


def test_a_checkpoint_naming_unimported_code_loads_only_when_trusted(tmp_path, plugin):
    name, marker = plugin
    save_run(tmp_path, f"{name}:make_mine")
    source = parse_source("a", tmp_path)
    with pytest.raises(ConfigError) as e:
        load(source)
    message = str(e.value)
    assert f"its agent names '{name}:make_mine'" in message and "--trust-code" in message
    assert "\n" not in message and not marker.exists()  # refused before any import
    with pytest.raises(ValueError, match="--trust-code"):
        load_policy("a", runs_root=tmp_path)
    assert not marker.exists()
    loaded = load(source, trust_code=True)
    assert marker.exists() and loaded.agent.name == "qlambda"
    # Now imported, as by the user's own code: trusted (a registered or imported module).
    assert load_policy("a", runs_root=tmp_path).agent.name == "qlambda"


def test_podracer_eval_refuses_untrusted_code_and_runs_with_the_flag(tmp_path, plugin, capsys):
    name, marker = plugin
    save_run(tmp_path, f"{name}:make_mine")
    args = ["a", "--runs-root", str(tmp_path), "--episodes", "2"]
    assert evaluate.main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("podracer eval: error: ") and err.count("\n") == 1
    assert f"'{name}:make_mine'" in err and "--trust-code" in err and not marker.exists()
    assert evaluate.main([*args, "--trust-code"]) == 0
    assert marker.exists() and "2 greedy episodes" in capsys.readouterr().out


def test_resume_and_config_files_import_named_code_only_when_trusted(tmp_path, plugin):
    name, marker = plugin
    path = f"{name}:make_mine"
    save_run(tmp_path, path, runtime="run")
    resume = ["--resume", "--run-name", "a", "--runs-root", str(tmp_path)]
    config_file = str(tmp_path / "a" / "config.json")
    for argv in (resume, ["--config", config_file]):
        with pytest.raises(ConfigError, match=rf"its agent names '{path}'.*--trust-code"):
            defaults(RunConfig, argv)
    assert not marker.exists()
    # A file cannot grant trust to itself.
    stored = {**json.loads((tmp_path / "a" / "config.json").read_text()), "trust_code": True}
    stored.pop("runtime")
    with pytest.raises(ConfigError, match="--trust-code"):
        config_from_json(RunConfig, stored, "config.json")
    assert not marker.exists()
    # Named on the command line: the user's own run, trusted.
    config, source = defaults(RunConfig, [*resume, "--agent", path])
    assert config.agent == path and "resuming" in source and marker.exists()
    assert not config.trust_code and "trust_code" not in config.to_json()


def test_the_flag_trusts_a_resumed_run_s_code(tmp_path, plugin):
    name, marker = plugin
    save_run(tmp_path, f"{name}:make_mine", runtime="run")
    config, _ = defaults(RunConfig, ["--resume", "--run-name", "a", "--runs-root",
                                     str(tmp_path), "--trust-code"])  # fmt: skip
    assert config.agent == f"{name}:make_mine" and marker.exists()


@pytest.mark.parametrize(
    "data, field",
    [
        ({"env": "nowhere_mod.envs:Corridor"}, "env"),
        ({"env": "gymnasium:nowhere_mod:Env-v0"}, "env"),
        ({"sources": {"env": {"name": "far", "factory": "nowhere_mod:make"}}},
         "sources.env.factory"),
        ({"sources": {"agent": {"name": "far", "config_cls": "nowhere_mod:Config",
                                "factory": "nowhere_mod:make"}}}, "sources.agent.config_cls"),
    ],
)  # fmt: skip
def test_every_piece_of_code_a_config_names_is_checked(data, field):
    with pytest.raises(ConfigError, match=rf"^run/config.json: its {field} names '\S*nowhere_mod"):
        check_trusted({"env": "catch", "agent": "ppo", **data}, "run/config.json")
    check_trusted(data, "run/config.json", trust_code=True)
    typed = [v for k, v in data.items() if k == "env"]
    if typed:
        check_trusted(data, "run/config.json", typed=typed)
    # podracer's own code and imported modules are trusted.
    check_trusted({"env": "podracer.envs.catch:Catch", "agent": "json:loads"}, "run/config.json")
