"""podracer.envs: typed environment interfaces and adapters for Anakin and Sebulba.

Pure-JAX environments (`JaxEnv`, for Anakin): `make("catch")`, `make("gymnax:CartPole-v1")`,
`make("brax:ant")`. Host environments (`HostEnv`, for Sebulba):
`make_host("envpool:Pong-v5", num_envs=64)`, `make_host("envpool:HalfCheetah-v4", 8)`, or
any JaxEnv through `as_host_env` / `make_host("catch", num_envs=8)`. Your own envs:
`register("corridor", factory)`, `make("my_pkg.envs:Corridor")`, or entry points of the
group `podracer.envs` (`podracer.envs.registry`). Action spaces are
discrete or continuous boxes (`EnvSpec`); `render` draws frames for videos.

Names load lazily (scientific-python SPEC 1): `import podracer.envs` imports no JAX; a
name's module is imported on first use. gymnax, envpool and brax are optional extras,
imported only when one of their envs is made.
"""

import lazy_loader

# Each module and the public names it defines, one per line; a name's module is
# imported on first use (scientific-python's SPEC 1 lazy loading).
_NAMES = {
    "envpool_env": [
        "AtariOptions",
        "EnvpoolEnv",
        "EnvpoolXla",
        "EpisodeTracker",
        "envpool_timestep",
        "envpool_timestep_by_id",
        "init_episode_tracker",
        "make_envpool",
    ],
    "brax_env": [
        "BRAX_ENVS",
        "BraxEnv",
        "BraxState",
        "make_brax",
    ],
    "catch": [
        "Catch",
        "CatchState",
    ],
    "types": [
        "EnvSpec",
        "HostEnv",
        "JaxEnv",
        "TimeStep",
    ],
    "stats": [
        "EpisodeStats",
        "init_episode_stats",
        "update_episode_stats",
    ],
    "families": [
        "FAMILIES",
        "env_family",
    ],
    "gymnax_env": [
        "GymnaxEnv",
        "GymnaxState",
        "make_gymnax",
        "wrap_gymnax",
    ],
    "host": [
        "JaxHostEnv",
        "as_host_env",
    ],
    "actions": [
        "action_space_fields",
        "clip_action",
    ],
    "registry": [
        "EnvEntry",
        "env_import_path",
        "is_import_path",
        "is_jax_env",
        "list_envs",
        "make",
        "make_host",
        "register",
        "registered_envs",
    ],
    "rendering": [
        "render",
    ],
}

__getattr__, __dir__, __all__ = lazy_loader.attach(__name__, submod_attrs=_NAMES)
__version__ = "0.2.0"
