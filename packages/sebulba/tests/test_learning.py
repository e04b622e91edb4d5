"""Learning tests: Sebulba's agents learn envpool CartPole.

(Catch through `as_host_env`, against Anakin at the same config: tests/test_anakin_sebulba.py.)
"""

import dataclasses

import numpy as np
import pytest

from podracer.runs import final_return
from podracer.sebulba import SebulbaConfig
from podracer.sebulba import train

pytestmark = pytest.mark.slow


# Deterministic mode (lag fixed at one update) makes these runs repeat exactly on one CPU;
# another CPU rounds differently and takes another path.
def test_the_classic_ppo_preset_learns_cartpole():
    config, _ = SebulbaConfig.from_preset(
        agent="ppo", deterministic=True, progress=False, tensorboard=False
    )
    result = train(config)
    assert final_return(result) >= 475


def test_the_classic_impala_preset_learns_cartpole():
    # IMPALA gets near 500 on every seed but does not stay there: on this CPU, seeds 0-4
    # end at 470 / 495 / 214 / 452 / 315 (the last 10% of steps) after best rows of 492-500;
    # annealing the learning rate, lambda 0.95, lr 5e-4 or APPO's epochs were no steadier
    # (the README's suite: IQM 416.6 over 3 seeds). The bar is what holds: it gets there.
    config, _ = SebulbaConfig.from_preset(
        agent="impala", deterministic=True, progress=False, tensorboard=False
    )
    result = train(config)
    returns = [h["charts/episodic_return"] for h in result.history]
    assert max(returns) >= 475 and final_return(result) >= 200, returns


def test_muzero_learns_cartpole():
    # MuZero's defaults (Gumbel search, replay, 32 envs x 16 steps); a budget that fits the
    # suite (~35 s), early in learning (benchmarks/muzero.py runs it to 500). Its curve is
    # noisy here: 2026-12-06, seed 0's first 10 of 40 rows average 18 and its last 10 43
    # (best 73); seed 1's 13 and 77 (best 138). So the test asks for a sustained rise, the
    # last quarter's mean twice the first's and above random play's ~22, not one spike.
    config, _ = SebulbaConfig.from_preset(
        agent="muzero", deterministic=True, total_env_steps=200_000, log_interval=5_000,
        progress=False, tensorboard=False,
    )  # fmt: skip
    result = train(config)
    returns = [h["charts/episodic_return"] for h in result.history]
    quarter = len(returns) // 4
    first, last = np.mean(returns[:quarter]), np.mean(returns[-quarter:])
    assert last >= max(2 * first, 35), returns


def test_a_recurrent_ppo_remembers_what_a_feed_forward_one_cannot():
    # bsuite's MemoryChain (through as_host_env): the reward at the end depends on a bit
    # seen only at the start; feed-forward PPO stays at chance (0: benchmarks/recurrent.py).
    config, _ = SebulbaConfig.from_preset(
        env="gymnax:MemoryChain-bsuite", agent="ppo", total_env_steps=60_000,
        progress=False, tensorboard=False,
    )  # fmt: skip
    gru = dataclasses.replace(config.agent_config, core="gru", core_size=64)
    assert final_return(train(dataclasses.replace(config, agent_config=gru))) > 0.8
