"""Anakin PPO against PureJaxRL's own `ppo.py`, side by side in one process (figures, not
assertions): the same configs on the same device, interleaved, so the machine's noise
hits both alike.

PureJaxRL is not a dependency: point `--purejaxrl` at a checkout of
github.com/luchris429/purejaxrl (its `purejaxrl/` folder, holding `ppo.py` and
`wrappers.py`). Its `wrappers.py` imports brax and navix at module level for wrappers
these configs do not use; where they are not installed, empty stand-in modules let the
file import (nothing of theirs is called); its envs come from gymnax >= 1.0 (this
workspace's) with `step` returning the 5-tuple of gymnax 0.0 that PureJaxRL expects.
PureJaxRL runs with `DEBUG: False` (its per-update printing callback off), its fastest
setting.

Configs (PureJaxRL's own, `ppo.py`'s `__main__` and its MinAtar settings):
* CartPole-v1: 128 steps, 4 epochs x 4 minibatches, lr 2.5e-4 tanh, at `--cartpole-envs`
  (4: PureJaxRL's 5e5 steps; more envs: `--updates` updates of 128 steps);
* Breakout-MinAtar: 64 envs x 128 steps, 4 epochs x 8 minibatches, relu, lr 5e-3.
  Anakin runs it twice: as `gymnax:Breakout-MinAtar` (podracer-envs' observation, built
  without scatters: the same values) and with gymnax's own class, as PureJaxRL does.

SPS: env steps / seconds of the trained run with its compile excluded, for both (Anakin's
`RunResult.sps`; PureJaxRL's jitted `train` compiled with `.lower().compile()` first).

    python benchmarks/vs_purejaxrl.py --purejaxrl ~/purejaxrl/purejaxrl \
        --cartpole-envs 4 2048 16384 --minatar
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
import time
import types

RUNS = tempfile.mkdtemp(prefix="vs_purejaxrl_")
# gymnax's class by import path: podracer-envs builds `gymnax:Breakout-MinAtar`'s
# observation without scatters (`podracer.envs.minatar_obs`); PureJaxRL runs gymnax's.
GYMNAX_BREAKOUT = "gymnax.environments.minatar.breakout:MinBreakout"


def load_purejaxrl(path: str):
    """PureJaxRL's `ppo` module from a checkout (missing brax / navix stood in for)."""
    sys.path.insert(0, path)
    for name in ("brax", "brax.envs", "brax.envs.wrappers", "brax.envs.wrappers.training", "navix"):
        try:
            importlib.import_module(name)
        except ImportError:
            module = types.ModuleType(name)
            module.EpisodeWrapper = module.AutoResetWrapper = object  # names imported by value
            sys.modules[name] = module
    ppo = importlib.import_module("ppo")
    ppo.gymnax = types.SimpleNamespace(make=_five_tuple_make)  # its module global only
    return ppo


class _FiveTuple:
    """A gymnax >= 1.0 env whose `step` returns gymnax 0.0's 5-tuple (`done` = terminated
    or truncated), the API PureJaxRL's code was written against."""

    def __init__(self, env):
        self._env = env

    def __getattr__(self, name):
        return getattr(self._env, name)

    def step(self, key, state, action, params=None):
        obs, state, reward, terminated, truncated, info = self._env.step(key, state, action, params)
        return obs, state, reward, terminated | truncated, info


def _five_tuple_make(name: str, **kwargs):
    import gymnax

    env, params = gymnax.make(name, **kwargs)
    return _FiveTuple(env), params


def purejaxrl_sps(ppo, env: str, envs: int, total: int, epochs: int, minibatches: int,
                  activation: str, lr: float) -> tuple[float, float]:  # fmt: skip
    import jax

    config = {
        "LR": lr, "NUM_ENVS": envs, "NUM_STEPS": 128, "TOTAL_TIMESTEPS": total,
        "UPDATE_EPOCHS": epochs, "NUM_MINIBATCHES": minibatches, "GAMMA": 0.99,
        "GAE_LAMBDA": 0.95, "CLIP_EPS": 0.2, "ENT_COEF": 0.01, "VF_COEF": 0.5,
        "MAX_GRAD_NORM": 0.5, "ACTIVATION": activation, "ENV_NAME": env,
        "ANNEAL_LR": True, "DEBUG": False,
    }  # fmt: skip
    key = jax.random.PRNGKey(30)
    t0 = time.perf_counter()
    train = jax.jit(ppo.make_train(config)).lower(key).compile()
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    jax.block_until_ready(train(key))
    steps = config["NUM_STEPS"] * envs * int(total // (128 * envs))
    return steps / (time.perf_counter() - t0), compile_s


def anakin_sps(env: str, envs: int, total: int, epochs: int, minibatches: int,
               activation: str, lr: float) -> tuple[float, float]:  # fmt: skip
    from podracer.agents import PPOConfig
    from podracer.anakin import AnakinConfig
    from podracer.anakin import train

    ppo = PPOConfig(
        learning_rate=lr, num_epochs=epochs, num_minibatches=minibatches,
        activation=activation, hidden_sizes=(64, 64), torso="mlp",
    )  # fmt: skip
    updates = total // (128 * envs)
    config = AnakinConfig(
        env=env if ":" in env else f"gymnax:{env}", agent="ppo", agent_config=ppo, num_envs=envs,
        rollout_length=128, updates_per_chunk=max(1, updates // 10),
        total_env_steps=updates * 128 * envs, progress=False, tensorboard=False,
        runs_root=RUNS, log_interval=updates * 128 * envs, compile_cache="none",
    )  # fmt: skip
    result = train(config)
    return result.sps, result.compile_seconds


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--purejaxrl", required=True, help="a checkout's purejaxrl/ folder")
    parser.add_argument("--cartpole-envs", type=int, nargs="+", default=[4, 2048])
    # At 20 updates Anakin's 2,048-env run lasted 0.25 s, too short to time: 37.4M SPS in
    # one session, 20.8M in the next.
    parser.add_argument("--updates", type=int, default=100, help="updates past 4 envs")
    parser.add_argument("--minatar", action="store_true", help="also Breakout-MinAtar")
    parser.add_argument("--minatar-steps", type=int, default=2_000_000)
    args = parser.parse_args()
    ppo = load_purejaxrl(args.purejaxrl)
    import jax

    print(f"jax {jax.__version__} on {jax.devices()[0].device_kind}")
    settings = [
        ("CartPole-v1", n, 500_000 if n == 4 else n * 128 * args.updates, 4, 4, "tanh", 2.5e-4)
        for n in args.cartpole_envs
    ]
    if args.minatar:
        settings.append(("Breakout-MinAtar", 64, args.minatar_steps, 4, 8, "relu", 5e-3))
    print(f"{'env':>17} {'envs':>6} {'Anakin SPS':>12} {'PureJaxRL SPS':>14} {'ratio':>7} "
          f"{'compile A / P s':>16}")  # fmt: skip
    for setting in settings:
        a_sps, a_compile = anakin_sps(*setting)
        p_sps, p_compile = purejaxrl_sps(ppo, *setting)
        rows = [(setting[0], a_sps, a_compile)]
        if setting[0] == "Breakout-MinAtar":  # also with gymnax's own (scattering) observation
            rows.append(("  gymnax's obs", *anakin_sps(GYMNAX_BREAKOUT, *setting[1:])))
        for name, a_sps, a_compile in rows:
            ratio = a_sps / p_sps
            print(f"{name:>17} {setting[1]:>6} {a_sps:>12,.0f} {p_sps:>14,.0f} "
                  f"{ratio:>6.1f}x {a_compile:>7.1f} / {p_compile:.1f}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
