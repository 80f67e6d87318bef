# SPDX-License-Identifier: GPL-3.0-or-later
"""Persistent handlers that only dispatch.

* frame change -> duplicates and deleted halves of granular pairs are sorted out (:func:`.identity.repair`),
  then the live simulation shows the new frame (:func:`.simulation.on_frame_change`);
* depsgraph update -> the same repair right after a duplicate, a copy linked into the scene or a delete
  (only when objects or meshes were added or removed: it runs on every change);
* before a file loads -> forget the in-memory simulations (:mod:`.runtime`), they belong to the old file;
* after a file loads -> a bake interrupted by a crash can be resumed; check baked caches against the scene;
  cloth of files made before the bending rigidity keeps its legacy bending;
* before saving -> give the scene and its simulated objects stable cache ids; store each cloth's bending
  model.

The top of the Blender layer: imports ``simulation``, ``bake``, ``identity`` and the base modules.
"""

from __future__ import annotations

import sys
from typing import Any

import bpy
from bpy.app.handlers import persistent

from . import identity, runtime, simulation
from .bake import ensure_uids, report_bake_problems
from .properties import mark_legacy_bending, stamp_bending_model


@persistent
def on_frame_change_post(scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph | None = None) -> None:
    """Show the live simulation at the new frame (post: animated colliders are already at that frame)."""
    if not runtime.in_handler() and not runtime.is_paused(scene):
        _repair(lambda: identity.repair_scene(scene))
    simulation.on_frame_change(scene, depsgraph)


@persistent
def on_depsgraph_update_post(scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph | None = None) -> None:
    """Right after Shift+D, Alt+D, ``obj.copy()`` linked into a scene, or a delete: give copies their own
    identity, remove grains whose object was deleted. The repair's own changes re-run this handler; it
    then finds nothing to do (and never re-enters itself)."""
    if runtime.in_handler() or runtime.is_paused(scene):
        return  # the frame handler or a bake is changing the scene: they repair before reading it
    _repair(identity.repair_if_changed)


def _repair(run: Any) -> None:
    if bpy.app.is_job_running("RENDER"):
        return  # a render may run these handlers on its own thread: never add or remove objects there
    try:
        for message in run():
            print(f"Unified Particles: {message}", file=sys.stderr)
    except Exception as exc:  # a handler must not raise
        print(f"Unified Particles: cannot check duplicated objects: {exc}", file=sys.stderr)


@persistent
def on_undo_post(*_args: Any) -> None:
    """Undo/redo put the file back: frames simulated from the undone state are stale."""
    simulation.after_undo()


@persistent
def on_load_pre(*_args: Any) -> None:
    """A file is about to replace the current one: in-memory simulations belong to the old one."""
    simulation.free_all()
    identity.forget()


@persistent
def on_load_post(*_args: Any) -> None:
    """Check the bakes of the loaded file (problems show in the panel); older cloth keeps its bending."""
    mark_legacy_bending()
    for scene in bpy.data.scenes:
        state = getattr(scene, "unified_particles_bake", None)
        if state is None:
            continue
        if state.is_baking:
            state.is_baking = False  # saved while a bake ran (or it crashed): the bake can be resumed
        if state.baked:
            try:
                report_bake_problems(scene)
            except Exception as exc:  # a handler must not raise: loading the file goes on
                print(f"Unified Particles: cannot check the bake of {scene.name!r}: {exc}", file=sys.stderr)


@persistent
def on_save_pre(*_args: Any) -> None:
    """Stable cache ids before saving, so an interrupted bake of the saved file can resume later; the
    cloth's bending model stored (see ``properties.mark_legacy_bending``)."""
    stamp_bending_model()
    for scene in bpy.data.scenes:
        if getattr(scene, "unified_particles_bake", None) is not None:
            ensure_uids(scene)


_HANDLERS = (
    ("frame_change_post", on_frame_change_post),
    ("depsgraph_update_post", on_depsgraph_update_post),
    ("undo_post", on_undo_post),
    ("redo_post", on_undo_post),
    ("load_pre", on_load_pre),
    ("load_post", on_load_post),
    ("save_pre", on_save_pre),
)


def register() -> None:
    for attr, func in _HANDLERS:
        handlers = getattr(bpy.app.handlers, attr)
        if func not in handlers:
            handlers.append(func)


def unregister() -> None:
    # Remove by name too: after a reload Blender may hold a different function object.
    for attr, func in _HANDLERS:
        handlers = getattr(bpy.app.handlers, attr)
        for handler in list(handlers):
            if getattr(handler, "__name__", "") == func.__name__ and getattr(
                handler, "__module__", ""
            ).startswith(__package__ or ""):
                handlers.remove(handler)
    simulation.free_all()
