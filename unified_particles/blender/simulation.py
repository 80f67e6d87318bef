# SPDX-License-Identifier: GPL-3.0-or-later
"""The live simulation: what the frame handler does, as three stages one can follow.

On a frame change (:func:`on_frame_change`)::

    scene_reader  (Blender objects -> World bodies, change detection; reads only)
        -> frame_cache  (the World stepped to the frame, one snapshot per frame; one step_frame each)
        -> writeback  (the frame's state shown on the objects; the only writer of Blender data)

This module only orchestrates: it keeps one :class:`Simulation` per scene (in :mod:`.runtime`),
decides when to rebuild (objects, roles or settings changed; the user edited an object at the start
frame), and turns errors into one message in the panel instead of a traceback every frame. The bake
drives the same :class:`Simulation` through ``bake.LiveSource``.

Runner API (for the bake package, the operators and scripts): :func:`get_simulation` /
:func:`find_simulation`, ``Simulation.build``, ``Simulation.ensure_frame``, ``Simulation.write_back``,
``Simulation.adopt_state``, ``Simulation.entries``; :func:`paused` keeps the handler away from a
scene; :func:`invalidate`, :func:`reset`, :func:`free_simulation`, :func:`free_all`. When
``scene.unified_particles.is_baked`` is True, the handler does nothing.

Settings changes invalidate from the current frame (frames before it stay); changes of role, radius,
objects added or removed, or any settings change made without an update callback (e.g. undo)
rebuild from the start. Errors while building or stepping are stored (``Simulation.error``,
``scene.unified_particles.last_error``), printed once, and the simulation waits until something
changes (a setting, Reset, a Make operator) instead of failing again every frame.

Imports the frame-path stages and the base modules.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

import bpy

from ..core import SimulationInputError
from . import blender_physics, cloth_result, granular, runtime, scene_reader, writeback
from .fluids import kept_inflows
from .frame_cache import FrameCache
from .rna import object_settings, scene_settings
from .runtime import invalidate, paused
from .scene_reader import SIM_ROLES, settings_signature, simulated_objects, structure_signature

__all__ = [
    "Simulation",
    "after_undo",
    "find_simulation",
    "free_all",
    "free_simulation",
    "get_simulation",
    "invalidate",
    "on_frame_change",
    "paused",
    "reset",
    "status_lines",
]


@dataclass
class Simulation(FrameCache):
    """Live simulation of one scene: the frame cache plus what the live display needs."""

    error: str = ""  # the message reported last (printed once)
    failed: bool = False
    failed_key: tuple[Any, ...] = ()  # scene signatures when it failed: retry once they change
    last_written_frame: int | None = None

    def invalidate(self, frame: int | None = None) -> None:
        self.failed = False
        self.error = ""
        super().invalidate(frame)

    def build(self, scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph | None = None) -> None:
        """Build (see :meth:`FrameCache.build`); objects left out stay at (go back to) their rest pose."""
        super().build(scene, depsgraph)
        left_out: list[bpy.types.Object | None] = [bpy.data.objects.get(name) for name in self.problems]
        left_out += scene_reader.excluded_objects(scene)
        for obj in left_out:
            if obj is not None:
                writeback.restore_objects([obj])
                target = object_settings(obj).particle_object
                if target is not None:
                    writeback.restore_objects([target])

    def problem_message(self) -> str:
        """One line naming every object left out of the simulation and why ("" if none)."""
        if not self.problems:
            return ""
        return "Not simulated (the others are): " + "; ".join(self.problems[n] for n in sorted(self.problems))

    def write_back(self, scene: bpy.types.Scene) -> None:
        """Show the world's current state on the Blender objects (see :mod:`.writeback`)."""
        if self.world is None:
            return
        writeback.write_back(self.world, self.entries, at_rest=self.shown_frame == self.start_frame)
        self.last_written_frame = self.shown_frame


