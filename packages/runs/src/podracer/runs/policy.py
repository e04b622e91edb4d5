"""A saved agent as a Python object that acts: `load(RUN)` -> `Policy`, as SB3's
`load`/`predict`, for checkpoints of either runtime.

    policy = load("runs/cp8:3")                  # seed 3 of a multi-seed run, newest checkpoint
    policy = load("runs/cp8", member=3, checkpoint="best")      # the same seed, best one
    policy = load("runs/cp8/checkpoints/20480")  # a checkpoint folder
    action = policy.act(observation)             # one observation, or a batch [B, ...]

Sources are those of `podracer eval` and `--init-from` (`RUN[@STEP][:K]`). The env spec
and the agent come from the checkpoint (a user's env or agent by its import path, as
`podracer eval` rebuilds it), so no env is built.
"""

from __future__ import annotations

import os
import re
from typing import Any

import numpy as np

OWNER = "podracer.runs.load"
_TRAINED = 2**30  # sampled acting: an update count past any acting schedule, as `podracer eval`


class Policy:
    """A loaded agent and its params, acting on observations (numpy or JAX arrays).

    `act` takes one observation (the env spec's observation shape) or a batch of them
    (a leading axis), and returns actions of the same kind and batch: numpy for numpy
    input, JAX arrays for JAX input. It is jitted once per input shape. A recurrent
    agent's core state is kept per batch size between calls, from its initial state;
    `first` marks observations that start an episode (their state is reset), `reset()`
    forgets them all.
    """

    def __init__(self, agent: Any, params: Any, config: dict[str, Any], step: int,
                 env_steps: int, run_dir: str, member: dict[str, Any], seed: int = 0):  # fmt: skip
        import jax

        self.agent = agent  # the `podracer.agents.Agent`
        self.params = params  # its params, one member's
        self.config = config  # the run's config (config.json as the checkpoint stores it)
        self.step = step  # the checkpoint's loop step
        self.env_steps = env_steps  # env steps trained when it was written
        self.run_dir = run_dir
        # Which member of the run: {"seed": s} for a one-member run; in a multi-seed run or
        # sweep also its index ("member") and swept values ("values"), as `podracer eval`.
        self.member = member
        self._key = jax.random.PRNGKey(seed)
        self._cores: dict[int, Any] = {}  # batch size -> the core state after its last act
        self._act = jax.jit(_acting(agent), static_argnames="greedy")

    @property
    def spec(self) -> Any:
        """The env spec the agent was trained on (`podracer.envs.EnvSpec`)."""
        return self.agent.spec

    def act(self, observation: Any, greedy: bool = True, key: Any = None,
            first: Any = None) -> Any:  # fmt: skip
        """Actions for `observation` (`[*obs_shape]` or `[B, *obs_shape]`): the greedy policy,
        or with `greedy=False` a sample as in training (from `key`, else from the policy's
        own stream, seeded by `load(..., seed=)`). `first` (a bool, or `[B]`): which
        observations start an episode, resetting a recurrent agent's state there."""
        import jax
        import jax.numpy as jnp

        as_numpy = not isinstance(observation, jax.Array)
        xp = np if as_numpy else jnp
        observation = xp.asarray(observation, self.spec.observation_dtype)
        shape = tuple(self.spec.observation_shape)
        single = observation.shape == shape
        if not single and observation.shape[1:] != shape:
            raise ValueError(
                f"{OWNER}: observations must be of shape {shape} or [B, *{shape}] "
                f"(the run's env spec), got {observation.shape}"
            )
        batch = observation[None] if single else observation
        n = batch.shape[0]
        first = np.zeros(n, bool) if first is None else np.broadcast_to(np.asarray(first), (n,))
        if key is None and not greedy:
            self._key, key = jax.random.split(self._key)
        elif key is None:
            key = self._key  # unused by greedy acting
        core = self._cores.get(n)
        if core is None:
            core = self.agent.initial_core(n)
        action, self._cores[n] = self._act(self.params, key, batch, core, first, greedy=greedy)
        action = action[0] if single else action
        return np.asarray(action) if as_numpy else action

    def reset(self) -> None:
        """Forgets the recurrent state of every batch: the next `act` starts episodes."""
        self._cores.clear()

    def __repr__(self) -> str:
        member = "".join(f", {k}={v!r}" for k, v in self.member.items())
        return (f"Policy({self.agent.name} on {self.spec.name}, run_dir={self.run_dir!r}, "
                f"step={self.step}, env_steps={self.env_steps:,}{member})")  # fmt: skip


