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
  Nodes modifier that draws the spheres.

Safety: every file is written into a staging folder (``<cache>/.up-staging-<scene id>/``) and moved in
place only when all frames are done, so a cancelled or failed bake leaves the previous bake as it was.
The staging folder keeps a snapshot of the solver state after every frame (``np.savez``, read back with
``allow_pickle=False``) and the partial streams, so a bake that was interrupted at frame k continues from
frame k with a bit-identical result. Each cache has a JSON sidecar (see :mod:`.cachefiles`) used to detect
stale or mismatched caches when a file is loaded. ``free_bake`` removes everything the bake added and
puts the objects back exactly as they were.

Headless / render farm: ``python -m unified_particles.farm scene.blend --frames 1:250`` (see
:mod:`unified_particles.farm`), or ``bpy.ops.unified_particles.bake()`` in any script (blocking when
called from a script; modal with progress and Esc to cancel when started from the UI).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import bpy
import numpy as np
from bpy.app.handlers import persistent
from bpy.props import BoolProperty, EnumProperty, IntProperty, PointerProperty, StringProperty

from . import cachefiles as cf
from .rna import (
    OperatorResult,
    as_type,
    context_scene,
    mesh_of,
    object_bake,
    object_settings,
    register_classes,
    scene_bake,
    scene_settings,
    unregister_classes,
)

BAKED_ROLES = ("RIGID", "CLOTH", "GRANULAR")
MODIFIER_NAME = "Unified Particles Bake"
SHAPE_KEY_PREFIX = "UP "
ACTION_PREFIX = "UP Bake "
STAGING_PREFIX = ".up-staging-"
_LINEAR = 1  # enum value of 'LINEAR' in Keyframe.interpolation (CONSTANT=0, LINEAR=1, BEZIER=2)

CLOTH_OUTPUTS = [
    ("PC2", "Point Cache", "PC2 file played by a Mesh Cache modifier (small .blend, fast)"),
    ("SHAPE_KEYS", "Shape Keys", "One shape key per frame stored in the .blend (no external files)"),
]
RIGID_OUTPUTS = [
    ("KEYFRAMES", "Keyframes", "Location and rotation (quaternion) keyframes on the object"),
    ("PC2", "Point Cache", "PC2 file of the moving vertices, played by a Mesh Cache modifier"),
]


# ------------------------------------------------------------------------------------------------------
# Settings and state saved in the .blend


def _mark_changed(self: Any, context: bpy.types.Context) -> None:
    """Output choices are part of the settings hash; nothing else to do (``outdated`` is computed)."""