# ------------------------------------------------------------------------------- registry
def get_simulation(scene: bpy.types.Scene) -> Simulation:
    """The runner of ``scene`` (created, unbuilt, if there is none)."""
    sim = runtime.SIMULATIONS.get(scene.name)
    if sim is None:
        sim = runtime.SIMULATIONS[scene.name] = Simulation(scene.name, start_frame=int(scene.frame_start))
    return sim


def find_simulation(scene: bpy.types.Scene) -> Simulation | None:
    """The runner of ``scene`` if there is one (never creates one)."""
    return runtime.SIMULATIONS.get(scene.name)


def free_simulation(scene: bpy.types.Scene) -> None:
    runtime.SIMULATIONS.pop(scene.name, None)


def after_undo() -> None:
    """Undo or redo changed the file under the simulations: drop their frames, rebuild from the file's
    rest data at the next frame change (nothing of an undone state stays in memory)."""
    for sim in runtime.SIMULATIONS.values():
        sim.invalidate(None)
    runtime.REST_MEMORY.clear()


def free_all() -> None:
    """Forget every simulation (a file is being loaded, or the add-on is disabled)."""
    runtime.clear()


def reset(scene: bpy.types.Scene) -> None:
    """Restore every simulated object to its rest state and drop the simulation and its cache."""
    objects = [o for o in scene.objects if object_settings(o).role in SIM_ROLES] + kept_inflows(scene, None)
    writeback.restore_objects(objects)
    for obj in objects:
        if object_settings(obj).role in granular.PARTICLE_ROLES:  # their particle objects
            target = object_settings(obj).particle_object
            if target is not None:
                writeback.restore_objects([target])
    free_simulation(scene)
    scene_settings(scene).last_error = ""


# ---------------------------------------------------------------------------- frame handler
def on_frame_change(scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph | None) -> None:
    """What the frame handler does: show the simulation at the scene's current frame."""
    if runtime.in_handler() or runtime.is_paused(scene):
        return
    settings = getattr(scene, "unified_particles", None)
    if settings is None or settings.is_baked:
        return
    # (a deleted inflow whose liquid stays is simulated from outside the scene: fluids.kept_inflows)
    if not any(object_settings(o).role in SIM_ROLES for o in scene.objects) and not kept_inflows(scene, None):
        if scene.name in runtime.SIMULATIONS:
            free_simulation(scene)
        return
    sim = get_simulation(scene)
    with runtime.nested_handler_guard():
        _show_frame(sim, scene, depsgraph)


def _show_frame(sim: Simulation, scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph | None) -> None:
    frame = int(scene.frame_current)
    objects = simulated_objects(scene)
    # Stage 1: has the scene changed since the build?
    if sim.built:
        if structure_signature(scene, objects) != sim.signature:
            sim.invalidate(None)
        elif sim.last_written_frame == sim.start_frame and writeback.user_edited_rest(sim.entries):
            writeback.adopt_user_edits(sim.entries)
            sim.invalidate(None)
        elif sim.dirty_from is None and settings_signature(scene, objects) != sim.settings_key:
            sim.invalidate(None)
    if sim.failed:
        if _scene_key(scene, objects) == sim.failed_key:
            _show_cached(sim, scene, frame)  # frames simulated before the failure still show
            return
        sim.invalidate(None)  # something changed (e.g. undo, which runs no update callbacks): retry
    if bpy.app.is_job_running("RENDER") and not scene.render.use_lock_interface:
        _report_once(
            sim,
            scene,
            "Rendering a live simulation needs Render > Lock Interface; or bake the simulation first",
            failed=False,  # only this render is refused
        )
        return
    try:
        sim.ensure_frame(scene, frame, depsgraph)  # stage 2: step (or read the cache)
        sim.write_back(scene)  # stage 3: show it
    except SimulationInputError as exc:
        _report_once(sim, scene, str(exc))
        _show_cached(sim, scene, frame)  # e.g. after a blow-up: the last good frame
    except Exception as exc:  # a handler must not raise: show it in the panel instead
        _report_once(sim, scene, f"{type(exc).__name__}: {exc}")
    else:
        message = sim.problem_message()  # objects left out: shown, the others simulate
        if message and sim.error != message:
            print(f"Unified Particles ({scene.name}): {message}", file=sys.stderr)
        sim.error = message
        if scene_settings(scene).last_error != message:
            scene_settings(scene).last_error = message


