# SPDX-License-Identifier: GPL-3.0-or-later
"""The bake job: simulate the frame range once, stage every file, then commit it in one go.

:class:`BakeJob` is driven with ``begin()``, ``step()`` until it returns True, then ``finish()``;
``cancel()`` at any point keeps the previous bake. :func:`bake_scene` runs it blocking (scripts,
render farms); the Bake operator runs it from a timer (modal, Esc to cancel).

Safety: every file is written into a staging folder (``<cache>/.up-staging-<scene id>/``) and moved in
place only when all frames are done, so a cancelled or failed bake leaves the previous bake as it was
(its outputs are taken out of the objects into a stash while baking, and put back on cancel). The
staging folder keeps a snapshot of the solver state after every frame (``Snapshot.to_arrays`` in an
``.npz``, read back with ``allow_pickle=False``) and the partial streams, so a bake interrupted at
frame k continues from frame k with a bit-identical result.

Imports ``bake.paths``, ``bake.outputs``, ``bake.staleness``, ``bake.live_source``, ``cachefiles``,
the core and the base modules.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import hashlib
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bpy
import numpy as np
from mathutils import Matrix

from ...core import SimulationInputError
from ...core.state import Snapshot
from .. import cachefiles as cf
from .. import cloth_result, identity, mesh_io, runtime
from ..bake_marks import TRANSFORM_PROPS, free_object, restore_info, set_restore_info
from ..fluids import FLUID_ROLES, park_inactive
from ..mesh_io import REST_ATTRIBUTE
from ..rna import mesh_of, object_bake, object_settings, scene_bake, scene_settings
from ..transforms import basis_matrix, parent_frame, rest_transform_values, uses_animated
from ..writeback import MOVED_ATOL, MOVED_RTOL
from .live_source import LiveSource, SourceEntry
from .outputs import (
    apply_keyframes,
    apply_pc2,
    apply_shape_keys,
    bake_files,
    bake_output,
    baked_folder,
    baked_objects,
    files_in_use,
    quaternion_from_matrix,
    read_keyframes,
    read_shape_keys,
)
from .paths import (
    BAKED_ROLES,
    STAGING_PREFIX,
    blend_path,
    cache_files_of,
    cache_folder,
    ensure_scene_uid,
    ensure_uids,
    role,
)
from .staleness import current_settings_hash, report

# Floats per frame of a rigid keyframe stream, as a PC2 "point" of 3: location (3), quaternion (4), padding.
_KEYFRAME_ROW_POINTS = 3
_KEYFRAME_ROW = 3 * _KEYFRAME_ROW_POINTS


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


def _uncapture(obj: bpy.types.Object, data: dict[str, Any], keep_count: bool = False) -> None:
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
        self.source_factory = source_factory or runtime.bake_source_factory or LiveSource
        self.frame = self.frame_start - 1  # last frame written
        self.resumed_from: int | None = None
        self.warning = ""
        self.targets: list[_Target] = []
        self.started = 0.0
        self.frames_stepped = 0
        self._stash: dict[str, dict[str, Any]] = {}
        self._captured: dict[str, dict[str, Any]] = {}
        self._uids_before: dict[str, str] = {}  # particle objects given their source's id by this bake
        # The previous bake's folder, and whether its files are this file's own (see ``baked_folder``).
        self._old_folder: Path | None = None
        self._old_own = False
        self._bake_id = ""
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
        # Duplicates made since the scene was last read get their own identity (cache id, grains, mesh).
        for message in identity.repair():
            print(f"Unified Particles: {message}", file=sys.stderr)
        candidates = [o for o in scene.objects if role(o) in BAKED_ROLES]
        if not candidates:
            raise RuntimeError("Nothing to bake: make objects Rigid, Cloth, Granular, Fluid or Inflow first")
        _check_shared_meshes(candidates)
        for obj in candidates:
            baked, output = object_bake(obj).baked_output, bake_output(obj)
            keys = mesh_of(obj).shape_keys if obj.type == "MESH" else None
            if role(obj) == "CLOTH" and output == "SHAPE_KEYS" and keys is not None and baked != "SHAPE_KEYS":
                raise RuntimeError(f"Cloth {obj.name!r} has shape keys; choose the Point Cache output")
            if role(obj) == "CLOTH" and output == "SHAPE_KEYS" and cloth_result.deformers(obj):
                # Shape keys come before the modifiers: the deformers would move the baked shape again.
                raise RuntimeError(
                    f"Cloth {obj.name!r} is deformed by its modifiers (e.g. an Armature); choose the Point "
                    "Cache output"
                )
            # With Animated (it follows its keyframes) the baked action replaces its own until Free Bake.
            animated = obj.animation_data is not None and obj.animation_data.action is not None
            animated = animated and not uses_animated(obj)
            if role(obj) == "RIGID" and output == "KEYFRAMES" and animated and baked != "KEYFRAMES":
                raise RuntimeError(f"Rigid {obj.name!r} is already animated; choose the Point Cache output")
        self._paths()
        ensure_uids(scene)
        _adopt_start_pose(scene)
        self.settings_hash = current_settings_hash(scene, self.frame_start, self.frame_end)
        scene_bake(scene).is_baking = True
        self._pause = contextlib.ExitStack()
        try:
            self._pause.enter_context(runtime.paused(scene))
            self._old_folder, self._old_own = baked_folder(scene)
            self._stash_previous_bake()
            for obj in self._touched_objects():
                self._captured[obj.name] = _capture(obj)
            self._build()
            self.initial_fingerprint = _fingerprint(self._source.state())
            if not self._try_resume():
                self._start_fresh()
        except BaseException as exc:
            self.cancel(error=error_message(exc))
            raise
        self.started = time.perf_counter()

    def _touched_objects(self) -> list[bpy.types.Object]:
        objects = [o for o in self.scene.objects if role(o) != "NONE"]
        for obj in list(objects):
            particle = object_settings(obj).particle_object
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
            info = {"output": settings.baked_output, "restore": restore_info(obj)}
            modifier = obj.modifiers.get(str(info["restore"].get("modifier", "")))
            if settings.baked_output == "PC2" and isinstance(modifier, bpy.types.MeshCacheModifier):
                info["restore"]["filepath"] = modifier.filepath  # as played now (remapped by Save As)
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
                for key in ("rotation_mode", *TRANSFORM_PROPS):
                    if key in restore:
                        new[key] = restore[key]
            except Exception as exc:  # keep going: restore as much of the old bake as possible
                report(f"could not restore the previous bake of {name!r}: {exc}")
                continue
            object_bake(obj).baked_output = output
            object_bake(obj).bake_id = state.bake_id
            set_restore_info(obj, new)
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
        writers: dict[str, str] = {}
        for entry in entries:
            obj = bpy.data.objects[entry.name]
            write_obj = bpy.data.objects[entry.target]
            if write_obj.name in writers:  # identity.repair prevents it; never write two outputs into one
                raise RuntimeError(
                    f"{obj.name!r} and {writers[write_obj.name]!r} both write into {write_obj.name!r}: "
                    "clear one of them and make it again"
                )
            writers[write_obj.name] = obj.name
            output = bake_output(obj)
            if entry.kind in ("GRANULAR", *FLUID_ROLES):  # the particle object carries the source's id
                self._uids_before.setdefault(write_obj.name, str(object_bake(write_obj).uid))
                object_bake(write_obj).uid = object_bake(obj).uid
            uid = object_bake(write_obj).uid or object_bake(obj).uid
            matrix = mesh_io.matrix_to_numpy(write_obj.matrix_world)
            target = _Target(entry, obj, write_obj, output, uid, 0, np.linalg.inv(matrix))
            if entry.kind == "RIGID":
                if output == "PC2":
                    target.rigid_vertices = mesh_io.evaluated_positions(obj, depsgraph)
                    target.n_points = len(target.rigid_vertices)
                else:
                    target.n_points = _KEYFRAME_ROW_POINTS
                    parent = np.eye(4)
                    if obj.parent is not None:
                        parent = mesh_io.matrix_to_numpy(obj.parent.matrix_world) @ mesh_io.matrix_to_numpy(
                            obj.matrix_parent_inverse
                        )
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
            report(f"cannot resume the interrupted bake ({exc}); starting again")
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
                to_local = target.to_local
                if target.entry.handle.own_animation:
                    # Its own animation places the object on playback too: local to where it is now.
                    to_local = np.linalg.inv(mesh_io.matrix_to_numpy(target.obj.matrix_world))
                elif target.entry.handle.animated and target.obj.parent is not None:
                    # A moving parent carries the object: local to where the parent puts it at this frame.
                    mode, values = rest_transform_values(target.obj)
                    at_rest = basis_matrix(target.obj, mode, values)
                    to_local = np.linalg.inv(parent_frame(target.obj) @ at_rest)
                return mesh_io.transform_points(to_local @ matrix, target.rigid_vertices)
            assert target.parent_inverse is not None
            assert target.scale is not None
            parent_inverse = target.parent_inverse
            if target.entry.handle.animated and target.obj.parent is not None:
                # A moving parent (a rigid child keeps its world motion): the parent of this frame.
                parent_inverse = np.linalg.inv(parent_frame(target.obj))
            basis = parent_inverse @ matrix
            rotation = basis[:3, :3] / target.scale[None, :]
            quat = quaternion_from_matrix(rotation)
            if target.previous_quat is not None and float(np.dot(quat, target.previous_quat)) < 0.0:
                quat = -quat  # same rotation, kept in the previous one's hemisphere (no flips when blending)
            target.previous_quat = quat.astype(np.float32).astype(np.float64)  # as stored (resume)
            row = np.zeros(_KEYFRAME_ROW, dtype=np.float64)
            row[:3], row[3:7] = basis[:3, 3], quat
            return row.reshape(_KEYFRAME_ROW_POINTS, 3)
        to_local = target.to_local
        if target.entry.handle.animated:  # the object moves (its own animation or a parent's): this frame's
            to_local = np.linalg.inv(mesh_io.matrix_to_numpy(target.write_obj.matrix_world))
        local = mesh_io.transform_points(to_local, value)
        active = getattr(self._source, "active", None)
        live = active(target.entry) if target.kind in FLUID_ROLES and active is not None else None
        # Fluid not yet poured or drained: parked where the liquid surface deletes it, so the cache
        # replays without the add-on.
        return local if live is None else park_inactive(local, live)

    def _write_frame(self, frame: int) -> None:
        for target in self.targets:
            assert target.writer is not None
            target.writer.write(self._sample(target))
        for target in self.targets:
            assert target.writer is not None
            target.writer.flush()
        self.frame = frame
        cf.save_snapshot(self.snapshot_path, self._source.state().to_arrays(), {"frame": frame})
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
        if self._source is not None:
            self._source.close(self.scene)
        self._source = None

    def _restore_uids(self) -> None:
        """A bake that does not commit leaves the particle objects' ids as it found them."""
        for name, uid in self._uids_before.items():
            obj = bpy.data.objects.get(name)
            if obj is not None:
                object_bake(obj).uid = uid
        self._uids_before.clear()

    def _restore_objects(self, committing: bool = False) -> None:
        """Undo the build's changes; when ``committing`` the bake's point objects keep the point count
        the bake was written with."""
        points = {t.write_obj.name for t in self.targets if t.kind in ("GRANULAR", *FLUID_ROLES)}
        for name, data in self._captured.items():
            obj = bpy.data.objects.get(name)
            if obj is not None:
                _uncapture(obj, data, keep_count=committing and name in points)
        self._captured.clear()

    def _end(self) -> None:
        state = scene_bake(self.scene)
        state.is_baking = False
        if self._pause is not None:
            self._pause.close()
            self._pause = None
        if int(self.scene.frame_current) != self._original_frame:
            with runtime.paused(self.scene):
                self.scene.frame_set(self._original_frame)

    def cancel(self, error: str = "") -> None:
        """Stop; keep the partial streams and last snapshot (for resuming) and the previous bake."""
        if self._done:
            return
        self._done = True
        for target in self.targets:
            if target.writer is not None:
                # Cancelling often follows a file error (a full disk): closing the partial stream may
                # fail the same way, and must not hide the error that stopped the bake.
                with contextlib.suppress(OSError):
                    target.writer.close(commit=False)
        self._close_source()
        self._restore_objects()
        self._restore_uids()
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
        bake_id = self._bake_id = cf.new_uid()
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
            self.cancel(error=error_message(exc))
            raise
        applied: list[bpy.types.Object] = []  # objects this bake's outputs were written into
        committed: list[Path] = []  # files this bake moved into the cache folder
        backups: list[tuple[Path, Path]] = []  # (file of the previous bake, where it waits meanwhile)
        try:
            self._close_source()
            self._restore_objects(committing=True)
            # Another file's bake (this file was saved elsewhere since) is played, never deleted, from here.
            old_folder = self._old_folder if self._old_own else None
            old_files: list[Path] = []
            if old_folder is not None:
                for name in self._stash:
                    obj = bpy.data.objects.get(name)
                    if obj is not None:
                        old_files += cache_files_of(obj, old_folder)
                # Also the files of objects deleted since the previous bake (their sidecars name it).
                old_files += bake_files(old_folder, str(state.bake_id))
            # The previous bake's files this bake replaces wait in the staging folder until it is done.
            backup_dir = self.staging / "previous"
            finals = [final for _, final in sidecars]
            finals += [t.writer.path for t in self.targets if t.writer is not None and t.output == "PC2"]
            for final in finals:
                if final.exists():
                    backup_dir.mkdir(parents=True, exist_ok=True)
                    backup = backup_dir / final.name
                    os.replace(final, backup)
                    backups.append((final, backup))
            for target in self.targets:
                assert target.writer is not None
                target.writer.close(commit=True)
                committed.append(target.writer.path)
            for target in self.targets:
                self._apply(target)
                applied.append(target.write_obj)
            for staged, final in sidecars:
                os.replace(staged, final)
                committed.append(final)
        except BaseException as exc:
            self._roll_back(applied, committed, backups)
            message = f"writing the outputs failed: {error_message(exc)}. The previous bake is unchanged"
            state.error = message
            state.status = "Bake failed. The previous bake is unchanged"
            self._end()
            raise RuntimeError(message) from exc
        try:
            # Files of the previous bake that this bake did not overwrite.
            new_files = {cf.cache_file(self.folder, t.uid, ".json") for t in self.targets}
            new_files |= {
                cf.cache_file(self.folder, t.uid, ".pc2") for t in self.targets if t.output == "PC2"
            }
            used = files_in_use(scene)  # files another scene's bake plays stay
            cf.remove_files([path for path in old_files if path not in new_files and path not in used])
            self._stash.clear()
            state.baked = True
            state.frame_start, state.frame_end = self.frame_start, self.frame_end
            state.settings_hash = self.settings_hash
            state.bake_id = bake_id
            state.cache_folder = self.blend_folder
            state.cache_folder_absolute = str(self.folder)
            scene_settings(scene).is_baked = True
            state.error = ""
            state.status = f"Baked frames {self.frame_start}-{self.frame_end} ({len(self.targets)} objects)"
            if self.warning:
                state.status += ". " + self.warning
            cf.remove_tree(self.staging)
        finally:
            self._end()

    def _roll_back(
        self, applied: list[bpy.types.Object], committed: list[Path], backups: list[tuple[Path, Path]]
    ) -> None:
        """Writing the outputs failed: take this bake out again and put the previous one back, exactly."""
        try:
            self._restore_objects()  # if the failure came before they were restored
        except Exception as exc:
            report(f"could not restore the objects after the failed bake: {exc}")
        for obj in reversed(applied):
            try:
                free_object(obj)
            except Exception as exc:  # keep going: undo as much as possible
                report(f"could not remove the failed bake from {obj.name!r}: {exc}")
        for path in committed:
            with contextlib.suppress(OSError):
                path.unlink()
        for final, backup in backups:
            try:
                os.replace(backup, final)
            except OSError as exc:
                report(f"could not put back {final}: {exc}")
        self._restore_uids()
        self._unstash()

    def _apply(self, target: _Target) -> None:
        obj = target.write_obj
        if target.output == "PC2":
            # Points (grains, liquid) move before their Geometry Nodes draw them.
            position = {"CLOTH": "FIRST", "RIGID": "LAST"}.get(target.kind, "BEFORE_NODES")
            if target.kind == "CLOTH" and cloth_result.result_modifier(obj) is not None:
                position = "AFTER_CLOTH_RESULT"  # the simulated shape replaces the deformed one there
            filepath = blend_path(self.blend_folder, target.uid + ".pc2")
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
                info = apply_keyframes(obj, rows.reshape(self.total, _KEYFRAME_ROW)[:, :7], self.frame_start)
            with contextlib.suppress(FileNotFoundError):
                stream.unlink()
        object_bake(obj).baked_output = target.output
        object_bake(obj).bake_id = self._bake_id
        set_restore_info(obj, info)


