# SPDX-License-Identifier: GPL-3.0-or-later
"""Is the bake still what the scene would give? The settings hash, Outdated, and cache checks.

:func:`current_settings_hash` hashes the one change detector of the Blender layer
(``scene_reader.settings_signature``: solver settings, radius, gravity, fps, each simulated object's
settings) plus what only a bake has: its frame range and each baked object's output. A bake stores the
hash; ``scene.unified_particles_bake.outdated`` compares it with the current one. :func:`check_bake`
compares the cache files' sidecars with the scene (missing, mismatched or stale caches), and
:func:`frame_range_note` tells when the scene's frames moved away from the baked ones.

Imports ``bake.paths``, ``bake.outputs``, the frame path's ``scene_reader``, ``cachefiles`` and the
base modules.
"""

from __future__ import annotations

import sys
from typing import Any

import bpy

from .. import cachefiles as cf
from ..rna import mesh_of, object_bake, scene_bake
from ..scene_reader import settings_signature, simulated_objects
from .outputs import bake_output, baked_folder, baked_objects
from .paths import BAKED_ROLES, role

# Kinds whose Mesh Cache writes every vertex of the object's mesh (a vertex count to check).
POINT_KINDS = ("CLOTH", "GRANULAR", "FLUID", "INFLOW", "ROPE", "HAIR")


def report(message: str) -> None:
    """Print a bake message for the console (and farm logs)."""
    print(f"Unified Particles bake: {message}", file=sys.stderr)


def _object_key(obj: bpy.types.Object) -> str:
    # The stable id, so renaming an object does not make its bake Outdated.
    return str(object_bake(obj).uid or obj.name)


def current_settings_hash(scene: bpy.types.Scene, frame_start: int, frame_end: int) -> str:
    """Hash of every setting that changes a bake: the change detector, frames and outputs."""
    objects = simulated_objects(scene)
    settings: dict[str, Any] = settings_signature(scene, objects, key=_object_key)
    settings["frames"] = [int(frame_start), int(frame_end)]
    settings["outputs"] = {_object_key(o): bake_output(o) for o in objects if role(o) in BAKED_ROLES}
    return cf.settings_hash(settings)


def frame_range_note(scene: bpy.types.Scene) -> str:
    """A note for the panel when the scene's frame range no longer matches the baked one ('' if it does).

    Not an error: a farm or a user may bake a sub-range on purpose (``--frames``), but after moving
    the scene's start or end the user should know that frames outside the bake do not move.
    """
    state = scene_bake(scene)
    if not state.baked or state.is_baking:
        return ""
    start, end = int(scene.frame_start), int(scene.frame_end)
    if (start, end) == (int(state.frame_start), int(state.frame_end)):
        return ""
    return (
        f"Scene frames {start}-{end} differ from the baked {state.frame_start}-{state.frame_end}: "
        "frames outside the bake hold the nearest baked pose. Bake again to cover the new range."
    )


def check_bake(scene: bpy.types.Scene) -> list[str]:
    """Problems of the scene's bake (missing, mismatched or stale caches); empty if all is well."""
    state = scene_bake(scene)
    if not state.baked:
        return []
    problems: list[str] = []
    if state.outdated:
        problems.append("settings changed since the bake: bake again to see them")
    # Where the files are: after Save As into another folder, still next to the file that was baked.
    folder, _ = baked_folder(scene)
    for obj in baked_objects(scene):
        settings = object_bake(obj)
        if folder is None:
            problems.append(f"{obj.name}: no cache folder recorded")
            continue
        try:
            sidecar_path = cf.cache_file(folder, settings.uid, ".json")
            sidecar = cf.read_json(sidecar_path)
        except cf.CacheError as exc:
            problems.append(f"{obj.name}: {exc}")
            continue
        pc2 = cf.cache_file(folder, settings.uid, ".pc2") if settings.baked_output == "PC2" else None
        n_points = None
        if pc2 is not None and obj.type == "MESH" and sidecar.get("kind") in POINT_KINDS:
            # Their Mesh Cache sits before any modifier that adds vertices.
            n_points = len(mesh_of(obj).vertices)
        found = cf.check_sidecar(
            sidecar,
            uid=settings.uid,
            settings=state.settings_hash,
            n_points=n_points,
            frame_start=state.frame_start,
            frame_end=state.frame_end,
            pc2_path=pc2,
        )
        if sidecar.get("bake_id") != state.bake_id:
            found.append("the cache files come from a different bake (another file or a later bake)")
        problems += [f"{obj.name}: {p}" for p in found]
    return problems


def report_bake_problems(scene: bpy.types.Scene) -> list[str]:
    """Check the bake and record the result in the scene's bake status (shown in the panel)."""
    problems = check_bake(scene)
    state = scene_bake(scene)
    if problems:
        state.error = "Bake cache problem: " + "; ".join(problems)
        report(f"scene {scene.name!r}: {state.error}")
    elif state.error.startswith("Bake cache problem"):
        state.error = ""
    return problems
