# SPDX-License-Identifier: GPL-3.0-or-later
"""The solver settings as Blender sees them, derived from their one declaration in ``core.settings``.

:class:`~unified_particles.core.settings.SolverSettings` declares each setting once, with a
:class:`~unified_particles.core.settings.SettingInfo` (label, description, range, unit, panel). Every
setting whose ``panel`` is "world" or "advanced" becomes, from here:

* a property of ``scene.unified_particles`` with the setting's name (:func:`solver_property`);
* a row of the sidebar's World or Advanced panel (:func:`panel_setting_names`);
* a keyword of ``World(...)`` when the scene is read (:func:`world_keywords`);
* part of the change detector (``scene_reader.settings_signature``), which re-simulates live and
  marks a bake Outdated.

Adding a setting is one field in ``core/settings.py`` plus the core code that uses it. A base module
of the Blender layer: imports ``bpy.props`` and the core only.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from bpy.props import FloatProperty, IntProperty

from ..core.settings import SettingInfo, declared_settings

# The stubs type these as returning None and want literal enum strings; the values come from the
# declarations here, so they are called untyped.
_INT_PROPERTY: Any = IntProperty
_FLOAT_PROPERTY: Any = FloatProperty


def _shown() -> list[tuple[str, Any, SettingInfo]]:
    return [(name, default, info) for name, default, info in declared_settings() if info.panel]


def _is_whole(default: Any) -> bool:
    return isinstance(default, int) and not isinstance(default, bool)


def panel_setting_names(panel: str | None = None) -> list[str]:
    """Names of the settings shown in ``panel`` ("world", "advanced"; None: both), declaration order."""
    return [name for name, _, info in _shown() if panel is None or info.panel == panel]


def solver_property(name: str, update: Callable[[Any, Any], None]) -> Any:
    """The ``bpy.props`` property of the shown setting ``name`` (an annotation of the scene group)."""
    for setting, default, info in _shown():
        if setting == name:
            return _property(default, info, update)
    raise KeyError(name)


def _property(default: Any, info: SettingInfo, update: Callable[[Any, Any], None]) -> Any:
    common: dict[str, Any] = {"name": info.label, "description": info.description, "update": update}
    if _is_whole(default):
        return _INT_PROPERTY(default=int(default), min=int(info.minimum), max=int(info.maximum), **common)
    value = info.ui_default if info.ui_default is not None else default
    maximum = info.maximum if math.isfinite(info.maximum) else info.ui_maximum
    if maximum is None:
        raise ValueError(f"setting {info.label!r} has no finite maximum for Blender (set ui_maximum)")
    extra: dict[str, Any] = {}
    if info.soft_maximum is not None:
        extra["soft_max"] = info.soft_maximum
    return _FLOAT_PROPERTY(
        default=float(value),
        min=float(info.minimum),
        max=float(maximum),
        unit=info.blender_unit,
        subtype=info.blender_subtype,
        **common,
        **extra,
    )


def world_keywords(settings: Any) -> dict[str, int | float]:
    """``World(**keywords)`` of every shown setting, read from ``scene.unified_particles``."""
    return {
        name: int(getattr(settings, name)) if _is_whole(default) else float(getattr(settings, name))
        for name, default, _ in _shown()
    }
