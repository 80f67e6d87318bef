# SPDX-License-Identifier: GPL-3.0-or-later
"""Unified Particles: rigid bodies, cloth and granular material in one PBD solver.

This file only registers the Blender modules. ``bpy`` is imported lazily inside
``register()``/``unregister()`` so that ``import unified_particles.core`` works in
any Python that has NumPy, with or without Blender.
"""

from __future__ import annotations

import importlib
from types import ModuleType

# Blender modules in registration order (unregistered in reverse).
_MODULE_NAMES: tuple[str, ...] = (
    "properties",
    "operators",
    "bake",
    "panels",
    "handlers",
)


def _modules() -> list[ModuleType]:
    return [importlib.import_module(f"{__name__}.blender.{name}") for name in _MODULE_NAMES]


def register() -> None:
    for module in _modules():
        module.register()


def unregister() -> None:
    for module in reversed(_modules()):
        module.unregister()