def _check_shared_meshes(objects: list[bpy.types.Object]) -> None:
    """Two baked objects writing into one mesh would overwrite each other's output."""
    seen: dict[int, str] = {}
    for obj in objects:
        if role(obj) != "CLOTH" or obj.type != "MESH":
            continue
        key = mesh_of(obj).as_pointer()
        if key in seen:
            raise RuntimeError(
                f"Cloth {obj.name!r} and {seen[key]!r} share one mesh: give one its own "
                "(Object > Relations > Make Single User > Object & Data)"
            )
        seen[key] = obj.name


def _adopt_start_pose(scene: bpy.types.Scene) -> None:
    """At the start frame, what the user sees is the rest pose (as in the live simulation): a rigid object
    moved or a cloth edited there since the simulation last showed it is baked from where it is now."""
    if scene_settings(scene).is_baked or scene.frame_current != scene.frame_start:
        return
    view_layer = bpy.context.view_layer if bpy.context.scene == scene else scene.view_layers[0]
    if view_layer is not None:
        view_layer.update()  # matrix_world of objects moved since the last evaluation
    for obj in scene.objects:
        kind, settings = role(obj), object_settings(obj)
        if kind == "RIGID" and settings.has_rest:
            current = mesh_io.matrix_to_numpy(obj.matrix_world)
            rest = np.asarray(settings.rest_matrix, dtype=np.float64).reshape(4, 4)
            if not np.allclose(current, rest, rtol=MOVED_RTOL, atol=MOVED_ATOL):
                settings.rest_matrix = current.reshape(-1).tolist()
        elif kind == "CLOTH" and obj.type == "MESH":
            mesh = mesh_of(obj)
            rest32 = mesh_io.read_float_vector_attribute(mesh, REST_ATTRIBUTE)
            if rest32 is None:
                continue
            current32 = mesh_io.read_positions(mesh)
            if not np.allclose(current32, rest32, rtol=MOVED_RTOL, atol=MOVED_ATOL):
                mesh_io.write_float_vector_attribute(mesh, REST_ATTRIBUTE, current32)