class UNIFIED_PARTICLES_PG_object_bake(bpy.types.PropertyGroup):
    uid: StringProperty(  # type: ignore[valid-type]
        name="Cache Id",
        description="Stable id naming this object's cache files (kept when the object is renamed)",
        default="",
    )
    cloth_output: EnumProperty(  # type: ignore[valid-type]
        name="Cloth Output", items=CLOTH_OUTPUTS, default="PC2", update=_mark_changed
    )
    rigid_output: EnumProperty(  # type: ignore[valid-type]
        name="Rigid Output", items=RIGID_OUTPUTS, default="KEYFRAMES", update=_mark_changed
    )
    baked_output: StringProperty(  # type: ignore[valid-type]
        name="Baked Output", description="What the current bake wrote into this object ('' if none)"
    )
    restore: StringProperty(  # type: ignore[valid-type]
        name="Restore Data", description="JSON: how to undo the bake on this object"
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
    status: StringProperty(name="Bake Status", default="")  # type: ignore[valid-type]
    error: StringProperty(name="Bake Error", default="")  # type: ignore[valid-type]


# ------------------------------------------------------------------------------------------------------
# Small helpers


def _report(message: str) -> None:
    print(f"Unified Particles bake: {message}", file=sys.stderr)


def _matrix(value: Any) -> np.ndarray:
    return np.array([list(row) for row in value], dtype=np.float64).reshape(4, 4)


def _transform(matrix: np.ndarray, points: np.ndarray) -> np.ndarray:
    return np.asarray(points, dtype=np.float64) @ matrix[:3, :3].T + matrix[:3, 3]


def _read_positions(mesh: bpy.types.Mesh) -> np.ndarray:
    n = len(mesh.vertices)
    flat = np.empty(n * 3, dtype=np.float32)
    if n:
        as_type(mesh.attributes["position"], bpy.types.FloatVectorAttribute).data.foreach_get("vector", flat)
    return flat.reshape(n, 3)


def _write_positions(mesh: bpy.types.Mesh, positions: np.ndarray) -> None:
    flat = np.ascontiguousarray(positions, dtype=np.float32).reshape(-1)
    if flat.size:
        as_type(mesh.attributes["position"], bpy.types.FloatVectorAttribute).data.foreach_set("vector", flat)
    mesh.update()


def _evaluated_local_positions(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph) -> np.ndarray:
    obj_eval = obj.evaluated_get(depsgraph)
    mesh = obj_eval.to_mesh()
    try:
        return _read_positions(mesh).astype(np.float64)
    finally:
        obj_eval.to_mesh_clear()


def quaternion_from_matrix(m: np.ndarray) -> np.ndarray:
    """Unit quaternion (w, x, y, z) of a 3x3 rotation matrix (Shepperd's method: stable for all angles)."""
    m00, m11, m22 = m[0, 0], m[1, 1], m[2, 2]
    trace = m00 + m11 + m22
    k = int(np.argmax([trace, m00, m11, m22]))
    if k == 0:
        s = 2.0 * math.sqrt(max(1.0 + trace, 1e-300))
        q = (0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s)
    elif k == 1:
        s = 2.0 * math.sqrt(max(1.0 + m00 - m11 - m22, 1e-300))
        q = ((m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s)
    elif k == 2:
        s = 2.0 * math.sqrt(max(1.0 + m11 - m00 - m22, 1e-300))
        q = ((m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s)
    else:
        s = 2.0 * math.sqrt(max(1.0 + m22 - m00 - m11, 1e-300))
        q = ((m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s)
    quat = np.array(q, dtype=np.float64)
    return quat / np.linalg.norm(quat)


def _ensure_fcurve(action: bpy.types.Action, id_data: Any, data_path: str, index: int = 0) -> Any:
    """The F-curve of ``data_path[index]`` in ``action`` (already assigned to ``id_data``)."""
    if hasattr(action, "fcurve_ensure_for_datablock"):  # Blender 4.4+ (slotted actions); 5.0 only has this
        return action.fcurve_ensure_for_datablock(id_data, data_path, index=index)
    legacy: Any = action  # Blender < 4.4: Action.fcurves (gone in 5.0, so not in the stubs)
    fcurve = legacy.fcurves.find(data_path, index=index)
    return fcurve if fcurve is not None else legacy.fcurves.new(data_path, index=index)


def _find_fcurve(action: bpy.types.Action, id_data: Any, data_path: str, index: int = 0) -> Any:
    if hasattr(action, "fcurves"):
        return action.fcurves.find(data_path, index=index)
    return _ensure_fcurve(action, id_data, data_path, index)


def _set_keyframes(fcurve: Any, frames: np.ndarray, values: np.ndarray) -> None:
    """Replace the keyframes of ``fcurve`` with linear keys (fast path: add + foreach_set)."""
    points = fcurve.keyframe_points
    if len(points):
        points.clear()
    n = len(frames)
    points.add(n)
    co = np.empty(2 * n, dtype=np.float32)
    co[0::2] = frames
    co[1::2] = values
    points.foreach_set("co", co)
    points.foreach_set("interpolation", np.full(n, _LINEAR, dtype=np.int32))
    fcurve.update()


def _get_keyframe_values(fcurve: Any) -> np.ndarray:
    points = fcurve.keyframe_points
    co = np.empty(2 * len(points), dtype=np.float32)
    points.foreach_get("co", co)
    return co[1::2].copy()


def _new_action(id_data: Any, name: str) -> tuple[bpy.types.Action, bool]:
    created = id_data.animation_data is None
    anim = id_data.animation_data_create()
    action = bpy.data.actions.new(name)
    anim.action = action
    return action, created


def _remove_action(id_data: Any, action_name: str, created_anim: bool) -> None:
    anim = id_data.animation_data
    action = bpy.data.actions.get(action_name) if action_name else None
    if anim is not None and (action is None or anim.action == action):
        anim.action = None
    if action is not None and action.users == 0:
        bpy.data.actions.remove(action)
    if created_anim and id_data.animation_data is not None:
        anim = id_data.animation_data
        if not len(anim.drivers) and not len(anim.nla_tracks):
            id_data.animation_data_clear()


def _abspath(path: str) -> str:
    return os.path.normpath(bpy.path.abspath(path))


# ------------------------------------------------------------------------------------------------------
# Settings hash (what makes a bake stale) and cache folder


_IGNORED_SETTINGS = {
    "rna_type",
    "name",
    "show_advanced",
    "cache_directory",
    "cache_memory_limit",
    "last_error",
    "is_baked",
    "source_hidden_render",
    "has_rest",
    "rest_matrix",
    "particle_object",
    "source_object",
}


def _group_values(group: Any) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for prop in group.bl_rna.properties:
        key = prop.identifier
        if key in _IGNORED_SETTINGS or prop.type in {"POINTER", "COLLECTION"}:
            continue
        value = getattr(group, key)
        if not isinstance(value, (str, bool, int, float)):
            value = list(value)
        values[key] = value
    return values


def _role(obj: bpy.types.Object) -> str:
    settings = getattr(obj, "unified_particles", None)
    return str(settings.role) if settings is not None else "NONE"


def bake_output(obj: bpy.types.Object) -> str:
    """The output this object's next bake writes (by role and its choice)."""
    role, choice = _role(obj), object_bake(obj)
    if role == "CLOTH":
        return str(choice.cloth_output)
    if role == "RIGID":
        return str(choice.rigid_output)
    return "PC2"


def current_settings_hash(scene: bpy.types.Scene, frame_start: int, frame_end: int) -> str:
    """Hash of every setting that changes a bake: solver, gravity, fps, frames, objects and outputs."""
    settings: dict[str, Any] = {
        "scene": _group_values(scene_settings(scene)),
        "gravity": list(scene.gravity[:]) if scene.use_gravity else [0.0, 0.0, 0.0],
        "fps": [scene.render.fps, scene.render.fps_base],
        "frames": [int(frame_start), int(frame_end)],
    }
    objects = []
    for obj in scene.objects:
        role = _role(obj)
        if role == "NONE":
            continue
        key = object_bake(obj).uid or obj.name
        entry = {"id": key, "object": _group_values(object_settings(obj))}
        if role in BAKED_ROLES:
            entry["output"] = bake_output(obj)
        objects.append(entry)
    settings["objects"] = sorted(objects, key=lambda e: str(e["id"]))
    return cf.settings_hash(settings)


def cache_folder(scene: bpy.types.Scene) -> tuple[Path, str, str]:
    """(absolute folder, path for Blender data (relative to the .blend if possible), warning or '')."""
    setting = scene_settings(scene).cache_directory or "//unified_particles_cache/"
    warning = ""
    if setting.startswith("//") and not bpy.data.filepath:
        folder = Path(tempfile.gettempdir()) / "unified_particles_cache" / ensure_scene_uid(scene)
        warning = (
            f"The file is not saved: the bake cache went to the temporary folder {folder}. "
            "Save the file and bake again to keep the cache next to it"
        )
        return folder, str(folder), warning
    folder = Path(_abspath(setting))
    blend_path = setting if setting.startswith("//") else str(folder)
    return folder, blend_path, warning


def _blend_path(blend_folder: str, name: str) -> str:
    """Path stored in Blender data: keeps the ``//`` relative form when the folder is relative."""
    if blend_folder.startswith("//"):
        return blend_folder.rstrip("/\\") + "/" + name
    return str(Path(blend_folder) / name)


def ensure_scene_uid(scene: bpy.types.Scene) -> str:
    state = scene_bake(scene)
    if not state.uid:
        state.uid = cf.new_uid()
    return str(state.uid)


def _ensure_object_uids(objects: list[bpy.types.Object]) -> bool:
    """Give each object a unique id (a duplicated object copies its id: the copy gets a new one).

    Returns True if an id was assigned."""
    seen: set[str] = set()
    changed = False
    for obj in sorted(objects, key=lambda o: (not object_bake(o).baked_output, o.name)):
        settings = object_bake(obj)
        if not settings.uid or settings.uid in seen:
            settings.uid = cf.new_uid()
            changed = True
        seen.add(settings.uid)
    return changed


def ensure_uids(scene: bpy.types.Scene) -> bool:
    """Ids for the scene and its simulated objects, so cache names survive saving, reopening and renames
    (and an interrupted bake of a saved file can resume in a new session). True if any id was new."""
    changed = not scene_bake(scene).uid
    ensure_scene_uid(scene)
    return _ensure_object_uids([o for o in scene.objects if _role(o) != "NONE"]) or changed


# ------------------------------------------------------------------------------------------------------
# Writing outputs into Blender data (and undoing them)


def _restore_info(obj: bpy.types.Object) -> dict[str, Any]:
    text = object_bake(obj).restore
    if not text:
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _set_restore_info(obj: bpy.types.Object, data: dict[str, Any]) -> None:
    object_bake(obj).restore = json.dumps(data, sort_keys=True) if data else ""


def _add_mesh_cache(obj: bpy.types.Object, filepath: str, frame_start: int, position: str) -> str:
    """Add a Mesh Cache modifier playing ``filepath`` (PC2); position FIRST, LAST or BEFORE_NODES."""
    modifier = as_type(obj.modifiers.new(MODIFIER_NAME, "MESH_CACHE"), bpy.types.MeshCacheModifier)
    modifier.cache_format = "PC2"
    modifier.filepath = filepath
    modifier.time_mode = "FRAME"
    modifier.play_mode = "SCENE"
    modifier.frame_start = float(frame_start)
    modifier.frame_scale = 1.0
    modifier.interpolation = "LINEAR"
    modifier.deform_mode = "OVERWRITE"
    modifier.forward_axis = "POS_Y"
    modifier.up_axis = "POS_Z"
    modifier.factor = 1.0
    last = len(obj.modifiers) - 1
    if position == "FIRST":
        target = 0
    elif position == "BEFORE_NODES":
        target = next((i for i, m in enumerate(obj.modifiers) if m.type == "NODES"), last)
    else:
        target = last
    if target != last:
        obj.modifiers.move(last, target)
    return str(modifier.name)


def apply_pc2(obj: bpy.types.Object, filepath: str, frame_start: int, position: str) -> dict[str, Any]:
    name = _add_mesh_cache(obj, filepath, frame_start, position)
    return {"modifier": name, "filepath": filepath}


def apply_shape_keys(
    obj: bpy.types.Object, samples: Callable[[int], np.ndarray], n_frames: int, frame_start: int
) -> dict[str, Any]:
    """One absolute shape key per frame, ``eval_time`` keyframed so frame f shows exactly its key."""
    mesh = mesh_of(obj)
    if mesh.shape_keys is not None:
        raise RuntimeError(f"{obj.name!r} already has shape keys; choose the Point Cache output")
    obj.shape_key_add(name=SHAPE_KEY_PREFIX + "Basis", from_mix=False)
    key = mesh.shape_keys
    assert key is not None
    key.use_relative = False
    for i in range(n_frames):
        block = obj.shape_key_add(name=f"{SHAPE_KEY_PREFIX}Frame {frame_start + i}", from_mix=False)
        block.points.foreach_set("co", np.ascontiguousarray(samples(i), dtype=np.float32).reshape(-1))
        block.value = 0.0
    key_frames = np.array([kb.frame for kb in key.key_blocks[1:]], dtype=np.float32)
    action, created = _new_action(key, f"{ACTION_PREFIX}{obj.name} Shape")
    fcurve = _ensure_fcurve(action, key, "eval_time")
    _set_keyframes(fcurve, np.arange(frame_start, frame_start + n_frames, dtype=np.float32), key_frames)
    key.eval_time = float(key_frames[0])
    return {"action": action.name, "created_anim": created}


def read_shape_keys(obj: bpy.types.Object) -> list[np.ndarray]:
    key = mesh_of(obj).shape_keys
    if key is None:
        raise RuntimeError(f"{obj.name!r} has no shape keys (its shape-key bake was removed)")
    out = []
    for block in key.key_blocks[1:]:
        flat = np.empty(len(block.points) * 3, dtype=np.float32)
        block.points.foreach_get("co", flat)
        out.append(flat.reshape(-1, 3))
    return out


_TRANSFORM_PROPS = ("location", "rotation_quaternion", "rotation_euler", "rotation_axis_angle", "scale")


def apply_keyframes(obj: bpy.types.Object, values: np.ndarray, frame_start: int) -> dict[str, Any]:
    """``location`` + ``rotation_quaternion`` keyframes from (F, 7) float32 rows (loc xyz, quat wxyz)."""
    anim = obj.animation_data
    if anim is not None and anim.action is not None:
        raise RuntimeError(f"{obj.name!r} is already animated; choose the Point Cache output")
    info: dict[str, Any] = {"rotation_mode": obj.rotation_mode}
    for prop in _TRANSFORM_PROPS:
        info[prop] = [float(v) for v in getattr(obj, prop)]
    obj.rotation_mode = "QUATERNION"
    action, created = _new_action(obj, f"{ACTION_PREFIX}{obj.name}")
    frames = np.arange(frame_start, frame_start + len(values), dtype=np.float32)
    for index in range(3):
        _set_keyframes(_ensure_fcurve(action, obj, "location", index), frames, values[:, index])
    for index in range(4):
        _set_keyframes(
            _ensure_fcurve(action, obj, "rotation_quaternion", index), frames, values[:, 3 + index]
        )
    obj.location = [float(v) for v in values[0, :3]]
    obj.rotation_quaternion = [float(v) for v in values[0, 3:7]]
    info.update({"action": action.name, "created_anim": created})
    return info


def read_keyframes(obj: bpy.types.Object) -> np.ndarray:
    anim = obj.animation_data
    action = anim.action if anim is not None else None
    if action is None:
        raise RuntimeError(f"{obj.name!r} has no action (its keyframe bake was removed)")
    columns = [_get_keyframe_values(_find_fcurve(action, obj, "location", i)) for i in range(3)]
    columns += [_get_keyframe_values(_find_fcurve(action, obj, "rotation_quaternion", i)) for i in range(4)]
    return np.stack(columns, axis=1)


def free_object(obj: bpy.types.Object) -> None:
    """Remove what the bake added to ``obj`` and put back what it changed (files are left alone)."""
    settings = object_bake(obj)
    output, info = settings.baked_output, _restore_info(obj)
    if not output:
        return
    name = info.get("modifier")
    if name:
        modifier = obj.modifiers.get(name)
        if modifier is not None and modifier.type == "MESH_CACHE":
            obj.modifiers.remove(modifier)
    if output == "SHAPE_KEYS":
        key = mesh_of(obj).shape_keys if obj.type == "MESH" else None
        if key is not None:
            _remove_action(key, info.get("action", ""), bool(info.get("created_anim")))
            obj.shape_key_clear()
    elif output == "KEYFRAMES":
        _remove_action(obj, info.get("action", ""), bool(info.get("created_anim")))
        obj.rotation_mode = info.get("rotation_mode", obj.rotation_mode)
        for prop in _TRANSFORM_PROPS:
            if prop in info:
                setattr(obj, prop, info[prop])
    settings.baked_output = ""
    _set_restore_info(obj, {})


def baked_objects(scene: bpy.types.Scene) -> list[bpy.types.Object]:
    return [o for o in scene.objects if object_bake(o).baked_output]


def _cache_files_of(obj: bpy.types.Object, folder: Path) -> list[Path]:
    uid = object_bake(obj).uid
    if not uid:
        return []
    try:
        return [cf.cache_file(folder, uid, ".pc2"), cf.cache_file(folder, uid, ".json")]
    except cf.CacheError:
        return []


def free_bake(scene: bpy.types.Scene, delete_files: bool = True) -> int:
    """Undo the scene's bake on every object (and delete its cache files); returns objects freed."""
    state = scene_bake(scene)
    objects = baked_objects(scene)
    folder = Path(_abspath(state.cache_folder)) if state.cache_folder else None
    for obj in objects:
        free_object(obj)
        if delete_files and folder is not None:
            cf.remove_files(_cache_files_of(obj, folder))
    if delete_files and folder is not None:
        cf.remove_tree(folder / (STAGING_PREFIX + ensure_scene_uid(scene)))
        cf.remove_dir_if_empty(folder)
    state.baked = False
    state.settings_hash = ""
    state.bake_id = ""
    state.status = "Bake freed" if objects else ""
    state.error = ""
    scene_settings(scene).is_baked = False
    _simulation_invalidate(scene)
    return len(objects)


def _simulation_invalidate(scene: bpy.types.Scene) -> None:
    with contextlib.suppress(Exception):
        from . import simulation

        simulation.invalidate(scene, None)


# ------------------------------------------------------------------------------------------------------
# Checking a bake against its cache files (stale / mismatched caches)


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
    folder = Path(_abspath(state.cache_folder)) if state.cache_folder else None
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
        if pc2 is not None and obj.type == "MESH" and sidecar.get("kind") in ("CLOTH", "GRANULAR"):
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
        _report(f"scene {scene.name!r}: {state.error}")
    elif state.error.startswith("Bake cache problem"):
        state.error = ""
    return problems


@persistent
def _on_save_pre(*_args: Any) -> None:
    for scene in bpy.data.scenes:
        if getattr(scene, "unified_particles_bake", None) is not None:
            with contextlib.suppress(Exception):
                ensure_uids(scene)


@persistent
def _on_load_post(*_args: Any) -> None:
    for scene in bpy.data.scenes:
        state = getattr(scene, "unified_particles_bake", None)
        if state is None:
            continue
        if state.is_baking:
            state.is_baking = False  # saved while a bake ran (or it crashed): the bake can be resumed
        if state.baked:
            with contextlib.suppress(Exception):
                report_bake_problems(scene)


# ------------------------------------------------------------------------------------------------------
# Where the motion comes from


@dataclasses.dataclass
class SourceEntry:
    """One baked body: ``kind`` RIGID/CLOTH/GRANULAR, the object, and the object receiving the motion."""

    kind: str
    name: str
    target: str
    handle: Any = None


class LiveSource:
    """Motion from the live simulation runner (:mod:`.simulation`); other sources may replace it in tests.

    ``sample`` returns world-space vertex positions (cloth, granular: (N, 3)) or the rigid object's world
    matrix (4, 4) at the frame the runner is at.
    """

    def __init__(self, scene: bpy.types.Scene) -> None:
        from . import simulation

        self.scene_name = scene.name
        self.sim: Any = simulation.get_simulation(scene)
        self.animated = False

    def build(self, scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph) -> list[SourceEntry]:
        self.sim.build(scene, depsgraph)
        self.animated = any(getattr(e, "animated", False) for e in self.sim.entries)
        return [SourceEntry(e.kind, e.name, e.target, e) for e in self.sim.entries if e.kind in BAKED_ROLES]

    def advance(self, scene: bpy.types.Scene, frame: int) -> None:
        if self.animated:
            scene.frame_set(frame)
        self.sim.ensure_frame(scene, frame)

    def sample(self, entry: SourceEntry) -> np.ndarray:
        body = entry.handle.body
        if entry.kind == "RIGID":
            return np.asarray(body.transform, dtype=np.float64) @ entry.handle.rest_matrix
        if entry.kind == "CLOTH":
            return np.asarray(body.vertex_positions, dtype=np.float64)
        return np.asarray(self.sim.world.positions, dtype=np.float64)[body.indices]

    def state(self) -> Any:
        return self.sim.world.state()

    def restore(self, frame: int, state: Any) -> None:
        """Continue from ``state`` at ``frame`` (a snapshot of an interrupted bake)."""
        sim = self.sim
        world = sim.world
        world.set_state(cf.arrays_to_state(world.state(), state) if isinstance(state, dict) else state)
        adopt = getattr(sim, "adopt_state", None)
        if callable(adopt):
            adopt(frame, world.state())
            return
        # The runner keeps one state per frame; make the restored one the only (latest) cached frame.
        for name in ("cache", "cache_sizes", "collider_cache"):
            table = getattr(sim, name, None)
            if isinstance(table, dict):
                table.clear()
        sim.cache[frame] = world.state()
        if isinstance(getattr(sim, "cache_sizes", None), dict):
            sim.cache_sizes[frame] = 0

    def close(self, scene: bpy.types.Scene) -> None:
        from . import simulation

        simulation.free_simulation(scene)


SOURCE_FACTORY: Callable[[bpy.types.Scene], Any] = LiveSource
"""Makes the motion source of a bake (tests swap it to inject failures)."""


# ------------------------------------------------------------------------------------------------------
# The bake job: build, step frame by frame into staging files, then commit


class BakeCancelled(Exception):
    pass


@dataclasses.dataclass
class _Target:
    entry: SourceEntry
    obj: bpy.types.Object  # the simulated object
    write_obj: bpy.types.Object  # the object that gets the output (granular: the particle object)
    output: str
    uid: str
    n_points: int
    to_local: np.ndarray  # world -> write_obj local (PC2 of cloth/granular)
    rigid_vertices: np.ndarray | None = None  # rigid PC2: evaluated local vertices at build
    parent_inverse: np.ndarray | None = None  # rigid keyframes: inverse of (parent world @ parent inverse)
    scale: np.ndarray | None = None
    previous_quat: np.ndarray | None = None
    writer: cf.PC2Writer | None = None

    @property
    def kind(self) -> str:
        return self.entry.kind


def _capture(obj: bpy.types.Object) -> dict[str, Any]:
    """What building the simulation may change on an object (undone after the bake)."""
    data: dict[str, Any] = {"matrix_basis": [list(r) for r in obj.matrix_basis.row]}
    settings = getattr(obj, "unified_particles", None)
    if settings is not None and hasattr(settings, "has_rest"):
        data["has_rest"] = bool(settings.has_rest)
        data["rest_matrix"] = list(settings.rest_matrix)
    if obj.type == "MESH":
        mesh = mesh_of(obj)
        data["positions"] = _read_positions(mesh)
        data["attributes"] = {a.name for a in mesh.attributes}
        if not len(mesh.edges) and not len(mesh.polygons):
            # A point mesh (a granular particle object) is rebuilt when the grain count changes.
            data["point_attributes"] = _point_attributes(mesh)
    return data


def _point_attributes(mesh: bpy.types.Mesh) -> dict[str, tuple[str, np.ndarray]]:
    out: dict[str, tuple[str, np.ndarray]] = {}
    n = len(mesh.vertices)
    for attr in mesh.attributes:
        if attr.name == "position" or attr.domain != "POINT" or attr.name.startswith("."):
            continue
        if attr.data_type == "FLOAT":
            values = np.empty(n, dtype=np.float32)
            as_type(attr, bpy.types.FloatAttribute).data.foreach_get("value", values)
        elif attr.data_type == "FLOAT_VECTOR":
            values = np.empty(n * 3, dtype=np.float32)
            as_type(attr, bpy.types.FloatVectorAttribute).data.foreach_get("vector", values)
        else:
            continue
        out[attr.name] = (attr.data_type, values)
    return out


def _rebuild_point_mesh(mesh: bpy.types.Mesh, positions: np.ndarray, attributes: dict[str, Any]) -> None:
    mesh.clear_geometry()
    mesh.vertices.add(len(positions))
    for name, (data_type, values) in attributes.items():
        attr = mesh.attributes.get(name) or mesh.attributes.new(name, data_type, "POINT")
        # FLOAT or FLOAT_VECTOR when new; an existing attribute of that name is written as it is.
        cast("bpy.types.FloatAttribute | bpy.types.FloatVectorAttribute", attr).data.foreach_set(
            "value" if data_type == "FLOAT" else "vector", values
        )
    _write_positions(mesh, positions)


def _uncapture(obj: bpy.types.Object, data: dict[str, Any]) -> None:
    if obj.type == "MESH" and "positions" in data:
        mesh = mesh_of(obj)
        for attribute in [a.name for a in mesh.attributes if a.name not in data["attributes"]]:
            mesh.attributes.remove(mesh.attributes[attribute])
        same_count = len(mesh.vertices) == len(data["positions"])
        if not same_count and "point_attributes" in data and not len(mesh.edges) and not len(mesh.polygons):
            _rebuild_point_mesh(mesh, data["positions"], data["point_attributes"])
        elif same_count and not np.array_equal(_read_positions(mesh), data["positions"]):
            _write_positions(mesh, data["positions"])
    from mathutils import Matrix

    if [list(r) for r in obj.matrix_basis.row] != data["matrix_basis"]:
        obj.matrix_basis = Matrix(data["matrix_basis"])
    settings = getattr(obj, "unified_particles", None)
    if "has_rest" in data and settings is not None:
        settings.has_rest = data["has_rest"]
        settings.rest_matrix = data["rest_matrix"]


class BakeJob:
    """One bake of a scene's frame range. Drive with :meth:`begin`, :meth:`step` until it returns True,
    then :meth:`finish`; :meth:`cancel` at any point keeps the previous bake. :func:`bake_scene` runs it
    blocking; the operator runs it from a timer."""

    def __init__(
        self,
        scene: bpy.types.Scene,
        frame_start: int | None = None,
        frame_end: int | None = None,
        source_factory: Callable[[bpy.types.Scene], Any] | None = None,
    ) -> None:
        self.scene = scene
        self.frame_start = int(scene.frame_start if frame_start is None else frame_start)
        self.frame_end = int(scene.frame_end if frame_end is None else frame_end)
        self.source_factory = source_factory or SOURCE_FACTORY
        self.frame = self.frame_start - 1  # last frame written
        self.resumed_from: int | None = None
        self.warning = ""
        self.targets: list[_Target] = []
        self.started = 0.0
        self.frames_stepped = 0
        self._stash: dict[str, dict[str, Any]] = {}
        self._captured: dict[str, dict[str, Any]] = {}
        self._source: Any = None
        self._done = False
        self._pause: contextlib.ExitStack | None = None
        self._original_frame = int(scene.frame_current)
        self.initial_fingerprint = ""

    # ----------------------------------------------------------------------------------- info
    @property
    def total(self) -> int:
        return self.frame_end - self.frame_start + 1

    @property
    def done_frames(self) -> int:
        return self.frame - self.frame_start + 1

    def status_text(self) -> str:
        done = self.done_frames
        text = f"Baking frame {max(self.frame, self.frame_start)} of {self.frame_start}-{self.frame_end}"
        if self.frames_stepped > 0:
            per_frame = (time.perf_counter() - self.started) / self.frames_stepped
            left = per_frame * (self.total - done)
            text += f", time left {_format_seconds(left)}"
        return text + " (Esc to cancel)"

    # ------------------------------------------------------------------------------- paths
    def _paths(self) -> None:
        self.folder, self.blend_folder, self.warning = cache_folder(self.scene)
        self.staging = self.folder / (STAGING_PREFIX + ensure_scene_uid(self.scene))
        self.stash_dir = self.staging / "stash"
        self.progress_path = self.staging / "progress.json"
        self.snapshot_path = self.staging / "snapshot.npz"

    def _stream_path(self, target: _Target) -> Path:
        return cf.cache_file(self.staging, target.uid, ".stream")

    # -------------------------------------------------------------------------------- begin
    def begin(self) -> None:
        scene = self.scene
        if self.frame_end < self.frame_start:
            raise RuntimeError(f"Frame range {self.frame_start}-{self.frame_end} is empty")
        if scene_bake(scene).is_baking:
            raise RuntimeError("A bake of this scene is already running")
        candidates = [o for o in scene.objects if _role(o) in BAKED_ROLES]
        if not candidates:
            raise RuntimeError("Nothing to bake: make objects Rigid, Cloth or Granular first")
        for obj in candidates:
            baked, output = object_bake(obj).baked_output, bake_output(obj)
            keys = mesh_of(obj).shape_keys if obj.type == "MESH" else None
            if (
                _role(obj) == "CLOTH"
                and output == "SHAPE_KEYS"
                and keys is not None
                and baked != "SHAPE_KEYS"
            ):
                raise RuntimeError(f"Cloth {obj.name!r} has shape keys; choose the Point Cache output")
            animated = obj.animation_data is not None and obj.animation_data.action is not None
            if _role(obj) == "RIGID" and output == "KEYFRAMES" and animated and baked != "KEYFRAMES":
                raise RuntimeError(f"Rigid {obj.name!r} is already animated; choose the Point Cache output")
        self._paths()
        ensure_uids(scene)
        _adopt_start_pose(scene)
        self.settings_hash = current_settings_hash(scene, self.frame_start, self.frame_end)
        scene_bake(scene).is_baking = True
        self._pause = contextlib.ExitStack()
        try:
            self._pause.enter_context(_paused(scene))
            self._stash_previous_bake()
            for obj in self._touched_objects():
                self._captured[obj.name] = _capture(obj)
            self._build()
            self.initial_fingerprint = _fingerprint(self._source.state())
            if not self._try_resume():
                self._start_fresh()
        except BaseException as exc:
            self.cancel(error=_error_message(exc))
            raise
        self.started = time.perf_counter()

    def _touched_objects(self) -> list[bpy.types.Object]:
        objects = [o for o in self.scene.objects if _role(o) != "NONE"]
        for obj in list(objects):
            particle = getattr(object_settings(obj), "particle_object", None)
            if particle is not None:
                objects.append(particle)
        return objects

    def _stash_previous_bake(self) -> None:
        """Take the previous bake out of the objects (kept in the stash) so the build sees the originals."""
        state = scene_bake(self.scene)
        if not state.baked and not baked_objects(self.scene):
            return
        self.stash_dir.mkdir(parents=True, exist_ok=True)
        for obj in baked_objects(self.scene):
            settings = object_bake(obj)
            info = {"output": settings.baked_output, "restore": _restore_info(obj)}
            if settings.baked_output == "SHAPE_KEYS":
                keys = read_shape_keys(obj)
                path = cf.cache_file(self.stash_dir, settings.uid, ".pc2")
                with cf.PC2Writer(path, len(keys[0]) if keys else 0) as writer:
                    for sample in keys:
                        writer.write(sample)
                info["stream"] = str(path)
            elif settings.baked_output == "KEYFRAMES":
                path = cf.cache_file(self.stash_dir, settings.uid, ".npy")
                np.save(path, read_keyframes(obj), allow_pickle=False)
                info["stream"] = str(path)
            free_object(obj)
            self._stash[obj.name] = info

    def _unstash(self) -> None:
        """Put the previous bake back exactly as it was (after a cancel or a failure)."""
        state = scene_bake(self.scene)
        for name, info in self._stash.items():
            obj = bpy.data.objects.get(name)
            if obj is None:
                continue
            output, restore = info["output"], info["restore"]
            try:
                if output == "SHAPE_KEYS":
                    _, samples = cf.read_pc2(info["stream"])
                    new = apply_shape_keys(obj, samples.__getitem__, len(samples), state.frame_start)
                elif output == "KEYFRAMES":
                    values = np.load(info["stream"], allow_pickle=False)
                    new = apply_keyframes(obj, values, state.frame_start)
                else:
                    position = restore.get("position", "LAST")
                    new = apply_pc2(obj, restore["filepath"], state.frame_start, position)
                    new["position"] = position
                for key in ("rotation_mode", *_TRANSFORM_PROPS):
                    if key in restore:
                        new[key] = restore[key]
            except Exception as exc:  # keep going: restore as much of the old bake as possible
                _report(f"could not restore the previous bake of {name!r}: {exc}")
                continue
            object_bake(obj).baked_output = output
            _set_restore_info(obj, new)
        self._stash.clear()
        cf.remove_tree(self.stash_dir)

    def _build(self) -> None:
        scene = self.scene
        scene.frame_set(scene.frame_start)  # the simulation starts there (animated colliders' poses)
        depsgraph = bpy.context.evaluated_depsgraph_get()
        self._source = self.source_factory(scene)
        entries = self._source.build(scene, depsgraph)
        depsgraph = bpy.context.evaluated_depsgraph_get()
        self.targets = []
        for entry in entries:
            obj = bpy.data.objects[entry.name]
            write_obj = bpy.data.objects[entry.target]
            output = bake_output(obj)
            if entry.kind == "GRANULAR":
                object_bake(write_obj).uid = object_bake(obj).uid
            uid = object_bake(write_obj).uid or object_bake(obj).uid
            matrix = _matrix(write_obj.matrix_world)
            target = _Target(entry, obj, write_obj, output, uid, 0, np.linalg.inv(matrix))
            if entry.kind == "RIGID":
                if output == "PC2":
                    target.rigid_vertices = _evaluated_local_positions(obj, depsgraph)
                    target.n_points = len(target.rigid_vertices)
                else:
                    target.n_points = 3  # 9 floats per frame: location (3), quaternion (4), padding (2)
                    parent = np.eye(4)
                    if obj.parent is not None:
                        parent = _matrix(obj.parent.matrix_world) @ _matrix(obj.matrix_parent_inverse)
                    target.parent_inverse = np.linalg.inv(parent)
                    target.scale = np.array(obj.scale, dtype=np.float64)
            else:
                target.n_points = len(mesh_of(write_obj).vertices)
            self.targets.append(target)

    # ----------------------------------------------------------------------- resume support
    def _progress(self) -> dict[str, Any]:
        return {
            "format_version": cf.FORMAT_VERSION,
            "settings_hash": self.settings_hash,
            "frame_start": self.frame_start,
            "frame_end": self.frame_end,
            "targets": [[t.uid, t.kind, t.output, t.n_points] for t in self.targets],
            "initial_state": self.initial_fingerprint,
        }

    def _try_resume(self) -> bool:
        try:
            progress = cf.read_json(self.progress_path)
            meta, arrays = cf.load_snapshot(self.snapshot_path)
        except cf.CacheError:
            return False
        if {k: progress.get(k) for k in self._progress()} != self._progress():
            return False
        frame = int(meta.get("frame", self.frame_start - 1))
        if not self.frame_start <= frame < self.frame_end or progress.get("last_frame") != frame:
            return False
        keep = frame - self.frame_start + 1
        try:
            for target in self.targets:
                target.writer = cf.PC2Writer(
                    self._final_pc2(target),
                    target.n_points,
                    self.frame_start,
                    partial_path=self._stream_path(target),
                    keep_samples=keep,
                )
                if target.kind == "RIGID" and target.output == "KEYFRAMES":
                    last = cf.read_pc2_frame(target.writer.partial_path, keep - 1).reshape(-1)
                    target.previous_quat = last[3:7].astype(np.float64)
            self._source.restore(frame, arrays)
        except (cf.CacheError, OSError, ValueError) as exc:
            _report(f"cannot resume the interrupted bake ({exc}); starting again")
            for target in self.targets:
                if target.writer is not None:
                    target.writer.discard()
                    target.writer = None
            return False
        self.frame = frame
        self.resumed_from = frame
        return True

    def _start_fresh(self) -> None:
        for path in (self.progress_path, self.snapshot_path):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        self.staging.mkdir(parents=True, exist_ok=True)
        for stale in self.staging.glob("*.stream"):
            stale.unlink()
        for target in self.targets:
            target.writer = cf.PC2Writer(
                self._final_pc2(target),
                target.n_points,
                self.frame_start,
                partial_path=self._stream_path(target),
            )
        # The runner starts at the scene's start frame: a later bake start includes the lead-in frames.
        self._source.advance(self.scene, self.frame_start)
        self._write_frame(self.frame_start)

    def _final_pc2(self, target: _Target) -> Path:
        if target.output == "PC2":
            return cf.cache_file(self.folder, target.uid, ".pc2")
        return cf.cache_file(self.staging, target.uid, ".done")

    # -------------------------------------------------------------------------------- frames
    def _sample(self, target: _Target) -> np.ndarray:
        value = self._source.sample(target.entry)
        if target.kind == "RIGID":
            matrix = np.asarray(value, dtype=np.float64).reshape(4, 4)
            if target.output == "PC2":
                assert target.rigid_vertices is not None
                return _transform(target.to_local @ matrix, target.rigid_vertices)
            assert target.parent_inverse is not None
            assert target.scale is not None
            basis = target.parent_inverse @ matrix
            rotation = basis[:3, :3] / target.scale[None, :]
            quat = quaternion_from_matrix(rotation)
            if target.previous_quat is not None and float(np.dot(quat, target.previous_quat)) < 0.0:
                quat = -quat  # same rotation, kept in the previous one's hemisphere (no flips when blending)
            target.previous_quat = quat.astype(np.float32).astype(np.float64)  # as stored (resume)
            row = np.zeros(9, dtype=np.float64)
            row[:3], row[3:7] = basis[:3, 3], quat
            return row.reshape(3, 3)
        return _transform(target.to_local, value)

    def _write_frame(self, frame: int) -> None:
        for target in self.targets:
            assert target.writer is not None
            target.writer.write(self._sample(target))
        for target in self.targets:
            assert target.writer is not None
            target.writer.flush()
        self.frame = frame
        cf.save_snapshot(self.snapshot_path, self._source.state(), {"frame": frame})
        cf.write_json(self.progress_path, {**self._progress(), "last_frame": frame})

    def step(self) -> bool:
        """Simulate and write the next frame; True once every frame is written."""
        if self.frame >= self.frame_end:
            return True
        frame = self.frame + 1
        self._source.advance(self.scene, frame)
        self._write_frame(frame)
        self.frames_stepped += 1
        return self.frame >= self.frame_end

    # ------------------------------------------------------------------------ end of a bake
    def _close_source(self) -> None:
        if self._source is not None and hasattr(self._source, "close"):
            with contextlib.suppress(Exception):
                self._source.close(self.scene)
        self._source = None

    def _restore_objects(self) -> None:
        for name, data in self._captured.items():
            obj = bpy.data.objects.get(name)
            if obj is not None:
                _uncapture(obj, data)
        self._captured.clear()

    def _end(self) -> None:
        state = scene_bake(self.scene)
        state.is_baking = False
        if self._pause is not None:
            self._pause.close()
            self._pause = None
        if int(self.scene.frame_current) != self._original_frame:
            with _paused(self.scene):
                self.scene.frame_set(self._original_frame)

    def cancel(self, error: str = "") -> None:
        """Stop; keep the partial streams and last snapshot (for resuming) and the previous bake."""
        if self._done:
            return
        self._done = True
        for target in self.targets:
            if target.writer is not None:
                with contextlib.suppress(Exception):
                    target.writer.close(commit=False)
        self._close_source()
        self._restore_objects()
        self._unstash()
        state = scene_bake(self.scene)
        if self.frame >= self.frame_start:
            where = f"after frame {self.frame}; bake again to continue from there"
        else:
            where = "before the first frame"
        state.status = f"Bake {'failed' if error else 'cancelled'} {where}. The previous bake is unchanged"
        state.error = error
        self._end()

    def finish(self) -> None:
        """All frames written: move the files in place and write the outputs into the objects."""
        if self._done:
            return
        if self.frame < self.frame_end:
            raise RuntimeError("finish() before the last frame")
        self._done = True
        scene, state = self.scene, scene_bake(self.scene)
        # The sidecars are the only new disk space needed from here on: write them into the staging folder
        # before anything is replaced, so a full disk now keeps the previous bake, exactly like a cancel.
        bake_id = cf.new_uid()
        sidecars: list[tuple[Path, Path]] = []
        try:
            for target in self.targets:
                sidecar = cf.make_sidecar(
                    uid=target.uid,
                    kind=target.kind,
                    output=target.output,
                    frame_start=self.frame_start,
                    frame_end=self.frame_end,
                    n_points=target.n_points,
                    settings=self.settings_hash,
                    object_name=target.obj.name,
                    extra={"bake_id": bake_id, "blender": bpy.app.version_string},
                )
                staged = cf.cache_file(self.staging, target.uid, ".json")
                cf.write_json(staged, sidecar)
                sidecars.append((staged, cf.cache_file(self.folder, target.uid, ".json")))
        except BaseException as exc:
            self._done = False
            self.cancel(error=_error_message(exc))
            raise
        try:
            self._close_source()
            self._restore_objects()
            old_folder = Path(_abspath(state.cache_folder)) if state.cache_folder else None
            old_files: list[Path] = []
            if old_folder is not None:
                for name in self._stash:
                    obj = bpy.data.objects.get(name)
                    if obj is not None:
                        old_files += _cache_files_of(obj, old_folder)
            for target in self.targets:
                assert target.writer is not None
                target.writer.close(commit=True)
            for target in self.targets:
                self._apply(target)
            for staged, final in sidecars:
                os.replace(staged, final)
            # Files of the previous bake that this bake did not overwrite.
            new_files = {cf.cache_file(self.folder, t.uid, ".json") for t in self.targets}
            new_files |= {
                cf.cache_file(self.folder, t.uid, ".pc2") for t in self.targets if t.output == "PC2"
            }
            cf.remove_files([path for path in old_files if path not in new_files])
            self._stash.clear()
            state.baked = True
            state.frame_start, state.frame_end = self.frame_start, self.frame_end
            state.settings_hash = self.settings_hash
            state.bake_id = bake_id
            state.cache_folder = self.blend_folder
            scene_settings(scene).is_baked = True
            state.error = ""
            state.status = f"Baked frames {self.frame_start}-{self.frame_end} ({len(self.targets)} objects)"
            if self.warning:
                state.status += ". " + self.warning
            cf.remove_tree(self.staging)
        except BaseException as exc:
            state.error = f"Bake failed while writing its outputs: {exc}"
            raise
        finally:
            self._end()

    def _apply(self, target: _Target) -> None:
        obj = target.write_obj
        if target.output == "PC2":
            position = {"CLOTH": "FIRST", "GRANULAR": "BEFORE_NODES"}.get(target.kind, "LAST")
            filepath = _blend_path(self.blend_folder, target.uid + ".pc2")
            info = apply_pc2(obj, filepath, self.frame_start, position)
            info["position"] = position
        else:
            stream = self._final_pc2(target)
            if target.output == "SHAPE_KEYS":
                info = apply_shape_keys(
                    obj, lambda i: cf.read_pc2_frame(stream, i), self.total, self.frame_start
                )
            else:
                _, rows = cf.read_pc2(stream)
                info = apply_keyframes(obj, rows.reshape(self.total, 9)[:, :7], self.frame_start)
            with contextlib.suppress(FileNotFoundError):
                stream.unlink()
        object_bake(obj).baked_output = target.output
        _set_restore_info(obj, info)


def _adopt_start_pose(scene: bpy.types.Scene) -> None:
    """At the start frame, what the user sees is the rest pose (as in the live simulation): a rigid object
    moved or a cloth edited there since the simulation last showed it is baked from where it is now."""
    if scene_settings(scene).is_baked or scene.frame_current != scene.frame_start:
        return
    try:
        from .properties import REST_ATTRIBUTE
    except ImportError:
        return
    view_layer = bpy.context.view_layer if bpy.context.scene == scene else scene.view_layers[0]
    if view_layer is not None:
        view_layer.update()  # matrix_world of objects moved since the last evaluation
    for obj in scene.objects:
        role, settings = _role(obj), object_settings(obj)
        if role == "RIGID" and getattr(settings, "has_rest", False):
            current = _matrix(obj.matrix_world)
            rest = np.asarray(settings.rest_matrix, dtype=np.float64).reshape(4, 4)
            if not np.allclose(current, rest, rtol=1e-5, atol=1e-6):
                settings.rest_matrix = current.reshape(-1).tolist()
        elif role == "CLOTH" and obj.type == "MESH":
            mesh = mesh_of(obj)
            found = mesh.attributes.get(REST_ATTRIBUTE)
            n = len(mesh.vertices)
            if found is None or found.domain != "POINT" or found.data_type != "FLOAT_VECTOR":
                continue
            attr = as_type(found, bpy.types.FloatVectorAttribute)
            if len(attr.data) != n:
                continue
            rest32 = np.empty(n * 3, dtype=np.float32)
            attr.data.foreach_get("vector", rest32)
            current32 = _read_positions(mesh).reshape(-1)
            if not np.allclose(current32, rest32, rtol=1e-5, atol=1e-6):
                attr.data.foreach_set("vector", current32)


def _fingerprint(state: Any) -> str:
    """Hash of a solver state: a resumed bake must start from the same build (geometry, settings)."""
    digest = hashlib.sha256()
    for name, array in sorted(cf.state_to_arrays(state).items()):
        digest.update(name.encode())
        digest.update(str(array.dtype).encode() + str(array.shape).encode())
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


@contextlib.contextmanager
def _paused(scene: bpy.types.Scene) -> Iterator[None]:
    """Keep the live frame handler away from ``scene`` (if the runner offers that)."""
    try:
        from . import simulation

        pause = simulation.paused
    except (ImportError, AttributeError):
        yield
        return
    with pause(scene):
        yield


def _format_seconds(seconds: float) -> str:
    seconds = max(0, round(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h {seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m {seconds % 60:02d}s"
    return f"{seconds}s"


def bake_scene(
    scene: bpy.types.Scene,
    frame_start: int | None = None,
    frame_end: int | None = None,
    *,
    progress: Callable[[BakeJob], None] | None = None,
    source_factory: Callable[[bpy.types.Scene], Any] | None = None,
) -> BakeJob:
    """Bake ``scene`` blocking (scripts, render farms). Raises on failure; the previous bake stays."""
    job = BakeJob(scene, frame_start, frame_end, source_factory)
    job.begin()
    try:
        while not job.step():
            if progress is not None:
                progress(job)
    except BaseException as exc:
        job.cancel(error=_error_message(exc))
        raise
    job.finish()
    return job


# ------------------------------------------------------------------------------------------------------
# Operators


def _error_message(exc: BaseException) -> str:
    try:
        from ..core import SimulationInputError

        if isinstance(exc, (SimulationInputError, RuntimeError, cf.CacheError)):
            return str(exc)
    except ImportError:
        pass
    if isinstance(exc, OSError):
        return _os_error_message(exc)
    return f"{type(exc).__name__}: {exc}"


def _os_error_message(exc: OSError) -> str:
    """What a file-system error means for the user's bake, and what to do."""
    import errno

    where = exc.filename or "the cache folder"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return (
            f"The disk is full (writing {where}). Free some space or choose a Cache Folder on another "
            "disk, then bake again. The previous bake is unchanged"
        )
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"No permission to write {where}: choose another Cache Folder (Bake panel) and bake again"
    if exc.errno in (errno.ENOTDIR, errno.EEXIST, errno.EISDIR):
        return (
            f"Cannot create {where}: it, or a folder above it, is a file, not a folder. "
            "Choose another Cache Folder (Bake panel) and bake again"
        )
    return f"Cannot write the bake cache ({exc.strerror or exc} at {where}): check the Cache Folder"


def _window_manager(context: bpy.types.Context) -> bpy.types.WindowManager:
    """The context's window manager (Blender always has one; the stubs type it as optional)."""
    wm = context.window_manager
    if wm is None:
        raise RuntimeError("Unified Particles needs a window manager")
    return wm


_PASS_EVENTS = {
    "MOUSEMOVE",
    "INBETWEEN_MOUSEMOVE",
    "MIDDLEMOUSE",
    "WHEELUPMOUSE",
    "WHEELDOWNMOUSE",
    "TRACKPADPAN",
    "TRACKPADZOOM",
    "MOUSEROTATE",
    "NDOF_MOTION",
    "WINDOW_DEACTIVATE",
}


class UNIFIED_PARTICLES_OT_bake(bpy.types.Operator):
    """Simulate the frame range and store it in shape keys, keyframes and point-cache files"""

    bl_idname = "unified_particles.bake"
    bl_label = "Bake"
    bl_options = {"REGISTER", "UNDO"}

    use_custom_range: BoolProperty(  # type: ignore[valid-type]
        name="Custom Range",
        description="Bake frame_start-frame_end instead of the scene's range",
        default=False,
    )
    frame_start: IntProperty(name="Start", default=1)  # type: ignore[valid-type]
    frame_end: IntProperty(name="End", default=250)  # type: ignore[valid-type]

    _job: BakeJob | None = None
    _timer: Any = None

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        scene = context.scene
        if scene is None:
            return False
        if scene_bake(scene).is_baking:
            cls.poll_message_set("A bake is already running")
            return False
        if not any(_role(o) in BAKED_ROLES for o in scene.objects):
            cls.poll_message_set("Nothing to bake: make objects Rigid, Cloth or Granular first")
            return False
        return True

    def _range(self, scene: bpy.types.Scene) -> tuple[int, int]:
        if self.use_custom_range:
            return int(self.frame_start), int(self.frame_end)
        return int(scene.frame_start), int(scene.frame_end)

    def execute(self, context: bpy.types.Context) -> OperatorResult:
        scene = context_scene(context)
        start, end = self._range(scene)
        wm = _window_manager(context)
        wm.progress_begin(0, max(end - start, 1))

        def progress(job: BakeJob) -> None:
            wm.progress_update(job.done_frames)
            if bpy.app.background and (job.done_frames % 10 == 0 or job.frame == job.frame_end):
                print(job.status_text().replace(" (Esc to cancel)", ""), flush=True)

        try:
            job = bake_scene(scene, start, end, progress=progress)
        except Exception as exc:
            message = _error_message(exc)
            scene_bake(scene).error = message
            self.report({"ERROR"}, f"Bake failed: {message}")
            return {"CANCELLED"}
        finally:
            wm.progress_end()
        self._report_done(job)
        return {"FINISHED"}

    def _report_done(self, job: BakeJob) -> None:
        if job.warning:
            self.report({"WARNING"}, job.warning)
        resumed = f" (resumed after frame {job.resumed_from})" if job.resumed_from is not None else ""
        self.report({"INFO"}, f"Baked frames {job.frame_start}-{job.frame_end}{resumed}")

    def invoke(self, context: bpy.types.Context, event: Any) -> OperatorResult:
        if bpy.app.background or context.window is None:
            return self.execute(context)
        scene = context_scene(context)
        start, end = self._range(scene)
        job = BakeJob(scene, start, end)
        try:
            job.begin()
        except Exception as exc:
            message = _error_message(exc)
            scene_bake(scene).error = message
            self.report({"ERROR"}, f"Bake failed: {message}")
            return {"CANCELLED"}
        self._job = job
        wm = _window_manager(context)
        wm.progress_begin(0, max(job.total, 1))
        self._timer = wm.event_timer_add(0.001, window=context.window)
        wm.modal_handler_add(self)
        self._show(context)
        return {"RUNNING_MODAL"}

    def _show(self, context: bpy.types.Context) -> None:
        job = self._job
        if job is None:
            return
        _window_manager(context).progress_update(job.done_frames)
        text = job.status_text()
        scene_bake(job.scene).status = text
        if context.workspace is not None:
            context.workspace.status_text_set(text)

    def cancel(self, context: bpy.types.Context) -> None:
        """Blender ends the operator (a file is loaded, the window closes): keep the previous bake."""
        if self._job is not None:
            with contextlib.suppress(Exception):
                self._job.cancel()
        with contextlib.suppress(Exception):
            self._stop(context)

    def _stop(self, context: bpy.types.Context) -> None:
        wm = _window_manager(context)
        if self._timer is not None:
            wm.event_timer_remove(self._timer)
            self._timer = None
        wm.progress_end()
        if context.workspace is not None:
            context.workspace.status_text_set(None)
        self._job = None

    def modal(self, context: bpy.types.Context, event: Any) -> OperatorResult:
        job = self._job
        if job is None:
            return {"CANCELLED"}
        if event.type == "ESC":
            job.cancel()
            self._stop(context)
            self.report({"WARNING"}, "Bake cancelled; the previous bake is unchanged. Bake again to resume")
            return {"CANCELLED"}
        if event.type != "TIMER":
            # View navigation stays usable; edits, undo and frame changes wait until the bake is done.
            return {"PASS_THROUGH"} if event.type in _PASS_EVENTS else {"RUNNING_MODAL"}
        deadline = time.perf_counter() + 0.1  # stay responsive: at most ~0.1 s of work per event
        try:
            done = job.step()
            while not done and time.perf_counter() < deadline:
                done = job.step()
            if done:
                job.finish()
        except Exception as exc:
            message = _error_message(exc)
            job.cancel(error=message)
            self._stop(context)
            self.report({"ERROR"}, f"Bake failed: {message}")
            return {"CANCELLED"}
        if done:
            self._stop(context)
            self._report_done(job)
            return {"FINISHED"}
        self._show(context)
        return {"RUNNING_MODAL"}


class UNIFIED_PARTICLES_OT_free_bake(bpy.types.Operator):
    """Remove the bake (modifiers, shape keys, keyframes, cache files) and restore the objects"""

    bl_idname = "unified_particles.free_bake"
    bl_label = "Free Bake"
    bl_options = {"REGISTER", "UNDO"}

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        scene = context.scene
        if scene is None:
            return False
        if scene_bake(scene).is_baking:
            cls.poll_message_set("A bake is running")
            return False
        if not scene_bake(scene).baked and not baked_objects(scene):
            cls.poll_message_set("The scene is not baked")
            return False
        return True

    def execute(self, context: bpy.types.Context) -> OperatorResult:
        scene = context_scene(context)
        try:
            count = free_bake(scene)
        except Exception as exc:
            self.report({"ERROR"}, f"Free Bake failed: {_error_message(exc)}")
            return {"CANCELLED"}
        with _paused(scene):
            scene.frame_set(scene.frame_current)
        self.report({"INFO"}, f"Freed the bake of {count} objects")
        return {"FINISHED"}


classes = (
    UNIFIED_PARTICLES_PG_object_bake,
    UNIFIED_PARTICLES_PG_scene_bake,
    UNIFIED_PARTICLES_OT_bake,
    UNIFIED_PARTICLES_OT_free_bake,
)


def register() -> None:
    register_classes(classes)
    bpy.types.Object.unified_particles_bake = PointerProperty(type=UNIFIED_PARTICLES_PG_object_bake)  # type: ignore[attr-defined,func-returns-value]
    bpy.types.Scene.unified_particles_bake = PointerProperty(type=UNIFIED_PARTICLES_PG_scene_bake)  # type: ignore[attr-defined,func-returns-value]
    for attr, func in _HANDLERS:
        handlers = getattr(bpy.app.handlers, attr)
        if func not in handlers:
            handlers.append(func)


_HANDLERS = (("load_post", _on_load_post), ("save_pre", _on_save_pre))


def unregister() -> None:
    for attr, func in _HANDLERS:
        handlers = getattr(bpy.app.handlers, attr)
        for handler in list(handlers):
            # By name too: after a reload Blender may hold a different function object.
            same_name = getattr(handler, "__name__", "") == func.__name__
            if handler is func or (same_name and getattr(handler, "__module__", "") == func.__module__):
                handlers.remove(handler)
    del bpy.types.Scene.unified_particles_bake  # type: ignore[attr-defined]
    del bpy.types.Object.unified_particles_bake  # type: ignore[attr-defined]
    unregister_classes(classes)
