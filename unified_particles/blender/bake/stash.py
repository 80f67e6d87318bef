# SPDX-License-Identifier: GPL-3.0-or-later
"""What a bake keeps so that one which does not commit leaves the objects as it found them.

* :class:`Stash`: the previous bake, taken out of its objects while the new one runs (the build must see
  the objects without it) and kept in files in the staging folder; put back exactly on a cancel or a
  failure, forgotten when the new bake commits.
* :func:`capture` / :func:`uncapture`: what building the simulation may change on an object (its
  transform and rest data, its mesh's positions and attributes, a particle object's points), undone
  after the bake.

Imports ``bake.outputs``, ``bake.staleness``, ``bake_marks``, ``cachefiles`` and the base modules.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import bpy
import numpy as np
from mathutils import Matrix

from .. import cachefiles as cf
from .. import mesh_io
from ..bake_marks import TRANSFORM_PROPS, free_object, restore_info, set_restore_info
from ..rna import mesh_of, object_bake, object_settings, scene_bake
from .outputs import (
    apply_keyframes,
    apply_pc2,
    apply_shape_keys,
    baked_objects,
    read_keyframes,
    read_shape_keys,
)
from .staleness import report


class Stash:
    """The previous bake of a scene while a new one runs: per object its output, its restore record and
    (shape keys, keyframes) the file its motion was saved to."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}  # object name -> output, restore, stream
        self.folder: Path | None = None  # in the bake's staging folder, set when its paths are known

    def take(self, scene: bpy.types.Scene) -> None:
        """Take the scene's bake out of its objects into the stash folder so the build sees the originals."""
        folder = self.folder
        assert folder is not None, "the stash has no folder"
        state = scene_bake(scene)
        if not state.baked and not baked_objects(scene):
            return
        folder.mkdir(parents=True, exist_ok=True)
        for obj in baked_objects(scene):
            settings = object_bake(obj)
            info = {"output": settings.baked_output, "restore": restore_info(obj)}
            modifier = obj.modifiers.get(str(info["restore"].get("modifier", "")))
            if settings.baked_output == "PC2" and isinstance(modifier, bpy.types.MeshCacheModifier):
                info["restore"]["filepath"] = modifier.filepath  # as played now (remapped by Save As)
            if settings.baked_output == "SHAPE_KEYS":
                keys = read_shape_keys(obj)
                path = cf.cache_file(folder, settings.uid, ".pc2")
                with cf.PC2Writer(path, len(keys[0]) if keys else 0) as writer:
                    for sample in keys:
                        writer.write(sample)
                info["stream"] = str(path)
            elif settings.baked_output == "KEYFRAMES":
                path = cf.cache_file(folder, settings.uid, ".npy")
                np.save(path, read_keyframes(obj), allow_pickle=False)
                info["stream"] = str(path)
            free_object(obj)
            self.objects[obj.name] = info

    def put_back(self, scene: bpy.types.Scene) -> None:
        """Put the previous bake back exactly as it was (after a cancel or a failure)."""
        state = scene_bake(scene)
        for name, info in self.objects.items():
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
                for key in ("rotation_mode", *TRANSFORM_PROPS):
                    if key in restore:
                        new[key] = restore[key]
            except Exception as exc:  # keep going: restore as much of the old bake as possible
                report(f"could not restore the previous bake of {name!r}: {exc}")
                continue
            object_bake(obj).baked_output = output
            object_bake(obj).bake_id = state.bake_id
            set_restore_info(obj, new)
        self.objects.clear()
        if self.folder is not None:
            cf.remove_tree(self.folder)

    def forget(self) -> None:
        """The new bake committed: the previous one is gone for good."""
        self.objects.clear()


def capture(obj: bpy.types.Object) -> dict[str, Any]:
    """What building the simulation may change on an object (undone after the bake)."""
    data: dict[str, Any] = {"matrix_basis": [list(r) for r in obj.matrix_basis.row]}
    settings = object_settings(obj)
    data["has_rest"] = bool(settings.has_rest)
    data["rest_matrix"] = list(settings.rest_matrix)
    if obj.type == "MESH":
        mesh = mesh_of(obj)
        data["positions"] = mesh_io.read_positions(mesh)
        data["attributes"] = {a.name for a in mesh.attributes}
        if not len(mesh.edges) and not len(mesh.polygons):
            # A point mesh (a granular particle object) is rebuilt when the grain count changes.
            data["point_attributes"] = mesh_io.read_point_attributes(mesh)
    return data


def uncapture(obj: bpy.types.Object, data: dict[str, Any], keep_count: bool = False) -> None:
    """Undo what building changed on ``obj``; with ``keep_count`` a point mesh whose point count the build
    changed keeps the new count (a committed bake's point cache has that many points)."""
    if obj.type == "MESH" and "positions" in data:
        mesh = mesh_of(obj)
        for attribute in [a.name for a in mesh.attributes if a.name not in data["attributes"]]:
            mesh.attributes.remove(mesh.attributes[attribute])
        same_count = len(mesh.vertices) == len(data["positions"])
        if keep_count and not same_count:
            pass  # e.g. an inflow's capacity grew with its flow velocity: the bake wrote the new count
        elif not same_count and "point_attributes" in data and not len(mesh.edges) and not len(mesh.polygons):
            mesh_io.rebuild_point_mesh(mesh, data["positions"], data["point_attributes"])
        elif same_count and not np.array_equal(mesh_io.read_positions(mesh), data["positions"]):
            mesh_io.write_positions(mesh, data["positions"])
    if [list(r) for r in obj.matrix_basis.row] != data["matrix_basis"]:
        obj.matrix_basis = Matrix(data["matrix_basis"])
    if "has_rest" in data:
        settings = object_settings(obj)
        settings.has_rest = data["has_rest"]
        settings.rest_matrix = data["rest_matrix"]
