"""Learning on a continuous box: Anakin PPO with the `control` preset lifts gymnax
Pendulum's return from about -1200 (a random policy) to a swinging-up policy; Sampled
MuZero solves a one-step continuous bandit."""

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import pytest

from podracer import anakin
from podracer.agents import MuZeroConfig
from podracer.envs import EnvSpec
from podracer.envs import TimeStep
from podracer.envs import register
from podracer.envs.stats import EpisodeStats
from podracer.envs.stats import init_episode_stats
from podracer.envs.stats import update_episode_stats
from podracer.envs.types import first_timestep
from podracer.runs import final_return
from podracer.search import SearchConfig

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


class _BanditState(NamedTuple):
    target: jax.Array  # [1]
    stats: EpisodeStats


@dataclasses.dataclass(frozen=True)
class ContinuousBandit:
    """One-step episodes: observe a target x ~ U[-0.8, 0.8], act a in [-1, 1], reward
    1 - (a - x)^2. Optimal return 1; a uniform policy about 0.45."""

    @property
    def spec(self) -> EnvSpec:
        return EnvSpec("bandit", (1,), "float32", None, action_shape=(1,), action_low=(-1.0,),
                       action_high=(1.0,))  # fmt: skip

    def reset(self, key):
        target = jax.random.uniform(key, (1,), minval=-0.8, maxval=0.8)
        return _BanditState(target, init_episode_stats((), jnp)), first_timestep(target)

    def step(self, state, action, key):
        reward = (1.0 - jnp.sum(jnp.square(action - state.target))).astype(jnp.float32)
        target = jax.random.uniform(key, (1,), minval=-0.8, maxval=0.8)
        stats, emitted = update_episode_stats(state.stats, reward, jnp.bool_(True))
        done, no = jnp.bool_(True), jnp.bool_(False)
        return _BanditState(target, stats), TimeStep(
            observation=target, reward=reward, terminated=done, truncated=no, first=done,
            final_observation=state.target, episode_return=emitted.episode_return,
            episode_length=emitted.episode_length, episode_end=done,
        )  # fmt: skip


def test_sampled_muzero_learns_a_continuous_bandit(tmp_path):
    """Sampled MuZero end to end on a box: the search must rank its sampled actions by the
    learnt reward, and the Gaussian prior must move to the searched ones. About 1 minute;
    the greedy return (the prior's mean among the root's samples) was 0.996 at 1e5 steps."""
    register("continuous-bandit", ContinuousBandit)
    config = anakin.AnakinConfig(
        env="continuous-bandit", agent="muzero", num_envs=32, rollout_length=16,
        total_env_steps=102_400, eval_interval=102_400, eval_episodes=64, progress=False,
        tensorboard=False, runs_root=str(tmp_path),
        agent_config=MuZeroConfig(num_action_samples=8, search=SearchConfig(num_simulations=16)),
    )  # fmt: skip
    result = anakin.train(config)
    first = next(r["charts/episodic_return"] for r in result.history if r["charts/episodes"])
    assert first < 0.6  # near a uniform policy's 0.45
    assert result.history[-1]["eval/episodic_return"] >= 0.95
