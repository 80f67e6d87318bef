# SPDX-License-Identifier: GPL-3.0-or-later
"""The bake's outputs in Blender data: write them into objects, read them back, and remove them.

* PC2 + Mesh Cache modifier (:func:`apply_pc2`), for cloth, granular points and rigid vertices;
* shape keys, one absolute key per frame with keyframes on ``eval_time`` (:func:`apply_shape_keys`);
* ``location`` + ``rotation_quaternion`` keyframes for rigid objects (:func:`apply_keyframes`).

Each ``apply_*`` returns a JSON-able dict of what it changed, kept in
``object.unified_particles_bake.restore``, so ``bake_marks.free_object`` can undo exactly that (the
bake's names, that record and taking a bake off one object are ``bake_marks``'s, below ``identity``).
:func:`free_bake` undoes the whole scene's bake and deletes its files. Imports ``bake.paths``,
``bake_marks``, ``cachefiles`` and the base modules (``runtime`` to tell the live simulation to rebuild).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bpy
import numpy as np

from .. import cachefiles as cf
from .. import cloth_result, runtime
from ..bake_marks import (
    ACTION_PREFIX,
    MODIFIER_NAME,
    SHAPE_KEY_PREFIX,
    TRANSFORM_PROPS,
    free_object,
    put_back_user_action,
    restore_info,
    set_aside_user_action,
)
from ..rna import as_type, mesh_of, object_bake, scene_bake, scene_settings
from .paths import STAGING_PREFIX, abspath, cache_files_of, cache_folder, ensure_scene_uid, role

_LINEAR = 1  # enum value of 'LINEAR' in Keyframe.interpolation (CONSTANT=0, LINEAR=1, BEZIER=2)
# Keeps the square root's argument positive in quaternion_from_matrix (rounding on a 180 degree turn).
_SQRT_FLOOR = 1e-300


def bake_output(obj: bpy.types.Object) -> str:
    """The output this object's next bake writes (by role and its choice)."""
    kind, choice = role(obj), object_bake(obj)
    if kind == "CLOTH":
        return str(choice.cloth_output)
    if kind == "RIGID":
        return str(choice.rigid_output)
    return "PC2"


def baked_objects(scene: bpy.types.Scene) -> list[bpy.types.Object]:
    """Objects of ``scene`` that carry an output of the current bake."""
    return [o for o in scene.objects if object_bake(o).baked_output]


