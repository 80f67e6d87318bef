# SPDX-License-Identifier: GPL-3.0-or-later
"""The Bake and Free Bake operators.

``unified_particles.bake`` bakes blocking when called from a script or headless (``execute``), and
modal with progress and Esc to cancel when started from the UI (``invoke``: a timer drives
``BakeJob.step``). ``unified_particles.free_bake`` removes the bake and restores the objects.

A registered module, the top of the bake package: imports ``bake.job``, ``bake.outputs``,
``bake.paths`` and the base modules.
"""

from __future__ import annotations

import time
from typing import Any

import bpy
from bpy.props import BoolProperty, IntProperty

from .. import blender_physics, runtime
from ..rna import OperatorResult, context_scene, register_classes, scene_bake, unregister_classes
from ..scene_reader import simulated_objects
from .job import BakeJob, bake_scene, error_message
from .outputs import baked_objects, free_bake
from .paths import BAKED_ROLES, role
from .staleness import report

# The modal bake works at most this long per timer event, so the UI stays responsive.
MODAL_WORK_SECONDS = 0.1
# Timer interval of the modal bake: as soon as Blender is idle.
MODAL_TIMER_SECONDS = 0.001
# A headless bake prints its progress every this many frames.
PRINT_EVERY_FRAMES = 10


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
        if not any(role(o) in BAKED_ROLES for o in scene.objects):
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
            if bpy.app.background and (
                job.done_frames % PRINT_EVERY_FRAMES == 0 or job.frame == job.frame_end
            ):
                print(job.status_text().replace(" (Esc to cancel)", ""), flush=True)

        try:
            job = bake_scene(scene, start, end, progress=progress)
        except Exception as exc:
            message = error_message(exc)
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
        # Blender's own cloth or Bullet still moving a baked object: the result will not show as baked.
        for line in blender_physics.warnings(job.scene, simulated_objects(job.scene)):
            self.report({"WARNING"}, line)
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
            message = error_message(exc)
            scene_bake(scene).error = message
            self.report({"ERROR"}, f"Bake failed: {message}")
            return {"CANCELLED"}
        self._job = job
        wm = _window_manager(context)
        wm.progress_begin(0, max(job.total, 1))
        self._timer = wm.event_timer_add(MODAL_TIMER_SECONDS, window=context.window)
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
        # Blender is tearing the operator down: nothing may raise from here. Both steps only touch
        # this bake's own state (files it staged, its timer), so a failure leaves nothing half done.
        if self._job is not None:
            try:
                self._job.cancel()
            except Exception as exc:
                report(f"could not cancel the bake cleanly: {exc}")
        try:
            self._stop(context)
        except (RuntimeError, ReferenceError) as exc:  # the window manager is already gone
            report(f"could not stop the bake's progress display: {exc}")

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
        deadline = time.perf_counter() + MODAL_WORK_SECONDS
        try:
            done = job.step()
            while not done and time.perf_counter() < deadline:
                done = job.step()
            if done:
                job.finish()
        except Exception as exc:
            message = error_message(exc)
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
            self.report({"ERROR"}, f"Free Bake failed: {error_message(exc)}")
            return {"CANCELLED"}
        with runtime.paused(scene):
            scene.frame_set(scene.frame_current)
        self.report({"INFO"}, f"Freed the bake of {count} objects")
        return {"FINISHED"}


classes = (UNIFIED_PARTICLES_OT_bake, UNIFIED_PARTICLES_OT_free_bake)


def register() -> None:
    register_classes(classes)


def unregister() -> None:
    unregister_classes(classes)
