"""What the policy-gradient agents (PPO, IMPALA) build alike from their config.

Both act with an actor-critic network (logits, or a Gaussian on a box:
`networks.make_actor_critic`), seen through running observation and value statistics
when the config asks for them (`normalization`), stepped or unrolled through a recurrent
core when it has one (`recurrent`), and trained by Adam with the statistics frozen.
With a config's `novelty_weight` (IMPALA's) the params also carry random network
distillation's networks and statistics (`novelty`), which the optimizer trains only
the predictor of. `ActorCriticParts` builds those once, so each agent's module holds
only its loss.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from typing import NamedTuple

import chex
import jax
import optax

from podracer.agents import novelty
from podracer.agents.hyper import Hyperparams
from podracer.agents.learn import config_learning_rate
from podracer.agents.learn import make_optimizer
from podracer.agents.networks import core_initializer
from podracer.agents.networks import make_actor_critic
from podracer.agents.normalization import STATS_KEY
from podracer.agents.normalization import VALUE_KEY
from podracer.agents.normalization import frozen_statistics
from podracer.agents.normalization import normalized_network
from podracer.agents.policy import ActionPolicy
from podracer.agents.policy import action_policy
from podracer.agents.recurrent import Apply
from podracer.agents.recurrent import act_step
from podracer.agents.recurrent import unroll
from podracer.envs import EnvSpec


class ActorCriticParts(NamedTuple):
    """An actor-critic agent's network, policy maths and optimizer.

    `forward(params, observation [B, ...], core, first [B]) -> ((dist, value) [B], core)`
    acts; `forward_all(params, observation [T, B, ...], first [T, B], core [1, B, ...])
    -> ((dist, value) [T, B], cores [T, B])` is the learner's unroll from a trajectory's
    start state; `apply(params, observation, *args, method=None)` is the (normalised)
    network itself, e.g. `method="value"` for the truncation bootstrap.
    """

    init: Callable[[chex.PRNGKey], Any]  # key -> params
    apply: Apply
    forward: Callable[..., tuple[Any, Any]]
    forward_all: Callable[..., tuple[Any, Any]]
    policy: ActionPolicy
    optimizer: optax.GradientTransformation
    learning_rate: float | optax.Schedule  # the optimizer's (`Agent.learning_rate`)
    initial_core: Callable[[int], Any]  # batch size -> core state [B, ...] (() feed-forward)
    recurrent: bool
    novelty: bool  # the params carry the novelty bonus's entries (`novelty.init_novelty`)

    def greedy_act(self, params, observation: chex.Array, core: Any = None, first=None):
        """The evaluation action (argmax, or the box's mean) and the core after it."""
        (dist, _), core = self.forward(params, observation, core, first)
        return self.policy.greedy(dist), core


def actor_critic_parts(
    spec: EnvSpec,
    config: Any,
    owner: str,
    total_updates: int | None,
    adam_eps: float = 1e-8,
    hp: Hyperparams | None = None,
) -> ActorCriticParts:
    """The parts a PPO or IMPALA `config` (named `owner` in errors) asks for on `spec`,
    its learning rate (`hp`'s: a member's where swept) annealed over `total_updates`
    where the config says so."""
    hp = Hyperparams(config) if hp is None else hp
    net = make_actor_critic(spec, config, owner)
    network_init, apply = normalized_network(
        net, spec, config.normalize_observations, config.normalize_values, config.observation_clip
    )
    with_novelty = novelty.enabled(getattr(hp, "novelty_weight", 0.0))

    def init(key: chex.PRNGKey) -> dict[str, Any]:
        params = network_init(key)
        if with_novelty:  # its own key: the network's initialisation is the same either way
            params = {**params, **novelty.init_novelty(jax.random.fold_in(key, 1),
                                                       tuple(spec.observation_shape))}  # fmt: skip
        return params

    learning_rate = config_learning_rate(config, hp.learning_rate, total_updates)
    optimizer = make_optimizer(learning_rate, config.max_grad_norm, eps=adam_eps)
    frozen: tuple[str, ...] = ()
    if config.normalize_observations or config.normalize_values:
        frozen += (STATS_KEY, VALUE_KEY)
    if with_novelty:
        frozen += novelty.FROZEN_KEYS
    if frozen:
        optimizer = frozen_statistics(optimizer, frozen)
    recurrent = config.core != "none"
    return ActorCriticParts(
        init=init,
        apply=apply,
        forward=act_step(apply, recurrent),
        forward_all=unroll(apply, recurrent),
        policy=action_policy(spec, config.squash),
        optimizer=optimizer,
        learning_rate=learning_rate,
        initial_core=core_initializer(net),
        recurrent=recurrent,
        novelty=with_novelty,
    )
