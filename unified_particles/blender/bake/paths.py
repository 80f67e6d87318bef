# SPDX-License-Identifier: GPL-3.0-or-later
"""Where a bake's files go, and the stable ids that name them.

Cache files are named by a stable per-object id (``object.unified_particles_bake.uid``), never by the
object's name, so renaming keeps the cache and a name cannot escape the folder. The scene's id names
its staging folder (``<cache>/.up-staging-<scene id>/``). Imports ``cachefiles`` and the base modules.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import bpy

from .. import cachefiles as cf
from ..identity import new_identity, owner_key
from ..rna import object_bake, object_settings, scene_bake, scene_settings

# Roles whose motion is baked (colliders are only read).
BAKED_ROLES = ("RIGID", "CLOTH", "GRANULAR", "FLUID", "INFLOW", "ROPE", "HAIR")
STAGING_PREFIX = ".up-staging-"
DEFAULT_CACHE_DIRECTORY = "//unified_particles_cache/"


def role(obj: bpy.types.Object) -> str:
    """The object's simulation role ("NONE" if it is not simulated); a soft body bakes as a cloth does (the
    simulation moves its mesh's vertices), so it is "CLOTH" here."""
    kind = str(object_settings(obj).role)
    return "CLOTH" if kind == "SOFT" else kind


def abspath(path: str) -> str:
    """An absolute, normalised path of a Blender path (``//`` is relative to the .blend)."""
    return os.path.normpath(bpy.path.abspath(path))


def cache_folder(scene: bpy.types.Scene) -> tuple[Path, str, str]:
    """(absolute folder, path for Blender data (relative to the .blend if possible), warning or '')."""
    setting = scene_settings(scene).cache_directory or DEFAULT_CACHE_DIRECTORY
    warning = ""
    if setting.startswith("//") and not bpy.data.filepath:
        folder = Path(tempfile.gettempdir()) / "unified_particles_cache" / ensure_scene_uid(scene)
        warning = (
            f"The file is not saved: the bake cache went to the temporary folder {folder}. "
            "Save the file and bake again to keep the cache next to it"
        )
        return folder, str(folder), warning
    folder = Path(abspath(setting))
    blend_path = setting if setting.startswith("//") else str(folder)
    return folder, blend_path, warning


def blend_path(blend_folder: str, name: str) -> str:
    """Path stored in Blender data: keeps the ``//`` relative form when the folder is relative."""
    if blend_folder.startswith("//"):
        return blend_folder.rstrip("/\\") + "/" + name
    return str(Path(blend_folder) / name)


def cache_files_of(obj: bpy.types.Object, folder: Path) -> list[Path]:
    """The PC2 and sidecar files of ``obj`` in ``folder`` (none if it has no valid id)."""
    uid = object_bake(obj).uid
    if not uid:
        return []
    try:
        return [cf.cache_file(folder, uid, ".pc2"), cf.cache_file(folder, uid, ".json")]
    except cf.CacheError:
        return []


def ensure_scene_uid(scene: bpy.types.Scene) -> str:
    state = scene_bake(scene)
    if not state.uid:
        state.uid = cf.new_uid()
        state.uid_owner = scene.name
    return str(state.uid)


def _ensure_object_uids(objects: list[bpy.types.Object]) -> bool:
    """Give each object a unique id (a duplicated object copies its id: the copy gets a new one; which
    one is the original is decided by :func:`..identity.owner_key`).

    Returns True if an id was assigned."""
    seen: set[str] = set()
    changed = False
    for obj in sorted(objects, key=owner_key):
        settings = object_bake(obj)
        if not settings.uid or settings.uid in seen:
            new_identity(obj)
            changed = True
        elif not settings.uid_owner:
            settings.uid_owner = obj.name
        seen.add(settings.uid)
    return changed


def ensure_uids(scene: bpy.types.Scene) -> bool:
    """Ids for the scene and its simulated objects, so cache names survive saving, reopening and renames
    (and an interrupted bake of a saved file can resume in a new session). True if any id was new."""
    changed = not scene_bake(scene).uid
    ensure_scene_uid(scene)
    return _ensure_object_uids([o for o in scene.objects if role(o) != "NONE"]) or changed