def _scene_key(scene: bpy.types.Scene, objects: list[bpy.types.Object] | None = None) -> tuple[Any, ...]:
    return (structure_signature(scene, objects), settings_signature(scene, objects))


def _report_once(sim: Simulation, scene: bpy.types.Scene, message: str, failed: bool = True) -> None:
    """Print ``message`` once, show it in the panel; if ``failed``, stop trying until something changes."""
    if sim.error != message:
        print(f"Unified Particles ({scene.name}): {message}", file=sys.stderr)
    sim.error = message
    if failed:
        sim.failed = True
        sim.failed_key = _scene_key(scene)
    if scene_settings(scene).last_error != message:
        scene_settings(scene).last_error = message


def _show_cached(sim: Simulation, scene: bpy.types.Scene, frame: int) -> None:
    """Show the latest cached frame at or before ``frame`` (nothing if there is none)."""
    good = [f for f in sim.cache if f <= frame]
    if sim.world is None or not good:
        return
    best = max(good)
    if sim.last_written_frame == best and sim.shown_frame == best:
        return
    try:
        sim.restore(best)
        sim.shown_frame = best
        sim.write_back(scene)
    except Exception as exc:  # a handler must not raise
        print(f"Unified Particles ({scene.name}): cannot show frame {best}: {exc}", file=sys.stderr)


def blender_physics_warnings(scene: bpy.types.Scene) -> list[str]:
    """A line per simulated object whose Blender cloth, soft body or Bullet rigid body is still on, and per
    cloth whose Tear Strain cannot act (a mesh moved by shape keys or deforming modifiers never tears:
    tearing splits the mesh's own vertices, blender/tear_mesh.py)."""
    objects = scene_reader.simulated_objects(scene)
    lines = blender_physics.warnings(scene, objects)
    for obj in objects:
        settings = object_settings(obj)
        if settings.role == "CLOTH" and settings.tear_strain > 0.0 and cloth_result.is_deformed(obj):
            lines.append(
                f"{obj.name}: Tear Strain is set, but shape keys or deforming modifiers move this cloth's "
                "mesh, so it cannot tear (apply or remove them to let it tear)"
            )
    return lines


def status_lines(scene: bpy.types.Scene) -> list[str]:
    """Human-readable status for the panel."""
    sim = runtime.SIMULATIONS.get(scene.name)
    if sim is None or sim.world is None:
        return ["Not simulated yet: change frame to start"]
    lines = []
    frames = sim.cached_range
    if frames is not None:
        lines.append(f"Frames {frames[0]}-{frames[1]} ({sim.frames_cached} cached)")
    count, live = len(sim.world.positions), int(sim.world.particle_active.sum())
    poured = f" ({live} live: inflows reserve theirs)" if live != count else ""  # see fluids.py
    lines.append(f"{count} particles{poured}, {len(sim.entries)} objects")
    joints = sim.world.joints  # rigid body constraints (blender/joints.py)
    if joints:
        lines.append(f"{len(joints)} joints, {sum(j.broken for j in joints)} broken")
    if sim.dirty_from is not None:
        lines.append(f"Settings changed: re-simulating from frame {sim.dirty_from}")
    lines += blender_physics_warnings(scene)
    for name in sorted(sim.problems):
        lines.append(f"Not simulated: {name} (see the error below)")
    excluded = scene_reader.excluded_objects(scene)
    if excluded:
        names = ", ".join(o.name for o in excluded)
        lines.append(f"Not simulated (collection excluded from the view layer): {names}")
    hidden = scene_reader.hidden_objects(scene)
    if hidden:
        lines.append(f"Hidden in the viewport, still simulated: {', '.join(o.name for o in hidden)}")
    return lines
