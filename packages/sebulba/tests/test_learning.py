"""Learning tests: Sebulba's agents learn envpool CartPole.

(Catch through `as_host_env`, against Anakin at the same config: tests/test_anakin_sebulba.py.)
"""

import pytest

from podracer.sebulba import SebulbaConfig
from podracer.sebulba import final_return
from podracer.sebulba import train

pytestmark = pytest.mark.slow


# Deterministic mode (lag fixed at one update) makes these runs repeat exactly.
@pytest.mark.parametrize("agent", ["impala", "ppo"])
def test_default_config_learns_cartpole(agent):
    config = SebulbaConfig(agent=agent, deterministic=True, progress=False, tensorboard=False)
    result = train(config)
    assert final_return(result) >= 475
