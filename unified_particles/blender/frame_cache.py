# SPDX-License-Identifier: GPL-3.0-or-later
"""Frame path, stage 2: one World and a snapshot of its state per frame, stepped on demand.

:class:`FrameCache` owns the scene's ``core.World`` (built by :mod:`.scene_reader`) and a
``core.state.Snapshot`` per simulated frame. :meth:`FrameCache.ensure_frame` puts the World in the
state of a frame: from the cache if it is there (bit-identical), else by stepping forward from the
nearest cached earlier frame, one ``World.step(1 / fps)`` per frame, caching each. The cache stays
under the scene's memory limit by dropping frames in between (:meth:`FrameCache.trim_cache`); they
are simulated again when shown, with the same result, because resuming from a snapshot is
bit-identical. Used by the live simulation (:mod:`.simulation`) and by the bake (through it).

Stepping one frame is :func:`step_frame`: the scene of that frame read into the World (one call to
the reader), the step, and the outflows drained. The cache writes into Blender only through stage 3,
:mod:`.writeback`: what the reader needs before it reads (``prepare_build``, ``show_animation_poses``)
and the particle objects it filled after (``show_fills``).

Imports ``scene_reader``, ``writeback`` and the base modules.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import bpy

from ..core import SimulationDivergedError, SimulationInputError, World
from ..core.state import Snapshot
from . import fields, fluids, runtime, scene_reader, whitewater, writeback
from .rna import frame_seconds, scene_settings
from .scene_reader import Entry

BYTES_PER_MIB = 1024 * 1024


def _read_world(
    scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph, problems: dict[str, str]
) -> tuple[World, list[Entry]]:
    """Stage 1 between its writers: what the reader reads from made, the World read, the particle
    objects filled (see :mod:`.writeback`)."""
    writeback.prepare_build(scene, depsgraph)
    world, entries = scene_reader.make_world(scene, depsgraph, problems)
    writeback.show_fills(entries, float(scene_settings(scene).particle_radius))
    return world, entries


def step_frame(
    world: World,
    entries: list[Entry],
    scene: bpy.types.Scene,
    frame: int,
    depsgraph: bpy.types.Depsgraph | None,
    dt: float,
) -> None:
    """Step ``world`` (at ``frame - 1``) into ``frame`` with the scene as it is at ``frame``: the one
    per-frame sync.

    The scene must show ``frame`` already (``depsgraph`` evaluated there, or None after a
    ``scene.frame_set``). Constrained kinematic bodies are posed for Blender's evaluation (the one
    write, :func:`.writeback.show_animation_poses`), the scene is read (:func:`.scene_reader.read_frame`:
    colliders, pins, kinematic bodies, force fields, inflows), the World steps ``dt`` seconds, and the
    fluid inside outflows goes. Raises ``SimulationDivergedError`` with the World back at ``frame - 1``.
    """
    writeback.show_animation_poses(entries)
    scene_reader.read_frame(world, entries, scene, frame, depsgraph)
    world.step(dt)
    fluids.drain_outflows(world, entries, depsgraph)
    whitewater.step(entries, world, dt)


@dataclass
class FrameCache:
    """The World of one scene, its per-frame snapshots and the objects it simulates."""

    scene_name: str
    world: World | None = None
    entries: list[Entry] = field(default_factory=list)
    cache: dict[int, Snapshot] = field(default_factory=dict)
    cache_sizes: dict[int, int] = field(default_factory=dict)
    # Per frame: each liquid's whitewater state (``Whitewater.state()``) by its source's name.
    whitewater_cache: dict[int, dict[str, Any]] = field(default_factory=dict)
    start_frame: int = 1
    frame_dt: float = 1.0 / 24.0  # simulated seconds per frame (rna.frame_seconds: Speed / fps)
    dirty_from: int | None = None  # first frame to re-simulate with new settings (world rebuilt)
    signature: tuple[Any, ...] = ()  # scene_reader.structure_signature at build
    settings_key: dict[str, Any] = field(default_factory=dict)  # scene_reader.settings_signature at build
    shown_frame: int | None = None  # frame whose state the world holds after ensure_frame
    # The cached snapshot the world's state equals now (the last stored or restored), None if unknown:
    # stepping on from it needs no restore. Restoring rebuilt the liquid's pair list every frame (17 of
    # 305 ms CPU per frame for 2,925 particles in benchmarks/small_liquid.py), to the same list.
    holds: Snapshot | None = None
    problems: dict[str, str] = field(default_factory=dict)  # objects left out of the build -> why

    # ----------------------------------------------------------------------------------- info
    @property
    def built(self) -> bool:
        return self.world is not None

    @property
    def frames_cached(self) -> int:
        return len(self.cache)

    @property
    def memory_bytes(self) -> int:
        return int(sum(self.cache_sizes.values()))

    @property
    def cached_range(self) -> tuple[int, int] | None:
        if not self.cache:
            return None
        return min(self.cache), max(self.cache)

    def _world(self) -> World:
        if self.world is None:
            raise RuntimeError("the simulation is not built")
        return self.world

    # ----------------------------------------------------------------------------- lifecycle
    def invalidate(self, frame: int | None = None) -> None:
        """Forget cached frames from ``frame`` on (None: everything, rebuild from the start)."""
        self.holds = None
        if frame is None or frame <= self.start_frame or not self.built:
            self.world = None
            self.entries = []
            self.cache.clear()
            self.cache_sizes.clear()
            self.whitewater_cache.clear()
            self.dirty_from = None
            self.problems = {}
            return
        self.dirty_from = frame if self.dirty_from is None else min(self.dirty_from, frame)

    def build(self, scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph | None = None) -> None:
        """Build the World from the scene's objects and cache the start frame.

        Raises ``SimulationInputError`` (or ``RuntimeError`` for Blender-side problems) with a message
        for the user.
        """
        if depsgraph is None:
            depsgraph = bpy.context.evaluated_depsgraph_get()
        self.invalidate(None)
        problems: dict[str, str] = {}
        start, current = int(scene.frame_start), int(scene.frame_current)
        if current != start and any(
            scene_reader.is_animated(o) for o in scene_reader.simulated_objects(scene)
        ):
            # The start pose is the scene at the start frame (parents, colliders), whatever frame is shown.
            try:
                with runtime.nested_handler_guard():
                    scene.frame_set(start)
                self.world, self.entries = _read_world(scene, bpy.context.evaluated_depsgraph_get(), problems)
            finally:
                with runtime.nested_handler_guard():
                    scene.frame_set(current)
        else:
            self.world, self.entries = _read_world(scene, depsgraph, problems)
        self.problems = problems
        self.start_frame = start
        self.frame_dt = frame_seconds(scene)
        self.signature = scene_reader.structure_signature(scene)
        self.settings_key = scene_reader.settings_signature(scene)
        self._store(self.start_frame, scene)

    # ------------------------------------------------------------------------------ stepping
    def ensure_frame(
        self, scene: bpy.types.Scene, frame: int, depsgraph: bpy.types.Depsgraph | None = None
    ) -> Snapshot:
        """Put the world in the state of ``frame`` (cached, or simulated from the nearest cached frame).

        Builds first if needed. Frames before the scene's start frame give the start state. Colliders
        are read at every frame stepped; if a collider is animated and frames are skipped, those frames
        are evaluated with ``scene.frame_set`` (the handler ignores these nested calls) and the scene is
        put back.
        """
        if depsgraph is None:
            depsgraph = bpy.context.evaluated_depsgraph_get()
        if not self.built or int(scene.frame_start) != self.start_frame:
            self.build(scene, depsgraph)
        if self.dirty_from is not None:
            self._rebuild_from(scene, depsgraph, self.dirty_from)
        frame = max(int(frame), self.start_frame)
        self.shown_frame = frame
        if frame in self.cache:
            if self.holds is not self.cache[frame]:
                self.restore(frame)
            return self.cache[frame]
        if not any(f < frame for f in self.cache):  # e.g. after adopt_state() at a later frame
            self.build(scene, depsgraph)
        world = self._world()
        base = max(f for f in self.cache if f < frame)
        if self.holds is not self.cache[base]:
            self.restore(base)
        current = int(scene.frame_current)
        needs_scene_at_frame = any(e.animated for e in self.entries) or fields.any_animated(scene)
        try:
            away = False  # the scene was evaluated at another frame than the current one
            for t in range(base + 1, frame + 1):
                graph = depsgraph if t == current else None  # the caller's depsgraph shows this frame
                if needs_scene_at_frame and (t != current or away):
                    with runtime.nested_handler_guard():
                        scene.frame_set(t)
                    away = t != current
                    graph = None  # read the objects as frame_set left them
                self.holds = None  # until stored: an error while stepping leaves the world between frames
                try:
                    step_frame(world, self.entries, scene, t, graph, self.frame_dt)
                except SimulationDivergedError as exc:  # the world is back at frame t - 1 (cached)
                    self.shown_frame = t - 1
                    raise SimulationDivergedError(
                        f"Frame {t}: {exc}. Frames up to {t - 1} are kept", exc.body_names, exc.particle_count
                    ) from None
                self._store(t, scene)
        finally:
            if needs_scene_at_frame and int(scene.frame_current) != current:
                with runtime.nested_handler_guard():
                    scene.frame_set(current)
        return self.cache[frame]

    def adopt_state(self, frame: int, state: Snapshot) -> None:
        """Forget the cache and continue from ``state`` (a snapshot of this world) at ``frame``.

        For resuming an interrupted bake, after :meth:`build`. Frames before ``frame`` are simulated
        again from the start if they are asked for.
        """
        world = self._world()
        world.set_state(state)
        snapshot = self.holds = world.state()
        self.cache = {int(frame): snapshot}
        self.cache_sizes = {int(frame): snapshot.nbytes}
        self.whitewater_cache = {int(frame): self._whitewater_states()}
        self.dirty_from = None

    def _rebuild_from(self, scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph, frame: int) -> None:
        """New settings from ``frame`` on: rebuild the World, keep the frames before, resume from them."""
        keep = {f: s for f, s in self.cache.items() if f < frame}
        sizes = {f: self.cache_sizes[f] for f in keep}
        foam = {f: self.whitewater_cache.get(f, {}) for f in keep}
        self.build(scene, depsgraph)
        world = self._world()
        new_count = len(world.positions)
        compatible = bool(keep) and all(len(s.positions) == new_count for s in keep.values())
        if compatible:
            try:
                world.set_state(keep[max(keep)])
            except SimulationInputError:  # e.g. another number of rigid bodies: start over
                compatible = False
        if compatible:
            start_state = self.cache[self.start_frame]
            start_foam = self.whitewater_cache[self.start_frame]
            self.cache, self.cache_sizes, self.whitewater_cache = keep, sizes, foam
            self.cache.setdefault(self.start_frame, start_state)
            self.whitewater_cache[self.start_frame] = start_foam
        self.restore(self.start_frame)

    def _whitewater_states(self) -> dict[str, Any]:
        return {e.name: e.whitewater.state() for e in self.entries if e.whitewater is not None}

    def _store(self, frame: int, scene: bpy.types.Scene) -> None:
        snapshot = self.holds = self._world().state()
        self.cache[frame] = snapshot
        foam = self.whitewater_cache[frame] = self._whitewater_states()
        self.cache_sizes[frame] = snapshot.nbytes + sum(int(s["positions"].nbytes) * 2 for s in foam.values())
        self.trim_cache(scene_settings(scene).cache_memory_limit * BYTES_PER_MIB, frame)

    def restore(self, frame: int) -> None:
        """Put the world in the cached state of ``frame`` (mesh colliders' poses included, so stepping
        on from it is bit-identical), the liquids' whitewater too."""
        self.holds = None
        self._world().set_state(self.cache[frame])
        states = self.whitewater_cache.get(frame, {})
        for entry in self.entries:
            if entry.whitewater is not None and entry.name in states:
                entry.whitewater.set_state(states[entry.name])
        self.holds = self.cache[frame]

    def trim_cache(self, limit: int, keep_frame: int) -> None:
        """Drop cached frames (never the start or ``keep_frame``) until under ``limit`` bytes.

        Drops the frame whose neighbours are closest, so the kept frames stay evenly spread.
        """
        while self.memory_bytes > limit and len(self.cache) > 2:
            frames = sorted(self.cache)
            best, best_gap = None, None
            for i in range(1, len(frames) - 1):
                f = frames[i]
                if f in (self.start_frame, keep_frame):
                    continue
                gap = frames[i + 1] - frames[i - 1]
                if best_gap is None or gap < best_gap:
                    best, best_gap = f, gap
            if best is None:
                break
            del self.cache[best], self.cache_sizes[best]
            self.whitewater_cache.pop(best, None)