def _acting(agent: Any):
    """`(params, key, observation [B], core, first [B], greedy) -> (action [B], core)`."""

    def act(params, key, observation, core, first, greedy):
        if greedy:
            return agent.greedy_act(params, observation, core, first)
        action, _, core = agent.act(params, key, observation, _TRAINED, core, first)
        return action, core

    return act


def load(
    source: str | os.PathLike,
    *,
    member: int | None = None,
    checkpoint: str | int | None = None,
    runs_root: str | os.PathLike = "runs",
    seed: int = 0,
    trust_code: bool = False,
) -> Policy:
    """The agent saved at `source`, ready to act: a `Policy`.

    `source`: a run directory or a run name under `runs_root`, as `podracer eval` takes it
    (`RUN[@STEP][:K]`), or a checkpoint folder (`RUN/checkpoints/STEP`). `checkpoint`:
    "latest" (the default), "best" (by greedy evaluation) or a step, as `@STEP`. `member`:
    the seed (or sweep member) K of a run of several, as `:K`; such a run needs one named.
    `seed` seeds sampled acting. The code the run names (an env or agent of your own, by
    import path) is imported only if trusted: podracer's, an installed plugin's,
    registered or imported in this process, or with `trust_code=True` (as Hugging Face's
    `trust_remote_code`; `podracer.runs.trust`). Fails with one line (a `ValueError`)."""
    from podracer.agents import ConfigError
    from podracer.runs.checkpoint import CheckpointError
    from podracer.runs.source import load as load_source
    from podracer.runs.source import parse_source
    from podracer.runs.sweep import member_label
    from podracer.runs.sweep import num_members

    text = os.fspath(source)
    folder = re.fullmatch(r"(.*)[/\\]checkpoints[/\\](\d+)[/\\]?", text)
    if folder and os.path.isdir(text):  # a checkpoint folder: RUN@STEP
        text = f"{folder[1]}@{folder[2]}"
    where = parse_source(text, runs_root, owner=OWNER)
    named = {"checkpoint": where.step if "@" in text else None, "member": where.seed_index}
    for name, given in (("checkpoint", checkpoint), ("member", member)):
        if given is not None and named[name] is not None and given != named[name]:
            raise ConfigError(f"{OWNER}: {os.fspath(source)!r} names {name} {named[name]}, "
                              f"{name}={given!r} another")  # fmt: skip
    if checkpoint is not None:
        if checkpoint not in ("latest", "best") and not isinstance(checkpoint, int | np.integer):
            raise ConfigError(f"{OWNER}: checkpoint must be 'latest', 'best' or a step, "
                              f"got {checkpoint!r}")  # fmt: skip
        where = where._replace(step=checkpoint if isinstance(checkpoint, str) else int(checkpoint))
    if member is not None:
        if int(member) < 0:
            raise ConfigError(f"{OWNER}: member must be >= 0, got {member}")
        where = where._replace(seed_index=int(member))
    try:
        stored = where.run.read_config()
    except (OSError, ValueError) as e:
        raise ConfigError(f"{OWNER}: {e}") from None
    count = num_members(stored)
    if where.seed_index is None and count > 1:
        kind = "members (a sweep)" if stored.get("sweep") else "seeds"
        raise ConfigError(f"{OWNER}: {text} is a run of {count} {kind}; name one: {text}:0 .. "
                          f"{text}:{count - 1}, or member=0 .. {count - 1}")  # fmt: skip
    try:
        loaded = load_source(where, owner=OWNER, trust_code=trust_code)
    except CheckpointError as e:
        raise ConfigError(f"{OWNER}: {e}") from None
    index = where.seed_index or 0
    return Policy(
        loaded.agent, loaded.params, loaded.metadata["config"], loaded.step,
        int(loaded.metadata.get("env_steps", 0)), where.run.path,
        member_label(stored, count, index), seed,
    )  # fmt: skip
