# SPDX-License-Identifier: GPL-3.0-or-later
"""Bake: simulate the frame range once and store the motion in plain Blender data and cache files.

After a bake the scene plays, renders (Cycles, Eevee) and travels to a render farm without this add-on:

* cloth: a PC2 point cache played by Blender's built-in Mesh Cache modifier, first in the stack (the
  simulation moves the mesh before its modifiers) - default; or shape keys: one absolute shape key per
  frame, driven by keyframes on the key's ``eval_time`` (exact at every frame, linear blend between
  frames for motion blur);
* rigid: ``location`` + ``rotation_quaternion`` keyframes (default; consecutive quaternions kept in one
  hemisphere), or a PC2 cache on a Mesh Cache modifier last in the stack;
* granular: the particle object's points in a PC2 cache, Mesh Cache modifier placed before the Geometry
  Nodes modifier that draws the spheres;
* fluid, inflow: the same for their particle object (a fixed point count: liquid not yet poured or
  already drained is parked far below, where the Liquid Surface modifier deletes it).

The package, one concern per module, in import order (a module imports only those before it):

* ``paths``: cache folder, staging folder name, stable ids of scenes and objects;
* ``outputs``: write the outputs into objects, read them back, free a scene's bake (one object:
  ``bake_marks``);
* ``staleness``: the settings hash, Outdated, checks of the cache files against the scene;
* ``properties``: the PropertyGroups saved in the .blend (registered);
* ``live_source``: the motion source, the live simulation;
* ``targets``: what each baked object's stream holds, frame by frame;
* ``stash``: the previous bake kept aside while baking, and the objects' state before the build;
* ``job``: the bake job (staging, snapshots, resume, commit) and :func:`bake_scene`;
* ``operators``: Bake and Free Bake (registered).

Headless / render farm: ``python -m unified_particles.farm scene.blend --frames 1:250`` (see
:mod:`unified_particles.farm`), or ``bpy.ops.unified_particles.bake()`` in any script. This file
re-exports the names scripts, the farm tool and the tests use.
"""

from __future__ import annotations

from ..bake_marks import free_object
from .job import BakeJob, bake_scene, error_message
from .live_source import LiveSource, SourceEntry
from .outputs import bake_output, baked_objects, free_bake
from .paths import cache_folder, ensure_uids
from .staleness import check_bake, current_settings_hash, frame_range_note, report_bake_problems

__all__ = [
    "BakeJob",
    "LiveSource",
    "SourceEntry",
    "bake_output",
    "bake_scene",
    "baked_objects",
    "cache_folder",
    "check_bake",
    "current_settings_hash",
    "ensure_uids",
    "error_message",
    "frame_range_note",
    "free_bake",
    "free_object",
    "report_bake_problems",
]
