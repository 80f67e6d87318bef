# SPDX-License-Identifier: GPL-3.0-or-later
"""Unified Particles: rigid bodies, cloth and granular material in one PBD solver.

This file only registers the Blender modules. ``bpy`` is imported lazily inside
``register()``/``unregister()`` so that ``import unified_particles.core`` works in
any Python that has NumPy, with or without Blender.
"""

from __future__ import annotations

import importlib
from types import ModuleType

# Registered Blender modules (those with register()/unregister()), in registration order; unregistered
# in reverse. The others (rna, mesh_io, materials, transforms, bake_marks, settings_ui, runtime, granular,
# cachefiles, the frame path scene_reader -> frame_cache -> writeback -> simulation, and the bake's paths,
# outputs, staleness, live_source, targets, stash, job) are imported by these.
_MODULE_NAMES: tuple[str, ...] = (
    "properties",
    "bake.properties",
    "operators",
    "convert",
    "bake.operators",
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