def quaternion_from_matrix(m: np.ndarray) -> np.ndarray:
    """Unit quaternion (w, x, y, z) of a 3x3 rotation matrix (Shepperd's method: stable for all angles)."""
    m00, m11, m22 = m[0, 0], m[1, 1], m[2, 2]
    trace = m00 + m11 + m22
    k = int(np.argmax([trace, m00, m11, m22]))
    if k == 0:
        s = 2.0 * math.sqrt(max(1.0 + trace, _SQRT_FLOOR))
        q = (0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s)
    elif k == 1:
        s = 2.0 * math.sqrt(max(1.0 + m00 - m11 - m22, _SQRT_FLOOR))
        q = ((m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s)
    elif k == 2:
        s = 2.0 * math.sqrt(max(1.0 + m11 - m00 - m22, _SQRT_FLOOR))
        q = ((m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s)
    else:
        s = 2.0 * math.sqrt(max(1.0 + m22 - m00 - m11, _SQRT_FLOOR))
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


def _add_mesh_cache(obj: bpy.types.Object, filepath: str, frame_start: int, position: str) -> str:
    """Add a Mesh Cache modifier playing ``filepath`` (PC2); position FIRST, LAST, BEFORE_NODES or
    AFTER_CLOTH_RESULT."""
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
    elif position == "AFTER_CLOTH_RESULT":  # a deformed cloth: right after its result modifier
        names = [m.name for m in obj.modifiers]
        target = names.index(cloth_result.MODIFIER_NAME) + 1 if cloth_result.MODIFIER_NAME in names else 0
    else:
        target = last
    if target != last:
        obj.modifiers.move(last, target)
    return str(modifier.name)


def apply_pc2(obj: bpy.types.Object, filepath: str, frame_start: int, position: str) -> dict[str, Any]:
    before = {m.name for m in obj.modifiers}
    try:
        name = _add_mesh_cache(obj, filepath, frame_start, position)
    except BaseException:  # leave the object as it was
        for modifier in [m for m in obj.modifiers if m.name not in before]:
            obj.modifiers.remove(modifier)
        raise
    return {"modifier": name, "filepath": filepath}


def apply_shape_keys(
    obj: bpy.types.Object, samples: Callable[[int], np.ndarray], n_frames: int, frame_start: int
) -> dict[str, Any]:
    """One absolute shape key per frame, ``eval_time`` keyframed so frame f shows exactly its key.

    All or nothing: on a failure the keys and the action made so far are removed again."""
    mesh = mesh_of(obj)
    if mesh.shape_keys is not None:
        raise RuntimeError(f"{obj.name!r} already has shape keys; choose the Point Cache output")
    action: bpy.types.Action | None = None
    try:
        return _add_shape_keys(obj, mesh, samples, n_frames, frame_start)
    except BaseException:
        key = mesh.shape_keys
        anim = key.animation_data if key is not None else None
        if anim is not None and anim.action is not None and anim.action.name.startswith(ACTION_PREFIX):
            action = anim.action
            anim.action = None
        if action is not None and action.users == 0:
            bpy.data.actions.remove(action)
        if key is not None:
            obj.shape_key_clear()
        raise


def _add_shape_keys(
    obj: bpy.types.Object,
    mesh: bpy.types.Mesh,
    samples: Callable[[int], np.ndarray],
    n_frames: int,
    frame_start: int,
) -> dict[str, Any]:
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


def apply_keyframes(obj: bpy.types.Object, values: np.ndarray, frame_start: int) -> dict[str, Any]:
    """``location`` + ``rotation_quaternion`` keyframes from (F, 7) float32 rows (loc xyz, quat wxyz).

    An object with an action of its own (a rigid body with Animated, which follows its keyframes) gets
    the baked action in its place; its own is kept (fake user) and put back by :func:`free_object`."""
    info: dict[str, Any] = {"rotation_mode": obj.rotation_mode}
    for prop in TRANSFORM_PROPS:
        info[prop] = [float(v) for v in getattr(obj, prop)]
    had_anim = obj.animation_data is not None
    set_aside_user_action(obj, info)
    try:
        return _add_keyframes(obj, values, frame_start, info)
    except BaseException:  # all or nothing: put the object back as it was
        anim = obj.animation_data
        action = anim.action if anim is not None else None
        if anim is not None and action is not None and action.name.startswith(ACTION_PREFIX):
            anim.action = None
            if action.users == 0:
                bpy.data.actions.remove(action)
        if not had_anim and obj.animation_data is not None:
            obj.animation_data_clear()
        put_back_user_action(obj, info)
        obj.rotation_mode = info["rotation_mode"]
        for prop in TRANSFORM_PROPS:
            setattr(obj, prop, info[prop])
        raise


def _add_keyframes(
    obj: bpy.types.Object, values: np.ndarray, frame_start: int, info: dict[str, Any]
) -> dict[str, Any]:
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


def _played_folder(scene: bpy.types.Scene) -> Path | None:
    """The folder the scene's Mesh Cache modifiers play (Blender remaps their paths on Save As)."""
    for obj in baked_objects(scene):
        if object_bake(obj).baked_output != "PC2":
            continue
        modifier = obj.modifiers.get(str(restore_info(obj).get("modifier", "")))
        if isinstance(modifier, bpy.types.MeshCacheModifier) and modifier.filepath:
            return Path(abspath(modifier.filepath)).parent
    return None


def baked_folder(scene: bpy.types.Scene) -> tuple[Path | None, bool]:
    """Where the scene's bake files are, and whether they are this file's own (None, False if unbaked).

    The folder is recorded relative to the .blend. After Save As into another folder, Blender remaps the
    Mesh Cache paths (the file plays on the cache next to the file that was baked) but not the recorded
    folder: the files are then that other file's. They are checked and played, but a bake or Free Bake
    here never deletes them (the next bake writes next to this file)."""
    state = scene_bake(scene)
    if not state.cache_folder:
        return None, False
    here = Path(abspath(state.cache_folder))
    if not state.cache_folder.startswith("//"):
        return here, True
    played = _played_folder(scene)
    if played is not None:
        return played, played == here
    # Only keyframes and shape keys: where the sidecars are (next to this file, or where it was baked).
    recorded = Path(state.cache_folder_absolute) if state.cache_folder_absolute else None
    bake_id = str(state.bake_id)
    if (
        recorded is not None
        and recorded != here
        and not bake_files(here, bake_id)
        and bake_files(recorded, bake_id)
    ):
        return recorded, False
    return here, True


def files_in_use(scene: bpy.types.Scene) -> set[Path]:
    """Cache files that bakes other than ``scene``'s use: what any other Mesh Cache modifier of this file
    plays (after ``scene``'s objects were freed), and the files of every other baked scene."""
    used: set[Path] = set()
    for other in bpy.data.scenes:
        for obj in other.objects:
            for modifier in obj.modifiers:
                if not isinstance(modifier, bpy.types.MeshCacheModifier) or not modifier.filepath:
                    continue
                if modifier.name.startswith(MODIFIER_NAME):
                    pc2 = Path(abspath(modifier.filepath))
                    used.update((pc2, pc2.with_suffix(".json")))
        if other == scene or not scene_bake(other).baked:
            continue
        folder, _ = baked_folder(other)
        if folder is None:
            continue
        for obj in baked_objects(other):
            used.update(cache_files_of(obj, folder))
        used.update(bake_files(folder, str(scene_bake(other).bake_id)))
    return used


def bake_files(folder: Path, bake_id: str) -> list[Path]:
    """Every file one bake wrote into ``folder``, found by its sidecars (they name the bake), so the
    files of objects deleted since the bake are found too."""
    if not bake_id:
        return []
    files: list[Path] = []
    for sidecar in sorted(folder.glob("*.json")):
        try:
            data = cf.read_json(sidecar)
            if data.get("format") != "unified_particles.cache" or data.get("bake_id") != bake_id:
                continue
            files += [sidecar, cf.cache_file(folder, str(data.get("uid", "")), ".pc2")]
        except (cf.CacheError, OSError):
            continue  # not one of ours, or unreadable: leave it alone
    return files


def free_bake(scene: bpy.types.Scene, delete_files: bool = True) -> int:
    """Undo the scene's bake on every object and delete its cache files (also those of objects deleted
    since the bake); returns objects freed."""
    state = scene_bake(scene)
    objects = baked_objects(scene)
    folder, own = baked_folder(scene)
    files: list[Path] = []
    for obj in objects:
        if folder is not None:
            files += cache_files_of(obj, folder)
        free_object(obj)
    if delete_files and folder is not None and own:
        # Never the files another scene's bake plays (or another file's: those are not ``own``).
        used = files_in_use(scene)
        files += bake_files(folder, str(state.bake_id))
        cf.remove_files([path for path in files if path not in used])
        cf.remove_tree(folder / (STAGING_PREFIX + ensure_scene_uid(scene)))
        cf.remove_dir_if_empty(folder)
    if delete_files:
        cf.remove_tree(cache_folder(scene)[0] / (STAGING_PREFIX + ensure_scene_uid(scene)))
    state.baked = False
    state.settings_hash = ""
    state.bake_id = ""
    state.cache_folder_absolute = ""
    state.status = "Bake freed" if objects else ""
    state.error = ""
    scene_settings(scene).is_baked = False
    runtime.invalidate(scene, None)
    return len(objects)
