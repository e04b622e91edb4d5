"""Fixtures of the run harness's tests: a toy runtime and a tiny env spec."""

import time

import numpy as np
import pytest

from podracer.envs import EnvSpec
from podracer.runs import Run
from podracer.runs import RunConfig
from podracer.runs import RunResult

# Tiny spec: flat float features that can truncate.
VECTOR_SPEC = EnvSpec("probe", (3,), "float32", 2, max_episode_steps=10)


@pytest.fixture(scope="session")
def vector_spec() -> EnvSpec:
    return VECTOR_SPEC


# A toy runtime: what Anakin's and Sebulba's `train` look like with the loop body replaced
# by one numpy update, so the run harness's rules are tested in milliseconds.
TOY_SPEC = EnvSpec("toy", (1,), "float32", 2)
TOY_STEPS = 10  # env steps per loop step


def toy_train(config: RunConfig, pause: float | list[float] = 0.0) -> RunResult:
    """A runtime whose loop step adds 1 to its state; `pause` seconds per step (or step
    k's pause from a list)."""
    with Run.open(config, "toy") as run:
        train = {"w": np.zeros(2, np.float32)}
        restored = run.restore(TOY_SPEC, train=train, runtime={"t": np.zeros((), np.int32)})
        if restored is not None:
            train = restored.train
        run.begin(TOY_SPEC, "looping")
        while run.running():
            time.sleep(pause[run.step] if isinstance(pause, list) else pause)
            train = {"w": train["w"] + 1}
            run.advance(TOY_STEPS)
            if run.due("log"):
                row = {"charts/episodic_return": float(train["w"][0]), "charts/episodes": 1.0}
                if run.due("eval"):
                    row["eval/episodic_return"] = -float(train["w"][0])
                run.log(row)
            run.maybe_save(TOY_SPEC, train, {"t": np.int32(run.step)})
        return run.finish(train)


@pytest.fixture(scope="session", name="toy_train")
def toy_train_fixture():
    return toy_train
