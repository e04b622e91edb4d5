"""Anakin against the same PPO written plainly, in one run: SPS, compile time, ratios.

The plain PPO below is this benchmark's own single-function program in the style of
PureJaxRL (gymnax envs vmapped, `lax.scan` over the whole run, flax `Dense` layers,
transitions shuffled across time and envs into minibatches): the same maths as the
project's PPO (GAE, clipped surrogate and value loss, entropy bonus, Adam with clipping
and a linearly annealed learning rate), none of its engineering. Configurations:

* CartPole-v1, PureJaxRL's config: 4 envs x 128 steps, 4 epochs x 4 minibatches, 5e5 steps;
* the same with 64 envs, 2e6 steps;
* Breakout-MinAtar, PureJaxRL's MinAtar config: 64 envs x 128, 4 epochs x 8 minibatches,
  MLP 64x64 relu, lr 5e-3, 1e7 steps (`--minatar-steps`);
* Catch at the demo config, 128 and 1024 envs: training FPS against the acting-only
  ceiling (benchmarks/anakin.py's measurement).

    uv run python benchmarks/anakin_vs_plain.py [--quick]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from typing import NamedTuple


class Setting(NamedTuple):
    name: str
    env: str
    num_envs: int
    num_steps: int
    epochs: int
    minibatches: int
    activation: str
    learning_rate: float
    total: int


def plain_ppo(s: Setting):
    """`train(key) -> (params, returns [updates])`: the whole run as one program."""
    import flax.linen as nn
    import gymnax
    import jax
    import jax.numpy as jnp
    import numpy as np
    import optax

    env, env_params = gymnax.make(s.env)
    num_actions = env.action_space(env_params).n
    updates = s.total // (s.num_envs * s.num_steps)
    act = getattr(nn, s.activation)
    ortho = nn.initializers.orthogonal

    class Net(nn.Module):
        @nn.compact
        def __call__(self, x):
            x = x.reshape(x.shape[: -len(env.observation_space(env_params).shape)] + (-1,))
            a = act(nn.Dense(64, kernel_init=ortho(np.sqrt(2)))(x))
            a = act(nn.Dense(64, kernel_init=ortho(np.sqrt(2)))(a))
            logits = nn.Dense(num_actions, kernel_init=ortho(0.01))(a)
            c = act(nn.Dense(64, kernel_init=ortho(np.sqrt(2)))(x))
            c = act(nn.Dense(64, kernel_init=ortho(np.sqrt(2)))(c))
            return logits, nn.Dense(1, kernel_init=ortho(1.0))(c)[..., 0]

    net = Net()
    steps_per_update = s.epochs * s.minibatches
    schedule = lambda count: s.learning_rate * (1.0 - (count // steps_per_update) / updates)  # noqa: E731
    tx = optax.chain(optax.clip_by_global_norm(0.5), optax.adam(schedule, eps=1e-5))

    def train(key):
        key, init_key, reset_key = jax.random.split(key, 3)
        obs_shape = env.observation_space(env_params).shape
        params = net.init(init_key, jnp.zeros((1, *obs_shape)))
        opt_state = tx.init(params)
        obs, env_state = jax.vmap(env.reset, (0, None))(
            jax.random.split(reset_key, s.num_envs), env_params
        )
        obs = obs.astype(jnp.float32)
        ep_return = jnp.zeros(s.num_envs)

        def update(carry, _):
            params, opt_state, env_state, obs, ep_return, key = carry

            def step(c, _):
                env_state, obs, ep_return, key = c
                key, act_key, step_key = jax.random.split(key, 3)
                logits, value = net.apply(params, obs)
                action = jax.random.categorical(act_key, logits)
                logp = jnp.take_along_axis(jax.nn.log_softmax(logits), action[:, None], 1)[:, 0]
                next_obs, env_state, reward, terminated, truncated, _ = jax.vmap(
                    env.step, (0, 0, 0, None)
                )(jax.random.split(step_key, s.num_envs), env_state, action, env_params)
                done = terminated | truncated  # PureJaxRL's: truncation not bootstrapped
                ep_return = ep_return + reward
                finished = jnp.where(done, ep_return, jnp.nan)
                ep_return = jnp.where(done, 0.0, ep_return)
                out = (obs, action, logp, value, reward, done, finished)
                return (env_state, next_obs.astype(jnp.float32), ep_return, key), out

            (env_state, obs, ep_return, key), (o, a, logp, v, r, d, fin) = jax.lax.scan(
                step, (env_state, obs, ep_return, key), length=s.num_steps
            )
            _, last_v = net.apply(params, obs)

            def gae(carry, x):
                adv, next_v = carry
                value, reward, done = x
                delta = reward + 0.99 * next_v * (1 - done) - value
                adv = delta + 0.99 * 0.95 * (1 - done) * adv
                return (adv, value), adv

            _, advantages = jax.lax.scan(
                gae, (jnp.zeros_like(last_v), last_v), (v, r, d), reverse=True
            )
            targets = advantages + v
            batch = (o, a, logp, v, advantages, targets)

            def epoch(carry, epoch_key):
                def minibatch(carry, mb):
                    params, opt_state = carry
                    o, a, old_logp, old_v, adv, target = mb

                    def loss_fn(params):
                        logits, value = net.apply(params, o)
                        logp_all = jax.nn.log_softmax(logits)
                        logp = jnp.take_along_axis(logp_all, a[:, None], 1)[:, 0]
                        v_clip = old_v + jnp.clip(value - old_v, -0.2, 0.2)
                        v_loss = (
                            0.5 * jnp.maximum((value - target) ** 2, (v_clip - target) ** 2).mean()
                        )
                        norm = (adv - adv.mean()) / (adv.std() + 1e-8)
                        ratio = jnp.exp(logp - old_logp)
                        pg = -jnp.minimum(ratio * norm, jnp.clip(ratio, 0.8, 1.2) * norm).mean()
                        entropy = -(jnp.exp(logp_all) * logp_all).sum(-1).mean()
                        return pg + 0.5 * v_loss - 0.01 * entropy

                    grads = jax.grad(loss_fn)(params)
                    updates_, opt_state = tx.update(grads, opt_state, params)
                    return (optax.apply_updates(params, updates_), opt_state), None

                n = s.num_envs * s.num_steps
                perm = jax.random.permutation(epoch_key, n)
                shuffled = jax.tree.map(lambda x: x.reshape((n, *x.shape[2:]))[perm], batch)
                mbs = jax.tree.map(lambda x: x.reshape((s.minibatches, -1, *x.shape[1:])), shuffled)
                return jax.lax.scan(minibatch, carry, mbs)[0], None

            key, epochs_key = jax.random.split(key)
            (params, opt_state), _ = jax.lax.scan(
                epoch, (params, opt_state), jax.random.split(epochs_key, s.epochs)
            )
            return (params, opt_state, env_state, obs, ep_return, key), jnp.nanmean(fin)

        carry = (params, opt_state, env_state, obs, ep_return, key)
        (params, *_), returns = jax.lax.scan(update, carry, length=updates)
        return params, returns

    return train, updates


def time_plain(s: Setting) -> dict:
    import jax
    import numpy as np

    train, updates = plain_ppo(s)
    t0 = time.perf_counter()
    compiled = jax.jit(train).lower(jax.random.PRNGKey(0)).compile()
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    _, returns = jax.block_until_ready(compiled(jax.random.PRNGKey(0)))
    run_s = time.perf_counter() - t0
    returns = np.asarray(returns)
    final = float(np.nanmean(returns[-max(1, updates // 20) :]))
    return {
        "sps": updates * s.num_envs * s.num_steps / run_s,
        "compile_s": compile_s,
        "return": final,
    }


def anakin_config(s: Setting, tensorboard: bool = False):
    """The project's Anakin run of setting `s`: 10 chunks, a fresh runs root."""
    from podracer.agents import PPOConfig
    from podracer.anakin import AnakinConfig

    updates = s.total // (s.num_envs * s.num_steps)
    return AnakinConfig(
        env=f"gymnax:{s.env}", agent="ppo", num_envs=s.num_envs, rollout_length=s.num_steps,
        updates_per_chunk=max(1, updates // 10), total_env_steps=s.total, progress=False,
        tensorboard=tensorboard, runs_root=tempfile.mkdtemp(prefix="vs-plain-"),
        agent_config=PPOConfig(learning_rate=s.learning_rate, num_epochs=s.epochs,
                               num_minibatches=s.minibatches, activation=s.activation),
    )  # fmt: skip


def time_project(s: Setting) -> dict:
    from podracer.anakin import train
    from podracer.runs import final_return

    result = train(anakin_config(s))
    return {"sps": result.sps, "compile_s": result.compile_seconds, "return": final_return(result)}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="a fifth of the steps")
    parser.add_argument("--minatar-steps", type=int, default=10_000_000)
    parser.add_argument("--skip-catch", action="store_true")
    args = parser.parse_args()
    scale = 0.2 if args.quick else 1.0
    settings = [
        Setting("CartPole, 4 envs", "CartPole-v1", 4, 128, 4, 4, "tanh", 2.5e-4, int(5e5 * scale)),
        Setting("CartPole, 64 envs", "CartPole-v1", 64, 128, 4, 4, "tanh", 2.5e-4,
                int(2e6 * scale)),
        Setting("Breakout-MinAtar", "Breakout-MinAtar", 64, 128, 4, 8, "relu", 5e-3,
                int(args.minatar_steps * scale)),
    ]  # fmt: skip
    print(f"{'PPO':<20} {'plain SPS':>10} {'ours SPS':>10} {'ratio':>6} {'plain compile':>14} "
          f"{'ours compile':>13} {'plain ret':>10} {'ours ret':>9}")  # fmt: skip
    for s in settings:
        plain, ours = time_plain(s), time_project(s)
        print(
            f"{s.name:<20} {plain['sps']:>10,.0f} {ours['sps']:>10,.0f} "
            f"{ours['sps'] / plain['sps']:>5.2f}x {plain['compile_s']:>13.1f}s "
            f"{ours['compile_s']:>12.1f}s {plain['return']:>10.1f} {ours['return']:>9.1f}",
            flush=True,
        )
    if not args.skip_catch:
        from anakin import catch_demo  # benchmarks/anakin.py, beside this script

        print(f"\n{'Catch demo config':<20} {'train FPS':>10} {'act FPS':>10} {'train/act':>10}")
        for n in (128, 1024):
            r = catch_demo(n, 20 if args.quick else 100, 2 if args.quick else 3)
            print(f"{f'{n} envs':<20} {r['train_fps']:>10,.0f} {r['act_fps']:>10,.0f} "
                  f"{r['ratio']:>10.1%}")  # fmt: skip


if __name__ == "__main__":
    main()
