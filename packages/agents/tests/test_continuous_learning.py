"""Learning on a continuous box: Anakin PPO with the `control` preset lifts gymnax
Pendulum's return from about -1200 (a random policy) to a swinging-up policy.

It needs the Anakin runtime and gymnax, which the agents package does not depend on:
skipped where they are not installed (`uv sync --package podracer-agents`)."""

import pytest

pytest.importorskip("gymnax")
anakin = pytest.importorskip("podracer.anakin")

from podracer.agents.runs import final_return  # noqa: E402

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
