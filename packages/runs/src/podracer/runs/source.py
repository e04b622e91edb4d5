"""Another run's checkpoint as a source of params: for `--init-from`, evaluation and videos.

    RUN[@STEP][:SEED]    RUN: a run directory, or a run name under the runs root;
                         STEP: latest (default), best (by greedy evaluation), or a number;
                         SEED: the seed index of a multi-seed run (default 0)

Only the checkpoint's `train` item and metadata are read, which both runtimes write
alike: an Anakin run's agent can be evaluated on envpool, or fine-tuned by Sebulba, when
the env specs match.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from typing import Any
from typing import NamedTuple

from podracer.agents import ConfigError
from podracer.runs.checkpoint import Checkpointer
from podracer.runs.checkpoint import CheckpointError
from podracer.runs.config import config_from_json
from podracer.runs.directory import RunDir
from podracer.runs.sweep import member_config
from podracer.runs.sweep import num_members
from podracer.runs.sweep import tags_of_member


class Source(NamedTuple):
    """Where to read params: a run, one of its checkpoints, one of its seeds."""

    run: RunDir
    step: str | int  # "latest", "best" or a checkpoint step
    seed_index: int | None  # `:K` in a multi-seed run or sweep; None when not named (0)


class Loaded(NamedTuple):
    """What a source holds, ready to act."""

    agent: Any  # the run's agent, built for the env spec asked for
    params: Any  # its params (one seed's), checked against the agent's network
    opt_state: Any  # its optimizer state as saved (nested dicts and lists)
    step: int  # the checkpoint step read
    metadata: dict[str, Any]  # the checkpoint's metadata (config, env spec, env steps, ...)


def parse_source(
    text: str, runs_root: str | os.PathLike = "runs", owner: str = "--init-from"
) -> Source:
    """`RUN[@STEP][:SEED]` as a `Source`; fails naming `owner` when the run does not exist."""
    rest, seed_text = (text.rsplit(":", 1) + [""])[:2] if ":" in text else (text, "")
    path, _, step_text = rest.partition("@")
    step: str | int = step_text or "latest"
    if step not in ("latest", "best"):
        if not str(step).isdigit():
            raise ConfigError(f"{owner}: STEP must be latest, best or a number, got {step!r}")
        step = int(step)
    if seed_text and not seed_text.isdigit():
        raise ConfigError(f"{owner}: SEED must be a seed index, got {seed_text!r}")
    candidates = [path, os.path.join(os.fspath(runs_root), path)]
    found = next((p for p in candidates if os.path.exists(os.path.join(p, "config.json"))), None)
    if found is None:
        raise ConfigError(f"{owner}: no run at {path!r} (a run directory, or a run name in "
                          f"{os.fspath(runs_root)!r})")  # fmt: skip
    return Source(RunDir.at(found), step, int(seed_text) if seed_text else None)


def load(
    source: Source,
    spec: Any = None,
    owner: str = "--init-from",
    trust_code: bool = False,
    typed: Collection[str] = (),
) -> Loaded:
    """The source run's agent (built for `spec`, default the run's own env spec) and its
    train state at the source's step. Fails with one line when the specs differ, or when
    the checkpoint's config names code this process does not trust (`trust_code`, or
    `typed`: the env and agent names the user gave; `podracer.runs.trust`)."""
    from podracer.envs import EnvSpec

    with Checkpointer(
        source.run.checkpoints, max_to_keep=None, best_metric="eval/episodic_return"
    ) as ckpt:
        steps = ckpt.all_steps()
        if not steps:
            raise ConfigError(f"{owner}: {source.run.path} has no checkpoint")
        if source.step == "latest":
            step = steps[-1]
        elif source.step == "best":
            step = ckpt.best_step()  # None when no checkpoint carries an evaluation
            if step is None:
                raise ConfigError(
                    f"{owner}: {source.run.path} has no evaluated checkpoint to call best "
                    f"(it needs --eval-interval); its checkpoints: {steps}"
                )
        else:
            if source.step not in steps:
                raise ConfigError(f"{owner}: {source.run.path} has no checkpoint {source.step}; "
                                  f"its checkpoints: {steps}")  # fmt: skip
            step = int(source.step)
        meta = ckpt.metadata(step)
        stored = EnvSpec.from_json(meta["env_spec"])
        spec = stored if spec is None else spec
        if not spec.compatible_with(stored):
            raise ConfigError(f"{owner}: the run's agent was trained on {_describe(stored)}; "
                              f"{spec.name} is {_describe(spec)}")  # fmt: skip
        members = num_members(meta["config"])  # seeds, or a sweep's members
        index = source.seed_index or 0
        if index >= members:
            kind = "member" if meta["config"].get("sweep") else "seed"
            raise ConfigError(f"{owner}: {kind} {index} of a run of {members} {kind}(s)")
        where = f"{owner}: {source.run.path}@{step}"
        agent = _agent(meta, spec, index, where, trust_code, typed)
        try:
            train, _ = ckpt.restore_as_saved(step)
        except CheckpointError as e:
            raise ConfigError(f"{owner}: {e}") from None
    if members > 1:  # every leaf has a leading member axis
        train = _index(train, index)
    params = _fit(train["params"], _abstract_params(agent), loaded_config=meta, owner=owner)
    return Loaded(agent, params, train["opt_state"], step, meta)


def _describe(spec: Any) -> str:
    actions = (f"{spec.num_actions} discrete actions" if spec.is_discrete
               else f"continuous actions of shape {spec.action_shape}")  # fmt: skip
    return f"observations {spec.observation_shape} {spec.observation_dtype}, {actions}"


def _agent(
    meta: dict[str, Any],
    spec: Any,
    member: int = 0,
    owner: str = "the checkpoint's config",
    trust_code: bool = False,
    typed: Collection[str] = (),
):
    """The run's agent; a sweep's member's, with its point's values."""
    from podracer.agents import agent_entry
    from podracer.agents import make_agent
    from podracer.runs.config import register_sources

    # An agent registered by call; first, the code the checkpoint names must be trusted
    # (its env's is not imported here: the caller builds its env, if any).
    named = {k: v for k, v in meta["config"].items() if k != "env"}
    register_sources({**named, "agent": meta["agent"]}, owner, trust_code, typed)
    entry = agent_entry(meta["agent"])
    config = meta["config"]
    if config.get("sweep"):
        config = member_config(config, tags_of_member(config, member))
    agent_config = config_from_json(entry.config_cls, config["agent_config"], "agent_config")
    return make_agent(meta["agent"], spec, agent_config)


def _index(tree: Any, i: int) -> Any:
    import jax

    return jax.tree.map(lambda x: x[i], tree)


def _abstract_params(agent: Any) -> Any:
    import jax

    return jax.eval_shape(agent.init, jax.random.PRNGKey(0))


def _fit(saved: Any, ours: Any, loaded_config: dict, owner: str) -> Any:
    """`saved` (nested dicts of arrays) laid out as `ours` (the agent's params tree);
    fails naming the first param whose path, shape or dtype differ."""
    import jax

    flat_ours, treedef = jax.tree_util.tree_flatten_with_path(ours)
    theirs = {jax.tree_util.keystr(p): x for p, x in jax.tree_util.tree_flatten_with_path(saved)[0]}
    leaves = []
    for path, leaf in flat_ours:
        where = jax.tree_util.keystr(path)
        other = theirs.get(where)
        if other is None or other.shape != leaf.shape or other.dtype != leaf.dtype:
            got = "missing" if other is None else f"{other.dtype}{list(other.shape)}"
            raise ConfigError(
                f"{owner}: the saved params do not fit this agent's network at {where}: "
                f"{leaf.dtype}{list(leaf.shape)} here, {got} there (the saved agent's config: "
                f"{loaded_config['config']['agent_config']})"
            )
        leaves.append(other)
    if len(theirs) != len(leaves):
        raise ConfigError(f"{owner}: the saved params have {len(theirs)} arrays, this agent's "
                          f"network {len(leaves)}")  # fmt: skip
    return jax.tree_util.tree_unflatten(treedef, leaves)


def warm_start(
    loaded: Loaded, target: Any, opt_state: bool, num_seeds: int = 1, owner: str = "--init-from"
) -> Any:
    """`target` (a fresh TrainState; with `num_seeds > 1` one per seed on a leading axis)
    with the source's params, and its optimizer state when `opt_state` (the same optimizer
    needed), placed as `target`'s arrays are. Every seed starts from the same params."""
    import jax
    import numpy as np

    per_seed = lambda x: x if num_seeds == 1 else np.broadcast_to(x, (num_seeds, *x.shape))  # noqa: E731
    ours = target.params
    if num_seeds > 1:  # one seed's shapes
        ours = jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape[1:], x.dtype), ours)
    fitted = _fit(loaded.params, ours, loaded.metadata, owner)
    params = jax.tree.map(lambda x, y: _place(per_seed(x), y), fitted, target.params)
    if not opt_state:
        return target._replace(params=params)
    ours, treedef = jax.tree.flatten(target.opt_state)
    saved = [per_seed(x) for x in jax.tree.leaves(loaded.opt_state)]
    if [x.shape for x in saved] != [x.shape for x in ours]:
        raise ConfigError(
            f"{owner}: the saved optimizer state does not fit this agent's optimizer "
            f"(another optimizer or schedule); start from the params alone"
        )
    state = jax.tree.unflatten(treedef, [_place(x, y) for x, y in zip(saved, ours, strict=True)])
    return target._replace(params=params, opt_state=state)


def _place(value: Any, like: Any) -> Any:
    """`value` laid out as `like` (e.g. replicated over a mesh spanning processes)."""
    import jax
    import numpy as np

    host = np.asarray(value)
    return jax.make_array_from_callback(like.shape, like.sharding, lambda index: host[index])