def _fingerprint(state: Snapshot) -> str:
    """Hash of a solver state: a resumed bake must start from the same build (geometry, settings)."""
    digest = hashlib.sha256()
    for name, array in sorted(state.to_arrays().items()):
        digest.update(name.encode())
        digest.update(str(array.dtype).encode() + str(array.shape).encode())
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()


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
        job.cancel(error=error_message(exc))
        raise
    job.finish()
    return job


def error_message(exc: BaseException) -> str:
    """The message a user sees for a failed bake (our own errors as they are, file errors explained)."""
    if isinstance(exc, (SimulationInputError, RuntimeError, cf.CacheError)):
        return str(exc)
    if isinstance(exc, OSError):
        return os_error_message(exc)
    return f"{type(exc).__name__}: {exc}"


def os_error_message(exc: OSError) -> str:
    """What a file-system error means for the user's bake, and what to do."""
    where = exc.filename or "the cache folder"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return (
            f"The disk is full (writing {where}). Free some space or choose a Cache Folder on another "
            "disk, then bake again. The previous bake is unchanged"
        )
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return (
            f"No permission to write {where}: choose another Cache Folder (Cache and Bake panel) "
            "and bake again"
        )
    if exc.errno in (errno.ENOTDIR, errno.EEXIST, errno.EISDIR):
        return (
            f"Cannot create {where}: it, or a folder above it, is a file, not a folder. "
            "Choose another Cache Folder (Cache and Bake panel) and bake again"
        )
    return f"Cannot write the bake cache ({exc.strerror or exc} at {where}): check the Cache Folder"
