"""Learning tests: Sebulba's agents learn envpool CartPole.

(Catch through `as_host_env`, against Anakin at the same config: tests/test_anakin_sebulba.py.)
"""

import pytest

from podracer.agents.runs import final_return
from podracer.sebulba import SebulbaConfig
from podracer.sebulba import train

pytestmark = pytest.mark.slow


# Deterministic mode (lag fixed at one update) makes these runs repeat exactly.
@pytest.mark.parametrize("agent", ["impala", "ppo"])
def test_the_classic_preset_learns_cartpole(agent):
    config, _ = SebulbaConfig.from_preset(
        agent=agent, deterministic=True, progress=False, tensorboard=False
    )
    result = train(config)
    assert final_return(result) >= 475


def test_muzero_learns_cartpole():
    # MuZero's defaults (Gumbel search, replay, 32 envs x 16 steps); a budget that fits the
    # suite (~35 s), in which the return rises from random play's ~22 to 100-140: the best
    # logged return must be well above random (benchmarks/muzero.py runs it to 500).
    config, _ = SebulbaConfig.from_preset(
        agent="muzero", deterministic=True, total_env_steps=200_000, log_interval=5_000,
        progress=False, tensorboard=False,
    )  # fmt: skip
    result = train(config)
    returns = [h["charts/episodic_return"] for h in result.history]
    assert max(returns) >= 90, returns
