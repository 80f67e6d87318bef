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

What each object's stream holds is ``bake.targets``; the previous bake, kept aside meanwhile, and the
objects' state before the build are ``bake.stash``. Imports ``bake.paths``, ``bake.outputs``,
``bake.staleness``, ``bake.live_source``, ``bake.targets``, ``bake.stash``, ``bake_marks``,
``cachefiles``, the core and the base modules.
"""

from __future__ import annotations

import contextlib
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

from ...core import SimulationInputError
from ...core.state import Snapshot
from .. import cachefiles as cf
from .. import cloth_result, identity, mesh_io, runtime, whitewater
from ..bake_marks import free_object, set_restore_info
from ..fluids import FLUID_ROLES
from ..mesh_io import REST_ATTRIBUTE
from ..rna import mesh_of, object_bake, object_settings, scene_bake, scene_settings
from ..transforms import uses_animated
from ..writeback import MOVED_ATOL, MOVED_RTOL
from .live_source import WHITEWATER, LiveSource
from .outputs import (
    apply_keyframes,
    apply_pc2,
    apply_shape_keys,
    bake_files,
    bake_output,
    baked_folder,
    files_in_use,
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
from .stash import Stash, capture, uncapture
from .targets import KEYFRAME_ROW, Target

# Streams of points with a live mask (the rest parked): liquids and their whitewater.
POINT_KINDS = (*FLUID_ROLES, WHITEWATER)


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
        self.targets: list[Target] = []
        self.started = 0.0
        self.frames_stepped = 0
        self._stash = Stash()
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
        self._stash.folder = self.staging / "stash"
        self.progress_path = self.staging / "progress.json"
        self.snapshot_path = self.staging / "snapshot.npz"

    def _stream_path(self, target: Target) -> Path:
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
            self._stash.take(scene)
            for obj in self._touched_objects():
                self._captured[obj.name] = capture(obj)
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
            for particle in (object_settings(obj).particle_object, object_settings(obj).whitewater_object):
                if particle is not None:
                    objects.append(particle)
        return objects

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
            if entry.kind in (
                "GRANULAR",
                "ROPE",
                "HAIR",
                *FLUID_ROLES,
            ):  # the particle object carries the source's id
                self._uids_before.setdefault(write_obj.name, str(object_bake(write_obj).uid))
                object_bake(write_obj).uid = object_bake(obj).uid
            elif entry.kind == WHITEWATER:  # the whitewater object: the source's id, marked
                self._uids_before.setdefault(write_obj.name, str(object_bake(write_obj).uid))
                object_bake(write_obj).uid = whitewater.bake_uid(object_bake(obj).uid)
            uid = object_bake(write_obj).uid or object_bake(obj).uid
            radius = float(scene_settings(scene).particle_radius)
            self.targets.append(Target.create(entry, obj, write_obj, output, uid, depsgraph, radius))

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

    def _final_pc2(self, target: Target) -> Path:
        if target.output == "PC2":
            return cf.cache_file(self.folder, target.uid, ".pc2")
        return cf.cache_file(self.staging, target.uid, ".done")

    # -------------------------------------------------------------------------------- frames
    def _sample(self, target: Target) -> np.ndarray:
        active = getattr(self._source, "active", None)
        live = active(target.entry) if target.kind in POINT_KINDS and active is not None else None
        return target.row(self._source.sample(target.entry), live)

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
        points = {
            t.write_obj.name for t in self.targets if t.kind in ("GRANULAR", "ROPE", "HAIR", *POINT_KINDS)
        }
        for name, data in self._captured.items():
            obj = bpy.data.objects.get(name)
            if obj is not None:
                uncapture(obj, data, keep_count=committing and name in points)
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
        self._stash.put_back(self.scene)
        state = scene_bake(self.scene)
        if self.frame >= self.frame_start:
            where = f"after frame {self.frame}; bake again to continue from there"
        else:
            where = "before the first frame"
        state.status = f"Bake {'failed' if error else 'cancelled'} {where}. The previous bake is unchanged"
        state.error = error
        self._end()

    def finish(self) -> None:
        """All frames written: move the files in place and write the outputs into the objects.

        In three steps: stage the sidecars (a failure there is a cancel), commit the files and the
        outputs (a failure there rolls back to the previous bake, exactly), then record the bake in the
        scene and delete the previous bake's files it did not replace."""
        if self._done:
            return
        if self.frame < self.frame_end:
            raise RuntimeError("finish() before the last frame")
        self._done = True
        state = scene_bake(self.scene)
        bake_id = self._bake_id = cf.new_uid()
        try:
            sidecars = self._stage_sidecars(bake_id)
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
            old_files = self._previous_files()
            self._back_up_replaced(sidecars, backups)
            self._commit(sidecars, applied, committed)
        except BaseException as exc:
            self._roll_back(applied, committed, backups)
            message = f"writing the outputs failed: {error_message(exc)}. The previous bake is unchanged"
            state.error = message
            state.status = "Bake failed. The previous bake is unchanged"
            self._end()
            raise RuntimeError(message) from exc
        try:
            self._record(bake_id, old_files)
        finally:
            self._end()

    def _stage_sidecars(self, bake_id: str) -> list[tuple[Path, Path]]:
        """Write every target's sidecar into the staging folder; (staged, final) paths.

        The sidecars are the only new disk space needed from here on: written before anything is
        replaced, so a full disk now keeps the previous bake, exactly like a cancel."""
        sidecars: list[tuple[Path, Path]] = []
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
        return sidecars

    def _previous_files(self) -> list[Path]:
        """The previous bake's files, if they are this file's own (another file's bake, after this file
        was saved elsewhere, is played, never deleted, from here)."""
        old_folder = self._old_folder if self._old_own else None
        old_files: list[Path] = []
        if old_folder is not None:
            for name in self._stash.objects:
                obj = bpy.data.objects.get(name)
                if obj is not None:
                    old_files += cache_files_of(obj, old_folder)
            # Also the files of objects deleted since the previous bake (their sidecars name it).
            old_files += bake_files(old_folder, str(scene_bake(self.scene).bake_id))
        return old_files

    def _back_up_replaced(self, sidecars: list[tuple[Path, Path]], backups: list[tuple[Path, Path]]) -> None:
        """The previous bake's files this bake replaces wait in the staging folder until it is done
        (appended to ``backups`` as they move, for a roll-back)."""
        backup_dir = self.staging / "previous"
        finals = [final for _, final in sidecars]
        finals += [t.writer.path for t in self.targets if t.writer is not None and t.output == "PC2"]
        for final in finals:
            if final.exists():
                backup_dir.mkdir(parents=True, exist_ok=True)
                backup = backup_dir / final.name
                os.replace(final, backup)
                backups.append((final, backup))

    def _commit(
        self, sidecars: list[tuple[Path, Path]], applied: list[bpy.types.Object], committed: list[Path]
    ) -> None:
        """Move the streams and sidecars in place and write the outputs into the objects (appended to
        ``committed`` and ``applied`` as they are, for a roll-back)."""
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

    def _record(self, bake_id: str, old_files: list[Path]) -> None:
        """The bake is in place: delete the previous bake's files it did not overwrite (unless another
        scene's bake plays them), and record it in the scene."""
        scene, state = self.scene, scene_bake(self.scene)
        new_files = {cf.cache_file(self.folder, t.uid, ".json") for t in self.targets}
        new_files |= {cf.cache_file(self.folder, t.uid, ".pc2") for t in self.targets if t.output == "PC2"}
        used = files_in_use(scene)  # files another scene's bake plays stay
        cf.remove_files([path for path in old_files if path not in new_files and path not in used])
        self._stash.forget()
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
        self._stash.put_back(self.scene)

    def _apply(self, target: Target) -> None:
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
                info = apply_keyframes(obj, rows.reshape(self.total, KEYFRAME_ROW)[:, :7], self.frame_start)
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
