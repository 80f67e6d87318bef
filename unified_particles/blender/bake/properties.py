# SPDX-License-Identifier: GPL-3.0-or-later
"""Bake settings and state saved in the .blend: ``object.unified_particles_bake`` (the output chosen
and what the bake wrote, to undo it) and ``scene.unified_particles_bake`` (frames, hash, cache folder,
status). ``outdated`` is computed (:func:`.staleness.current_settings_hash`), never stored.

A registered module. Imports ``bake.staleness`` and the base modules.
"""

from __future__ import annotations

from typing import Any

import bpy
from bpy.props import BoolProperty, EnumProperty, IntProperty, PointerProperty, StringProperty

from ..rna import register_classes, unregister_classes
from .staleness import current_settings_hash

CLOTH_OUTPUTS = [
    ("PC2", "Point Cache", "PC2 file played by a Mesh Cache modifier (small .blend, fast)"),
    ("SHAPE_KEYS", "Shape Keys", "One shape key per frame stored in the .blend (no external files)"),
]
RIGID_OUTPUTS = [
    ("KEYFRAMES", "Keyframes", "Location and rotation (quaternion) keyframes on the object"),
    ("PC2", "Point Cache", "PC2 file of the moving vertices, played by a Mesh Cache modifier"),
]


class UNIFIED_PARTICLES_PG_object_bake(bpy.types.PropertyGroup):
    uid: StringProperty(  # type: ignore[valid-type]
        name="Cache Id",
        description="Stable id naming this object's cache files (kept when the object is renamed)",
        default="",
    )
    uid_owner: StringProperty(  # type: ignore[valid-type]
        name="Cache Id Owner",
        description="Name of the object the cache id was given to (a duplicate carries the original's "
        "name here, so the original keeps the id and the copy gets a new one)",
        default="",
    )
    cloth_output: EnumProperty(  # type: ignore[valid-type]
        name="Cloth Output", items=CLOTH_OUTPUTS, default="PC2"
    )
    rigid_output: EnumProperty(  # type: ignore[valid-type]
        name="Rigid Output", items=RIGID_OUTPUTS, default="KEYFRAMES"
    )
    baked_output: StringProperty(  # type: ignore[valid-type]
        name="Baked Output", description="What the current bake wrote into this object ('' if none)"
    )
    restore: StringProperty(  # type: ignore[valid-type]
        name="Restore Data", description="JSON: how to undo the bake on this object"
    )
    bake_id: StringProperty(  # type: ignore[valid-type]
        name="Bake Id",
        description="The bake whose output this object carries (an object appended from another file, or "
        "copied from another scene, carries a bake that is not its scene's: it is unbaked)",
        default="",
    )


def _get_outdated(self: Any) -> bool:
    scene = self.id_data
    if not self.baked or not isinstance(scene, bpy.types.Scene):
        return False
    try:
        return current_settings_hash(scene, int(self.frame_start), int(self.frame_end)) != self.settings_hash
    except Exception:  # a getter must not raise while the panel draws
        return True


class UNIFIED_PARTICLES_PG_scene_bake(bpy.types.PropertyGroup):
    uid: StringProperty(name="Scene Cache Id", default="")  # type: ignore[valid-type]
    uid_owner: StringProperty(  # type: ignore[valid-type]
        name="Scene Cache Id Owner",
        description="Name of the scene the id was given to (a copy of the scene carries the original's name "
        "here, so the original keeps the id and its bake, and the copy gets a new id)",
        default="",
    )
    baked: BoolProperty(name="Baked", default=False)  # type: ignore[valid-type]
    outdated: BoolProperty(  # type: ignore[valid-type]
        name="Outdated",
        description="A setting changed since the bake: bake again (or free the bake) to see it",
        get=_get_outdated,
    )
    is_baking: BoolProperty(name="Baking", default=False)  # type: ignore[valid-type]
    frame_start: IntProperty(name="Baked Start", default=1)  # type: ignore[valid-type]
    frame_end: IntProperty(name="Baked End", default=250)  # type: ignore[valid-type]
    settings_hash: StringProperty(name="Settings Hash", default="")  # type: ignore[valid-type]
    bake_id: StringProperty(name="Bake Id", default="")  # type: ignore[valid-type]
    cache_folder: StringProperty(  # type: ignore[valid-type]
        name="Baked Cache Folder", description="Folder the current bake's files are in", default=""
    )
    cache_folder_absolute: StringProperty(  # type: ignore[valid-type]
        name="Baked Cache Folder (Absolute)",
        description="Where the folder was when the bake was made (after Save As into another folder, the "
        "relative folder points next to the new file, the cache is still next to the old one)",
        default="",
    )
    status: StringProperty(name="Bake Status", default="")  # type: ignore[valid-type]
    error: StringProperty(name="Bake Error", default="")  # type: ignore[valid-type]


classes = (UNIFIED_PARTICLES_PG_object_bake, UNIFIED_PARTICLES_PG_scene_bake)


# The stubs cannot know properties added at register time; rna.py gives typed access to them.
def register() -> None:
    register_classes(classes)
    bpy.types.Object.unified_particles_bake = PointerProperty(type=UNIFIED_PARTICLES_PG_object_bake)  # type: ignore[attr-defined,func-returns-value]
    bpy.types.Scene.unified_particles_bake = PointerProperty(type=UNIFIED_PARTICLES_PG_scene_bake)  # type: ignore[attr-defined,func-returns-value]


def unregister() -> None:
    del bpy.types.Scene.unified_particles_bake  # type: ignore[attr-defined]
    del bpy.types.Object.unified_particles_bake  # type: ignore[attr-defined]
    unregister_classes(classes)
