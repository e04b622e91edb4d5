"""The same config through Anakin (JaxEnv on device) and Sebulba (`as_host_env`) learns alike.

Catch with IMPALA at the same agent settings and the same batch per update (32 envs x 16
steps) and budget: both reach a mean return above 0.9 (Anakin's own Catch threshold), and
within 0.1 of each other.
"""

import pytest

from podracer.agents import ImpalaConfig
from podracer.runs import final_return

pytestmark = pytest.mark.slow

AGENT = ImpalaConfig(learning_rate=2e-3)
STEPS = 200_000


def test_catch_learns_to_the_same_level_on_both_runtimes():
    from podracer import anakin
    from podracer import sebulba

    on_device = anakin.train(anakin.AnakinConfig(
        env="catch", agent="impala", num_envs=32, rollout_length=16, updates_per_chunk=50,
        total_env_steps=STEPS, agent_config=AGENT, progress=False, tensorboard=False,
    ))  # fmt: skip
    on_host = sebulba.train(sebulba.SebulbaConfig(
        env="catch", agent="impala", envs_per_thread=32, rollout_length=16,
        trajectories_per_update=1, total_env_steps=STEPS, agent_config=AGENT, deterministic=True,
        progress=False, tensorboard=False,
    ))  # fmt: skip
    anakin_return = final_return(on_device, last=2)
    sebulba_return = final_return(on_host, last=2)
    assert anakin_return > 0.9 and sebulba_return > 0.9, (anakin_return, sebulba_return)
    assert abs(anakin_return - sebulba_return) < 0.1
