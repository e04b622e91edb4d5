"""podracer.envs: typed environment interfaces and adapters for Anakin and Sebulba.

Pure-JAX environments (`JaxEnv`, for Anakin): `make("catch")`, `make("gymnax:CartPole-v1")`,
`make("brax:ant")`, `make("craftax:Craftax-Symbolic-v1")`, `make("jumanji:Snake-v1")`.
Host environments (`HostEnv`, for Sebulba): `make_host("envpool:Pong-v5", num_envs=64)`,
`make_host("envpool:HalfCheetah-v4", 8)`, ale-py's Atari vector env
(`make_host("ale:Pong", 64)`), any registered gymnasium id
(`make_host("gymnasium:CartPole-v1", 8)`, its native vector env where it has one), or any JaxEnv
through `as_host_env` / `make_host("catch", num_envs=8)`. Your own envs:
`register("corridor", factory)`, `make("my_pkg.envs:Corridor")`, or entry points of the
group `podracer.envs` (`podracer.envs.registry`). Action spaces are
discrete or continuous boxes (`EnvSpec`); `render` draws frames for videos.

Names load lazily (scientific-python SPEC 1): `import podracer.envs` imports no JAX; a
name's module is imported on first use. gymnax, envpool, ale-py (`atari`), brax,
gymnasium, craftax and jumanji are optional extras, imported only when one of their envs
is made (or listed).
"""

import lazy_loader

# The public names and their modules are listed once, in __init__.pyi (which type checkers
# and IDEs read); each name's module is imported on first use (scientific-python's SPEC 1).
__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
__version__ = "0.2.0"
