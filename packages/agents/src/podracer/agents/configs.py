"""Every agent's hyperparameters: frozen dataclasses, validated on construction.

They live apart from the agents' code so that they import without JAX: both command
lines build their flags from them (and `--help` must not wait for JAX), and the run
harness compares them on resume. One config per agent, the same on both runtimes; the
values that learn a given task family are presets (`podracer.agents.presets`).
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar
from typing import Literal

from podracer.agents.validation import check_choice
from podracer.agents.validation import check_finite
from podracer.agents.validation import check_int
from podracer.agents.validation import check_positive
from podracer.agents.validation import check_range
from podracer.agents.validation import fail
from podracer.search import DiscreteSupport
from podracer.search import SearchConfig

Torso = Literal["auto", "mlp", "minatar_cnn", "nature_cnn", "impala_resnet"]
TORSOS = ("auto", "mlp", "minatar_cnn", "nature_cnn", "impala_resnet")
LatentNorm = Literal["min_max", "layer_norm"]
LATENT_NORMS = ("min_max", "layer_norm")
Core = Literal["none", "lstm", "gru"]
CORES = ("none", "lstm", "gru")


def _check_sizes(cfg, *fields: str) -> None:
    for name in fields:
        sizes = getattr(cfg, name)
        if not isinstance(sizes, tuple) or not all(
            isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in sizes
        ):
            fail(cfg, name, "a tuple of positive ints")


def _check_core(cfg) -> None:
    check_choice(cfg, "core", CORES)
    check_int(cfg, "core_size")


def _check_continuous(cfg) -> None:
    """The Gaussian-policy and normalisation fields of the actor-critic configs."""
    check_choice(cfg, "log_std", ("parameter", "network"))
    check_choice(cfg, "squash", ("clip", "tanh"))
    init = cfg.init_log_std
    if isinstance(init, bool) or not isinstance(init, int | float) or not -5.0 < init < 2.0:
        fail(cfg, "init_log_std", "in (-5, 2), inside the network log-std's bounds")
    for name in ("normalize_observations", "normalize_values"):
        if not isinstance(getattr(cfg, name), bool):
            fail(cfg, name, "a bool")
    check_positive(cfg, "observation_clip")


class _Minibatched:
    """A config whose updates split each rollout into minibatches (`learn.minibatch_update`)."""

    # The loss runs along each sequence (V-trace), so minibatches always hold whole ones.
    _loss_along_sequences: ClassVar[bool] = False

    @property
    def minibatch_split(self) -> Literal["time", "envs"]:
        """What minibatches split: the rollout's time steps, or its envs (whole sequences,
        from their start states) for a recurrent core or a loss along sequences."""
        if self._loss_along_sequences or self.core != "none":
            return "envs"
        return "time"


@dataclasses.dataclass(frozen=True)
class ReplayConfig:
    """Sequence replay for an agent's learner; sizes are global (split over devices).

    `capacity=0` turns replay off: the learner uses each actor trajectory once, as it
    arrives. With replay, each actor rollout of `[T+1, num_envs]` is added as `num_envs`
    sequences and the learner makes `updates_per_rollout` updates, each on
    `sequences_per_update` sequences sampled from the buffer, so the learner batch and the
    reuse of each sample (replay ratio) are independent of the actor batch.
    """

    capacity: int = 0  # sequences held (all devices together); 0: no replay
    sequences_per_update: int = 32  # learner batch, in sequences of length T+1
    updates_per_rollout: int = 1  # learner updates per actor rollout
    priority_exponent: float = 0.0  # alpha: 0 uniform, 1 proportional to priority
    importance_exponent: float = 0.0  # beta: 0 no correction, 1 full correction

    def __post_init__(self) -> None:
        check_finite(self)
        check_int(self, "capacity", minimum=0)
        check_int(self, "sequences_per_update", "updates_per_rollout")
        check_range(self, "priority_exponent", 0.0, float("inf"))
        check_range(self, "importance_exponent", 0.0, 1.0)

    @property
    def enabled(self) -> bool:
        return self.capacity > 0

    @property
    def prioritised(self) -> bool:
        return self.priority_exponent > 0


@dataclasses.dataclass(frozen=True)
class QLambdaConfig(_Minibatched):
    """Q(lambda): the Podracer paper's Anakin demo agent (epsilon 0: its greedy acting).

    With `layer_norm`, several epochs of minibatches, an epsilon schedule and an annealed
    learning rate it is PQN (Gallici et al., "Simplifying Deep Temporal Difference
    Learning", ICLR 2025): the `pqn` presets set those.
    """

    # What a sweep or a population may vary per member (`podracer.agents.hyper`).
    SWEEPABLE: ClassVar[tuple[str, ...]] = (
        "learning_rate", "gamma", "lambda_", "reward_scale", "epsilon",
    )  # fmt: skip

    learning_rate: float = 1e-3  # the demo uses 1e-4; 1e-3 learns Catch in ~2e5 steps
    anneal_lr: bool = False  # linearly to 0 over the run's updates
    optimizer: Literal["adam", "radam"] = "adam"  # PQN: radam
    gamma: float = 0.99
    lambda_: float = 0.9
    reward_scale: float = 1.0  # rewards are multiplied by this for learning (PQN's CartPole: 0.1)
    epsilon: float = 0.0  # exploration during training (the final one with epsilon_start)
    # Linear from epsilon_start to epsilon over the first epsilon_decay of the run's
    # updates (PQN: 1 -> 0.05 over 10%); None: a constant epsilon.
    epsilon_start: float | None = None
    epsilon_decay: float = 0.1
    num_epochs: int = 1  # passes over each rollout
    num_minibatches: int = 1  # per epoch; splits the rollout's time axis (envs with a core)
    # Each minibatch's gradient as the mean of this many equal slices' (the same step),
    # computed one after another: the backward pass holds a slice's activations, for an
    # accelerator whose fast memory a whole minibatch's outgrow (learn.minibatch_update).
    num_microbatches: int = 1
    torso: Torso = "auto"  # auto: the Nature CNN for uint8 frames, else an MLP
    hidden_sizes: tuple[int, ...] = (256,)
    activation: str = "relu"
    layer_norm: bool = False  # LayerNorm after each hidden layer (PQN)
    max_grad_norm: float | None = None
    # A recurrent core after the torso ("lstm" or "gru", core_size units; "none": a
    # feed-forward network). Minibatches of a recurrent agent split the envs, not time.
    core: Core = "none"
    core_size: int = 128  # units of the core (an LSTM has a cell and a hidden state of this size)

    def __post_init__(self):
        check_finite(self)
        check_positive(self, "learning_rate", "reward_scale")
        check_range(self, "gamma", 0.0, 1.0)
        check_range(self, "lambda_", 0.0, 1.0)
        check_range(self, "epsilon", 0.0, 1.0)
        if self.epsilon_start is not None:
            check_range(self, "epsilon_start", 0.0, 1.0)
        check_range(self, "epsilon_decay", 0.0, 1.0)
        check_int(self, "num_epochs", "num_minibatches", "num_microbatches")
        check_choice(self, "torso", TORSOS)
        check_choice(self, "optimizer", ("adam", "radam"))
        _check_sizes(self, "hidden_sizes")
        _check_core(self)


@dataclasses.dataclass(frozen=True)
class PQNConfig(QLambdaConfig):
    """PQN's own defaults (its MinAtar configuration, purejaxql's pqn_minatar.yaml): the
    `qlambda` agent with LayerNorm, 2 epochs x 32 minibatches, epsilon 1 -> 0.05 over the
    first 10% of updates, RAdam at 5e-4 annealed to 0, lambda 0.65, clip 10."""

    learning_rate: float = 5e-4
    anneal_lr: bool = True  # linearly to 0 over the run's updates
    optimizer: Literal["adam", "radam"] = "radam"
    lambda_: float = 0.65
    epsilon: float = 0.05  # the final exploration rate
    epsilon_start: float | None = 1.0  # falling linearly to epsilon over epsilon_decay
    epsilon_decay: float = 0.1  # of the run's updates
    num_epochs: int = 2  # passes over each rollout
    num_minibatches: int = 32  # per epoch; splits the rollout's time axis (envs with a core)
    hidden_sizes: tuple[int, ...] = (128,)
    layer_norm: bool = True  # LayerNorm after each hidden layer
    max_grad_norm: float | None = 10.0


@dataclasses.dataclass(frozen=True)
class ImpalaConfig(_Minibatched):
    """IMPALA: V-trace actor-critic (Espeholt et al., 2018); with `clip_eps` and sample
    reuse, APPO (V-trace targets, PPO's clipped surrogate)."""

    _loss_along_sequences: ClassVar[bool] = True
    # Fields named otherwise by earlier versions: a stored config's old name reads as
    # the new one (`podracer.runs.config.config_from_json`).
    RENAMED: ClassVar[dict[str, str]] = {"baseline_cost": "value_cost"}
    # What a sweep or a population may vary per member (`podracer.agents.hyper`).
    SWEEPABLE: ClassVar[tuple[str, ...]] = (
        "learning_rate", "gamma", "lambda_", "entropy_cost", "value_cost",
        "clip_rho_threshold", "clip_pg_rho_threshold", "novelty_weight", "novelty_fade",
    )  # fmt: skip

    learning_rate: float = 6e-4
    anneal_lr: bool = False  # linearly to 0 over the run's updates
    gamma: float = 0.99
    lambda_: float = 1.0  # V-trace lambda (the paper's c-bar trace coefficient scale)
    entropy_cost: float = 0.01
    value_cost: float = 0.5  # the value (baseline) loss's weight, as PPO's and MuZero's
    clip_rho_threshold: float = 1.0
    clip_pg_rho_threshold: float = 1.0
    max_grad_norm: float | None = 40.0
    # Sample reuse: num_epochs passes over each trajectory, each split into num_minibatches
    # gradient steps on whole sequences (V-trace runs along them), V-trace correcting for
    # the policy having moved since acting. Reuse wants a trust region: with clip_eps the
    # policy loss is PPO's clipped surrogate of the V-trace advantages (APPO); None:
    # IMPALA's importance-weighted policy gradient.
    num_epochs: int = 1
    num_minibatches: int = 1  # per epoch; splits each device's envs
    clip_eps: float | None = None
    torso: Torso = "auto"
    hidden_sizes: tuple[int, ...] = (64, 64)
    activation: str = "tanh"
    separate_critic: bool = False  # the critic gets its own torso (and core)
    # A recurrent core after each torso ("lstm" or "gru", core_size units; "none": a
    # feed-forward network). The learner unrolls it from each trajectory's start state.
    core: Core = "none"
    core_size: int = 128  # units of the core (an LSTM has a cell and a hidden state of this size)
    # Continuous boxes (ignored for discrete actions): a diagonal Gaussian whose log-std
    # is a free parameter per dimension ("parameter", CleanRL's) or a head of the actor
    # ("network"), starting at init_log_std; its samples reach the env clipped to the box
    # ("clip", CleanRL's: log-probabilities of the unclipped sample) or squashed into it
    # ("tanh": log-probabilities with the change of variables).
    log_std: Literal["parameter", "network"] = "parameter"
    init_log_std: float = 0.0
    squash: Literal["clip", "tanh"] = "clip"
    # Observations normalised by running mean and variance kept in the params (updated by
    # the learner, read by actors, checkpointed), then clipped to +-observation_clip.
    normalize_observations: bool = False
    observation_clip: float = 10.0
    # The critic predicts values normalised by the running mean and variance of the
    # V-trace targets (kept in the params); the value loss is in those units.
    normalize_values: bool = False
    # Random network distillation's novelty bonus, as MuZero's (`podracer.agents.novelty`;
    # 0: off): this weight times the predictor's normalised error on the observation each
    # transition led to joins its reward for V-trace, fading to 0 over the first
    # `novelty_fade` of the run's updates (0: constant), its scale over about the last
    # `novelty_window` errors (0: all). Where every step pays -1 until a goal
    # (MountainCar), random play gives the critic nothing to learn and the bonus is what
    # sets states apart.
    novelty_weight: float = 0.0
    novelty_fade: float = 0.0
    novelty_window: int = 0

    def __post_init__(self):
        check_finite(self)
        check_positive(self, "learning_rate", "clip_rho_threshold", "clip_pg_rho_threshold")
        check_range(self, "gamma", 0.0, 1.0)
        check_range(self, "lambda_", 0.0, 1.0)
        check_range(self, "entropy_cost", 0.0, float("inf"))
        check_range(self, "value_cost", 0.0, float("inf"))
        check_range(self, "novelty_weight", 0.0, float("inf"))
        check_range(self, "novelty_fade", 0.0, 1.0)
        check_int(self, "novelty_window", minimum=0)
        check_int(self, "num_epochs", "num_minibatches")
        if self.clip_eps is not None:
            check_positive(self, "clip_eps")
        if self.normalize_values and self.num_epochs * self.num_minibatches > 1:
            fail(self, "normalize_values", "False with num_epochs or num_minibatches above 1 "
                 "(its statistics are merged after a single step per batch)")  # fmt: skip
        check_choice(self, "torso", TORSOS)
        _check_sizes(self, "hidden_sizes")
        _check_core(self)
        _check_continuous(self)


@dataclasses.dataclass(frozen=True)
class PPOConfig(_Minibatched):
    """PPO with the clipped surrogate and GAE; defaults: PureJaxRL's CartPole settings."""

    # Fields named otherwise by earlier versions: a stored config's old name reads as
    # the new one (`podracer.runs.config.config_from_json`).
    RENAMED: ClassVar[dict[str, str]] = {"gae_lambda": "lambda_"}
    # What a sweep or a population may vary per member (`podracer.agents.hyper`).
    SWEEPABLE: ClassVar[tuple[str, ...]] = (
        "learning_rate", "gamma", "lambda_", "clip_eps", "entropy_cost", "value_cost",
    )  # fmt: skip

    learning_rate: float = 2.5e-4
    anneal_lr: bool = True  # linearly to 0 over the run's updates
    gamma: float = 0.99
    lambda_: float = 0.95  # GAE's lambda (the lambda of every agent's lambda-returns)
    clip_eps: float = 0.2
    entropy_cost: float = 0.01
    value_cost: float = 0.5
    clip_value_loss: bool = True
    normalize_advantages: bool = True
    num_epochs: int = 4
    num_minibatches: int = 4  # splits the rollout's time axis (its envs with a core)
    max_grad_norm: float | None = 0.5
    torso: Torso = "auto"
    hidden_sizes: tuple[int, ...] = (64, 64)
    activation: str = "tanh"
    separate_critic: bool = True  # the critic gets its own torso (and core)
    # A recurrent core after each torso ("lstm" or "gru", core_size units; "none": a
    # feed-forward network). The learner unrolls it from each trajectory's start state.
    core: Core = "none"
    core_size: int = 128  # units of the core (an LSTM has a cell and a hidden state of this size)
    # Continuous boxes (ignored for discrete actions): a diagonal Gaussian whose log-std
    # is a free parameter per dimension ("parameter", CleanRL's) or a head of the actor
    # ("network"), starting at init_log_std; its samples reach the env clipped to the box
    # ("clip", CleanRL's: log-probabilities of the unclipped sample) or squashed into it
    # ("tanh": log-probabilities with the change of variables).
    log_std: Literal["parameter", "network"] = "parameter"
    init_log_std: float = 0.0
    squash: Literal["clip", "tanh"] = "clip"
    # Observations normalised by running mean and variance kept in the params (updated by
    # the learner, read by actors, checkpointed), then clipped to +-observation_clip.
    normalize_observations: bool = False
    observation_clip: float = 10.0
    # The critic predicts values normalised by the running mean and variance of the value
    # targets (kept in the params); the value loss and its clip are in those units.
    normalize_values: bool = False

    def __post_init__(self):
        check_finite(self)
        check_positive(self, "learning_rate", "clip_eps")
        check_int(self, "num_epochs", "num_minibatches")
        check_range(self, "gamma", 0.0, 1.0)
        check_range(self, "lambda_", 0.0, 1.0)
        check_choice(self, "torso", TORSOS)
        _check_sizes(self, "hidden_sizes")
        _check_core(self)
        _check_continuous(self)


@dataclasses.dataclass(frozen=True)
class MuZeroConfig:
    """MuZero with Gumbel search (Danihelka et al., 2022) and prioritised sequence replay.

    The defaults learn gymnax CartPole and Catch on Anakin at 32 envs x 16 steps; how
    they were found is in `benchmarks/results/muzero_tuning.md`.
    """

    # What a sweep or a population may vary per member (`podracer.agents.hyper`): the
    # search's numbers too (`search.gumbel_scale`, ...).
    SWEEPABLE: ClassVar[tuple[str, ...]] = (
        "learning_rate", "gamma", "value_cost", "reward_cost", "policy_cost", "entropy_cost",
        "consistency_cost", "novelty_weight", "novelty_fade", "exploration_epsilon",
        "exploration_fade", "exploration_final", "policy_target_smoothing",
        *(f"search.{name}" for name in SearchConfig.SWEEPABLE),
    )  # fmt: skip

    learning_rate: float = 1e-3
    gamma: float = 0.99
    num_unroll_steps: int = 5  # K
    td_steps: int = 10  # n of the n-step value targets
    # What n-step value targets bootstrap from: "network" (the value head on the
    # observation, current params) or "search" (the acting search's root value, a few
    # rollouts old under replay: it acts as a target network and kept runs stable).
    value_bootstrap: Literal["network", "search"] = "search"
    # Gumbel MuZero; 8 simulations suffice for few actions.
    search: SearchConfig = SearchConfig(policy="gumbel", num_simulations=8)
    # Scaled supports (h(x) space): |value| up to ~110, |reward| up to ~35.
    value_support: DiscreteSupport = DiscreteSupport(-10.0, 10.0, 51, scaled=True)
    reward_support: DiscreteSupport = DiscreteSupport(-5.0, 5.0, 21, scaled=True)
    # auto: mlp for vectors, impala_resnet for uint8 frames; the Nature CNN costs ~6x
    # less than the ResNet per frame (for CPU runs).
    torso: Torso = "auto"
    torso_hidden_sizes: tuple[int, ...] = (64,)  # mlp torso only
    latent_size: int = 64
    # How representation and dynamics normalise each latent: "min_max" to [0, 1] (MuZero's)
    # or "layer_norm" to zero mean and unit variance (doubled Breakout-MinAtar at 3e6).
    latent_norm: LatentNorm = "min_max"
    # Dynamics and prediction MLPs: with one layer the reward model stayed
    # action-independent on Catch.
    hidden_sizes: tuple[int, ...] = (128, 128)
    value_cost: float = 0.5
    reward_cost: float = 1.0
    policy_cost: float = 1.0
    # An entropy bonus on the prior at the observed states: the search's policy target
    # starts from the prior's logits, so a prior that has grown sharp stays sharp (the
    # collapse of `benchmarks/results/muzero_tuning.md`); the bonus holds it back.
    entropy_cost: float = 0.0
    # The policy target as (1 - s) x the search's policy + s x uniform (label smoothing,
    # Szegedy et al., 2016; 0: the search's policy as it is). Gumbel MuZero's target adds
    # the search's values to the prior's own logits, so a sharp prior gives a sharp
    # target; smoothing bounds how sharp (an entropy bonus of 0.05 moved neither,
    # benchmarks/results/muzero_tuning.md).
    policy_target_smoothing: float = 0.0
    # EfficientZero's temporal consistency (Ye et al., 2021; it uses 2): each unrolled
    # latent's projection, through a predictor, is pulled towards the projection of the
    # representation of the observation it stands for (negative cosine, that branch
    # stopped). It shapes the latent where rewards say little; it did not help Acrobot or
    # Breakout-MinAtar at 1.2e6 steps (benchmarks/results/muzero_tuning.md).
    consistency_cost: float = 0.0
    # Random network distillation's novelty bonus (Burda et al., 2019; 0: off): this
    # weight times the predictor's normalised error on the next observation is added to
    # every reward the model and the value learn (`podracer.agents.novelty`). Where every
    # step pays -1 until a goal (Acrobot, MountainCar), random play gives the value
    # nothing to learn and the bonus is what sets states apart.
    novelty_weight: float = 0.0
    # The fraction of the run's updates over which that weight falls linearly to 0 (0:
    # constant). Once the bonus has led the agent to the goal, a fading bonus leaves the
    # search to the task's own reward (Acrobot, benchmarks/results/muzero_tuning.md).
    novelty_fade: float = 0.0
    # How many of the latest errors the bonus's scale (their standard deviation) weighs,
    # about (0: every error so far). Where the predictor catches up within a few updates
    # (MountainCar's two-dimensional observations) the all-time scale leaves no bonus.
    novelty_window: int = 0
    max_grad_norm: float | None = 10.0
    # Acting: a uniformly random action with this probability (the policy target is still
    # the search's); keeps every action in the data where the search policy is sharp.
    exploration_epsilon: float = 0.1
    # Acting's exploration (that epsilon and the search's noise: Gumbel's scale, or PUCT's
    # root noise and visit temperature) falls linearly to `exploration_final` of itself
    # over the first `exploration_fade` of the run's updates (0: constant), as MuZero
    # lowers its visit temperature during training (Schrittwieser et al., 2020, appendix
    # D). The noise helps the data early and costs the return late (Breakout-MinAtar,
    # faded to 0 over half the run: 29.4 against 24.9 at 1e7 steps, 3 seeds each;
    # benchmarks/results/muzero_tuning.md).
    exploration_fade: float = 0.0
    exploration_final: float = 0.0
    # Continuous actions (Sampled MuZero, Hubert et al., 2021): actions sampled from the
    # prior at every node of the search; acting explores with uniform box actions.
    num_action_samples: int = 16
    # 2048 sequences (at 32 envs x 16 steps the last 64 rollouts): stored targets come
    # from the search that acted, so a bigger buffer teaches outgrown policies. Each
    # rollout is followed by 2 updates on 32 sequences (each replayed ~2 times),
    # prioritised by value error (Schaul et al.'s proportional exponents).
    replay: ReplayConfig = ReplayConfig(
        capacity=2048,
        sequences_per_update=32,
        updates_per_rollout=2,
        priority_exponent=0.6,
        importance_exponent=0.4,
    )

    def __post_init__(self):
        check_finite(self)
        check_positive(self, "learning_rate")
        check_int(self, "num_unroll_steps", "td_steps", "latent_size", "num_action_samples")
        check_range(self, "gamma", 0.0, 1.0)
        check_range(self, "exploration_epsilon", 0.0, 1.0)
        check_range(self, "novelty_fade", 0.0, 1.0)
        check_range(self, "exploration_fade", 0.0, 1.0)
        check_range(self, "exploration_final", 0.0, 1.0)
        check_range(self, "policy_target_smoothing", 0.0, 1.0)
        check_int(self, "novelty_window", minimum=0)
        costs = ("value_cost", "reward_cost", "policy_cost", "entropy_cost", "consistency_cost",
                 "novelty_weight")  # fmt: skip
        for name in costs:
            check_range(self, name, 0.0, float("inf"))
        check_choice(self, "torso", TORSOS)
        check_choice(self, "value_bootstrap", ("network", "search"))
        check_choice(self, "latent_norm", LATENT_NORMS)
        if not isinstance(self.replay, ReplayConfig):
            fail(self, "replay", "a podracer.agents.ReplayConfig")
        if not isinstance(self.search, SearchConfig):
            fail(self, "search", "a podracer.search.SearchConfig")
        for name in ("value_support", "reward_support"):
            if not isinstance(getattr(self, name), DiscreteSupport):
                fail(self, name, "a podracer.search.DiscreteSupport")
        _check_sizes(self, "torso_hidden_sizes", "hidden_sizes")
