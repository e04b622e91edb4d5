"""Layouts: the sizes a runtime uses with a preset (`podracer.agents.presets`).

A preset is an agent config, the same on both runtimes; what goes with it on a runtime
(Anakin's `num_envs`, `updates_per_chunk`; Sebulba's `envs_per_thread`) is that runtime's
config class's `LAYOUTS` table (`podracer/anakin/presets.py`,
`podracer/sebulba/presets.py`), keyed like the presets: `(agent, preset name)`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from podracer.agents import ConfigError
from podracer.agents import Preset


def register_layout(config_cls: type, agent: str, name: str, **fields: Any) -> None:
    """Sets the sizes a runtime uses with the preset `name` of `agent`: fields of the
    runtime's config class `config_cls` (e.g. `AnakinConfig`, num_envs=64), checked here."""
    allowed = {f.name for f in dataclasses.fields(config_cls)} - {"env", "agent", "agent_config"}
    unknown = sorted(set(fields) - allowed)
    if unknown:
        raise ConfigError(f"register_layout: {config_cls.__name__} has no fields {unknown}; "
                          f"a layout sets any of {sorted(allowed)}")  # fmt: skip
    if "LAYOUTS" not in vars(config_cls):  # the class's own table, not a parent's
        config_cls.LAYOUTS = {}
    config_cls.LAYOUTS[(agent, name)] = fields


def apply_preset(config: Any, preset: Preset, name: str) -> Any:
    """`config` (a runtime config) with the preset's agent config and the runtime's
    layout of preset `name` (its class's `LAYOUTS`), if it has one."""
    layout = getattr(type(config), "LAYOUTS", {}).get((config.agent, name), {})
    return dataclasses.replace(config, agent_config=preset.agent_config, **layout)
