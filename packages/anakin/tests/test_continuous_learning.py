"""Learning on a continuous box: Anakin PPO with the `control` preset lifts gymnax
Pendulum's return from about -1200 (a random policy) to a swinging-up policy."""

import pytest

from podracer import anakin
from podracer.runs import final_return

pytestmark = pytest.mark.slow


def test_anakin_ppo_learns_pendulum_with_its_preset():
    config, source = anakin.AnakinConfig.from_preset(
        env="gymnax:Pendulum-v1", agent="ppo", total_env_steps=409_600, progress=False,
        log_interval=51_200,
    )  # fmt: skip
    assert source.startswith("preset 'control' for ppo")
    result = anakin.train(config)
    first = next(r["charts/episodic_return"] for r in result.history if r["charts/episodes"])
    assert first < -900  # near a random policy's return
    assert final_return(result, last=2) > -450
