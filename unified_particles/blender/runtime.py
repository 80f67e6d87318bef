# SPDX-License-Identifier: GPL-3.0-or-later
"""All module-level state of the Blender layer, in one place.

Lifetime: one Blender session. Nothing here is saved in the .blend; :func:`clear` empties it when a
file is about to load (``load_pre`` handler) and when the add-on is disabled (``unregister``). What
must survive saving lives in the PropertyGroups instead (``properties.py``, ``bake/properties.py``).

* ``SIMULATIONS``: the live simulation (World, frame cache, objects it drives) of each scene, by
  scene name. Each one also remembers the error it reported last, so it is printed once.
* ``REST_MEMORY``: the exact rest matrix of each rigid object at its last build (see below).
* ``PAUSED``: scenes the frame handler leaves alone (a bake drives them itself).
* the nested-handler guard: ``scene.frame_set`` called while the handler runs (to evaluate animated
  colliders at skipped frames) must not re-enter the handler.
* ``bake_source_factory``: a test seam; None means the bake reads the live simulation.

A base module: imports only ``rna``. The simulation type is named for type checkers only.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import bpy

from .mesh_io import FloatArray
from .rna import scene_settings

if TYPE_CHECKING:
    from .simulation import Simulation

SIMULATIONS: dict[str, Simulation] = {}

# Rigid object name -> the exact rest matrix of its last build. Blender re-derives matrix_world from
# location/rotation/scale (or keyframes), which changes the last bits; an object found within 1e-6 of its
# remembered rest is taken to be at that rest, so rebuilding (after Reset, a settings change at the start
# frame, or a bake) starts bit-identically.
REST_MEMORY: dict[str, FloatArray] = {}

PAUSED: set[str] = set()

_IN_HANDLER: list[bool] = [False]

bake_source_factory: Callable[[bpy.types.Scene], Any] | None = None
"""Makes the motion source of a bake (tests swap it to inject failures); None: ``bake.LiveSource``."""


def clear() -> None:
    """Forget every simulation (a file is being loaded, or the add-on is disabled)."""
    SIMULATIONS.clear()
    PAUSED.clear()
    REST_MEMORY.clear()


def invalidate(scene: bpy.types.Scene, frame: int | None) -> None:
    """Settings changed at ``frame`` (None: structure changed): re-simulate from there."""
    sim = SIMULATIONS.get(scene.name)
    if sim is not None:
        sim.invalidate(frame)
    if scene_settings(scene).last_error:
        scene_settings(scene).last_error = ""


def is_paused(scene: bpy.types.Scene) -> bool:
    return scene.name in PAUSED


@contextlib.contextmanager
def paused(scene: bpy.types.Scene) -> Iterator[None]:
    """While inside, the frame handler leaves ``scene`` alone."""
    name = scene.name
    PAUSED.add(name)
    try:
        yield
    finally:
        PAUSED.discard(name)


def in_handler() -> bool:
    """True while the frame handler (or a frame_set it made) runs."""
    return _IN_HANDLER[0]


@contextlib.contextmanager
def nested_handler_guard() -> Iterator[None]:
    """While inside, the frame handler returns at once (for ``frame_set`` calls made by the runner)."""
    previous = _IN_HANDLER[0]
    _IN_HANDLER[0] = True
    try:
        yield
    finally:
        _IN_HANDLER[0] = previous
