# SPDX-License-Identifier: GPL-3.0-or-later
"""The live simulation runner: Blender scene -> ``core.World`` -> per-frame states -> Blender objects.

Not a registered module (no ``register()``); the frame handler, the operators and the bake module use it.

Runner API (for the bake module and scripts)
-------------------------------------------
``get_simulation(scene) -> Simulation``
    The runner of ``scene`` (one per scene, kept in memory, created on demand);
    ``find_simulation(scene)`` returns it or None without creating one.
``Simulation.build(scene, depsgraph)``
    Build the ``World`` from the scene's objects with a role (evaluated meshes, world space, every
    transform honoured) and cache the start frame. Raises ``SimulationInputError`` (or ``RuntimeError``
    for Blender-side problems) with a message for the user.
``Simulation.ensure_frame(scene, frame, depsgraph=None) -> state``
    Put the world in the state of ``frame`` and return that state (what ``World.state()`` returns):
    from the cache if it is there (bit-identical), else by stepping forward from the nearest cached
    earlier frame, one ``World.step(1 / fps)`` per frame, caching each. Builds first if needed.
    Frames before the scene's start frame give the start state. Colliders are read at every frame
    stepped; if a collider is animated and frames are skipped, those frames are evaluated with
    ``scene.frame_set`` (the handler ignores these nested calls) and the scene is put back.
``Simulation.write_back(scene)``
    Show the world's current state in Blender: rigid -> object ``matrix_world`` (mesh untouched),
    cloth -> mesh vertex positions (local space), granular -> the particle object's vertices.
``Simulation.entries``
    One ``Entry`` per simulated object: ``kind`` (RIGID/CLOTH/GRANULAR/COLLIDER), ``name`` (object),
    ``body`` (the core body or collider), ``target`` (object receiving the motion: the object itself or
    a granular source's particle object).
``Simulation.adopt_state(frame, state)``
    Drop the cache and continue from a saved state at ``frame`` (resuming an interrupted bake).
``Simulation.invalidate(frame | None)``, ``Simulation.trim_cache(bytes, keep_frame)``,
``Simulation.frames_cached``, ``Simulation.memory_bytes``, ``Simulation.error``.
``paused(scene)``
    Context manager: while inside, the frame handler leaves ``scene`` alone (e.g. a bake loop that
    calls ``frame_set`` itself and drives ``ensure_frame``/its own outputs).
``reset(scene)``, ``restore_objects(objects)``, ``free_simulation(scene)``, ``free_all()``.
When ``scene.unified_particles.is_baked`` is True, the handler does nothing.

Design decisions
----------------
* Cloth simulates the object's own mesh vertices (the mesh before modifiers, placed in world space by
  the object's transform) and writes the result back into that mesh, so the object's modifiers act on
  the simulated cloth afterwards, as with Blender's Cloth modifier at the top of the stack (a
  Subdivision Surface modifier smooths the simulated cloth). Rigid bodies, granular sources and colliders
  are read from the evaluated mesh (modifiers applied).
* While the simulation has moved an object away from its start, its original data is kept in the
  .blend so Reset and Clear can restore it, also after reopening a file saved mid-simulation: a rigid
  object's world matrix in ``object.unified_particles.rest_matrix`` (``has_rest``), a cloth mesh's (or
  particle object's) vertex positions in the point attribute ``unified_particles_rest``. Both are
  dropped when the start frame is shown, so an object at its start pose carries no stale copy: moving
  it then (by hand, by a script, before a bake) moves where it starts.
* At the start frame the objects show their rest pose; if the user moves a rigid object or edits a
  cloth mesh while at the start frame, that becomes the new rest pose and the cache is rebuilt.
* Settings changes invalidate from the current frame (frames before it stay); changes of role, radius,
  objects added or removed, or any settings change made without an update callback (e.g. undo)
  rebuild from the start.
* Errors while building or stepping are caught by the frame handler, stored (``Simulation.error``,
  ``scene.unified_particles.last_error``), printed once, and the simulation waits until something
  changes (a setting, Reset, a Make operator) instead of failing again every frame.
"""

from __future__ import annotations

import contextlib
import inspect
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import bpy
import numpy as np

from . import granular, mesh_io
from .mesh_io import FloatArray
from .properties import REST_ATTRIBUTE, stiffness_to_compliance, tether_give
from .rna import mesh_of, object_settings, scene_settings

SIM_ROLES = ("RIGID", "CLOTH", "GRANULAR", "COLLIDER")
# Refuse to fill one object with more grains than this (the viewport and the solver would crawl).
MAX_GRAINS_PER_OBJECT = 2_000_000


@dataclass
class Entry:
    """One simulated object."""

    kind: str
    name: str
    body: Any
    target: str
    rest_matrix: FloatArray | None = None  # rigid: world matrix at build time
    rest_local: FloatArray | None = None  # cloth, granular: target's local vertex positions at build time
    animated: bool = False  # collider: may move from frame to frame
    last_written: Any = None  # what write_back put into Blender last (to detect user edits)


@dataclass
class Simulation:
    """Live simulation of one scene: the World, its frame cache and the objects it drives."""

    scene_name: str
    world: Any = None
    entries: list[Entry] = field(default_factory=list)
    cache: dict[int, Any] = field(default_factory=dict)
    cache_sizes: dict[int, int] = field(default_factory=dict)
    start_frame: int = 1
    fps: float = 24.0
    dirty_from: int | None = None  # first frame to re-simulate with new settings (world rebuilt)
    error: str = ""
    failed: bool = False
    failed_key: tuple[Any, ...] = ()  # scene signatures when it failed: retry once they change
    signature: tuple[Any, ...] = ()
    settings_key: tuple[Any, ...] = ()
    last_written_frame: int | None = None
    shown_frame: int | None = None  # frame whose state the world holds after ensure_frame
    ignored_settings: list[str] = field(default_factory=list)

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

    # ----------------------------------------------------------------------------- lifecycle
    def invalidate(self, frame: int | None = None) -> None:
        """Forget cached frames from ``frame`` on (None: everything, rebuild from the start)."""
        self.failed = False
        self.error = ""
        if frame is None or frame <= self.start_frame or not self.built:
            self.world = None
            self.entries = []
            self.cache.clear()
            self.cache_sizes.clear()
            self.dirty_from = None
            return
        self.dirty_from = frame if self.dirty_from is None else min(self.dirty_from, frame)

    def build(self, scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph | None = None) -> None:
        """Build the World from the scene's objects and cache the start frame."""
        if depsgraph is None:
            depsgraph = bpy.context.evaluated_depsgraph_get()
        self.invalidate(None)
        world, entries = self._make_world(scene, depsgraph)
        self.world, self.entries = world, entries
        self.start_frame = int(scene.frame_start)
        self.fps = scene.render.fps / scene.render.fps_base
        self.signature = structure_signature(scene)
        self.settings_key = settings_signature(scene)
        self._store(self.start_frame, scene, depsgraph)

    def _make_world(self, scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph) -> tuple[Any, list[Entry]]:
        from ..core import World

        settings = scene_settings(scene)
        radius = float(settings.particle_radius)
        gravity = tuple(scene.gravity[:]) if scene.use_gravity else (0.0, 0.0, 0.0)
        self.ignored_settings = []
        world = self._call(
            World,
            radius=radius,
            gravity=gravity,
            substeps=int(settings.substeps),
            iterations=int(settings.iterations),
            stabilization_iterations=int(settings.stabilization_iterations),
            relaxation=float(settings.relaxation),
            shock_propagation=float(settings.shock_propagation),
            sleep_threshold=float(settings.sleep_threshold),
            max_speed=float(settings.max_speed),
            damping=float(settings.damping),
            restitution=float(settings.restitution),
        )
        entries: list[Entry] = []
        for obj in simulated_objects(scene):
            role = object_settings(obj).role
            if obj.type != "MESH":
                raise RuntimeError(f"{obj.name!r} is not a mesh; clear it or convert it to a mesh")
            if role == "RIGID":
                entries.append(self._add_rigid(world, obj, depsgraph))
            elif role == "CLOTH":
                entries.append(self._add_cloth(world, obj))
            elif role == "GRANULAR":
                entries.append(self._add_granular(world, obj, depsgraph, radius))
            elif role == "COLLIDER":
                entries.append(self._add_collider(world, obj, depsgraph))
        return world, entries

    def _call(self, func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Call a core function with only the keyword settings it accepts (the core API may lag)."""
        try:
            params = inspect.signature(func).parameters
        except (TypeError, ValueError):
            return func(*args, **kwargs)
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
            return func(*args, **kwargs)
        accepted = {k: v for k, v in kwargs.items() if k in params}
        self.ignored_settings += [k for k in kwargs if k not in params]
        return func(*args, **accepted)

    def _add_rigid(self, world: Any, obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph) -> Entry:
        s = object_settings(obj)
        rest = rigid_rest_matrix(obj)
        remembered = _REST_MEMORY.get(obj.name)
        if not s.has_rest and remembered is not None and np.allclose(rest, remembered, rtol=0.0, atol=1e-6):
            rest = remembered
        _REST_MEMORY[obj.name] = rest
        local, tris = mesh_io.evaluated_mesh_arrays(obj, depsgraph)
        vertices = mesh_io.transform_points(rest, local)
        body = self._call(
            world.add_rigid,
            vertices,
            mesh_io.oriented_triangles(rest, tris),
            density=float(s.density),
            friction=float(s.friction),
            name=obj.name,
        )
        return Entry("RIGID", obj.name, body, obj.name, rest_matrix=rest)

    def _add_cloth(self, world: Any, obj: bpy.types.Object) -> Entry:
        s = object_settings(obj)
        mesh = mesh_of(obj)
        if mesh.shape_keys is not None:
            raise RuntimeError(f"Cloth {obj.name!r} has shape keys; remove them or clear the cloth")
        local = cloth_rest_positions(obj)
        matrix = mesh_io.matrix_to_numpy(obj.matrix_world)
        vertices = mesh_io.transform_points(matrix, local)
        tris = mesh_io.oriented_triangles(matrix, mesh_io.mesh_triangles(mesh))
        if len(tris) == 0:
            raise RuntimeError(f"Cloth {obj.name!r} has no faces")
        area = mesh_io.surface_area(vertices, tris)
        pinned = mesh_io.vertex_group_members(obj, s.pin_group) if s.pin_group else np.zeros(0, np.int64)
        body = self._call(
            world.add_cloth,
            vertices,
            tris,
            mass=max(float(s.area_density) * area, 1e-6),
            stretch_compliance=stiffness_to_compliance(s.stretch_stiffness),
            bend_compliance=stiffness_to_compliance(s.bend_stiffness),
            pinned=pinned,
            self_collision=bool(s.self_collision),
            friction=float(s.friction),
            name=obj.name,
            tether_give=tether_give(s.stretch_stiffness),
        )
        return Entry("CLOTH", obj.name, body, obj.name, rest_local=local)

    def _add_granular(
        self, world: Any, obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph, radius: float
    ) -> Entry:
        s = object_settings(obj)
        points = grain_points(obj, depsgraph, radius)
        target = s.particle_object
        if target is None:
            target = granular.create_particle_object(obj, points, radius)
        else:
            granular.update_particle_object(target, points, radius)
        mesh_io.remove_attribute(target.data, REST_ATTRIBUTE)  # the fresh grains are the rest state
        body = self._call(
            world.add_granular,
            points,
            density=float(s.density),
            friction=float(s.friction),
            cohesion=float(s.cohesion),
            name=obj.name,
        )
        return Entry("GRANULAR", obj.name, body, target.name, rest_local=mesh_io.read_positions(target.data))

    def _add_collider(self, world: Any, obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph) -> Entry:
        s = object_settings(obj)
        matrix = mesh_io.evaluated_matrix_world(obj, depsgraph)
        if s.collider_shape == "PLANE":
            normal = np.linalg.inv(matrix[:3, :3]).T @ np.array([0.0, 0.0, 1.0])
            body = self._call(
                world.add_collider_plane,
                point=matrix[:3, 3],
                normal=normal / max(np.linalg.norm(normal), 1e-30),
                friction=float(s.friction),
                name=obj.name,
            )
            return Entry("COLLIDER", obj.name, body, obj.name)
        local, tris = mesh_io.evaluated_mesh_arrays(obj, depsgraph)
        if len(tris) == 0:
            raise RuntimeError(f"Collider {obj.name!r} has no faces")
        body = self._call(
            world.add_collider_mesh, local, tris, transform=matrix, friction=float(s.friction), name=obj.name
        )
        return Entry("COLLIDER", obj.name, body, obj.name, animated=is_animated(obj))

    # ------------------------------------------------------------------------------ stepping
    def ensure_frame(
        self, scene: bpy.types.Scene, frame: int, depsgraph: bpy.types.Depsgraph | None = None
    ) -> Any:
        """Put the world in the state of ``frame`` (cached, or simulated from the nearest cached frame)."""
        from ..core import SimulationDivergedError

        if depsgraph is None:
            depsgraph = bpy.context.evaluated_depsgraph_get()
        if not self.built or int(scene.frame_start) != self.start_frame:
            self.build(scene, depsgraph)
        if self.dirty_from is not None:
            self._rebuild_from(scene, depsgraph, self.dirty_from)
        frame = max(int(frame), self.start_frame)
        self.shown_frame = frame
        if frame in self.cache:
            self._restore(frame)
            return self.cache[frame]
        if not any(f < frame for f in self.cache):  # e.g. after adopt_state() at a later frame
            self.build(scene, depsgraph)
        base = max(f for f in self.cache if f < frame)
        self._restore(base)
        current = int(scene.frame_current)
        needs_scene_at_frame = any(e.animated for e in self.entries)
        try:
            for t in range(base + 1, frame + 1):
                if t != current and needs_scene_at_frame:
                    with _nested_handler_guard():
                        scene.frame_set(t)
                    self._move_colliders(scene, None)
                else:
                    self._move_colliders(scene, depsgraph if t == current else None)
                try:
                    self.world.step(1.0 / self.fps)
                except SimulationDivergedError as exc:  # the world is back at frame t - 1 (cached)
                    self.shown_frame = t - 1
                    raise SimulationDivergedError(
                        f"Frame {t}: {exc}. Frames up to {t - 1} are kept", exc.body_names, exc.particle_count
                    ) from None
                self._store(t, scene, None)
        finally:
            if needs_scene_at_frame and int(scene.frame_current) != current:
                with _nested_handler_guard():
                    scene.frame_set(current)
        return self.cache[frame]

    def adopt_state(self, frame: int, state: Any) -> None:
        """Forget the cache and continue from ``state`` (a ``World.state()`` of this world) at ``frame``.

        For resuming an interrupted bake, after :meth:`build`. Frames before ``frame`` are simulated again
        from the start if they are asked for.
        """
        self.world.set_state(state)
        snapshot = self.world.state()
        self.cache = {int(frame): snapshot}
        self.cache_sizes = {int(frame): _nbytes(snapshot)}
        self.dirty_from = None

    def _rebuild_from(self, scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph, frame: int) -> None:
        """New settings from ``frame`` on: rebuild the World, keep the frames before, resume from them."""
        keep = {f: s for f, s in self.cache.items() if f < frame}
        sizes = {f: self.cache_sizes[f] for f in keep}
        self.build(scene, depsgraph)
        new_count = len(self.world.positions)
        compatible = bool(keep) and all(len(_positions_of(s, new_count)) == new_count for s in keep.values())
        if compatible:
            try:
                self.world.set_state(keep[max(keep)])
            except Exception:
                compatible = False
        if compatible:
            start_state = self.cache[self.start_frame]
            self.cache, self.cache_sizes = keep, sizes
            self.cache.setdefault(self.start_frame, start_state)
        self.world.set_state(self.cache[self.start_frame])

    def _move_colliders(self, scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph | None) -> None:
        for entry in self.entries:
            # Every mesh collider is read every frame (cheap: one matrix), so moving one by hand works
            # too; ``animated`` only decides whether skipped frames need the scene evaluated.
            if entry.kind == "COLLIDER" and hasattr(entry.body, "set_transform"):
                obj = bpy.data.objects.get(entry.name)
                if obj is not None:
                    entry.body.set_transform(mesh_io.evaluated_matrix_world(obj, depsgraph))

    def _store(self, frame: int, scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph | None) -> None:
        state = self.world.state()
        self.cache[frame] = state
        self.cache_sizes[frame] = _nbytes(state)
        self.trim_cache(scene_settings(scene).cache_memory_limit * 1024 * 1024, frame)

    def _restore(self, frame: int) -> None:
        # The snapshot holds mesh colliders' poses too, so stepping on from it is bit-identical.
        self.world.set_state(self.cache[frame])

    def trim_cache(self, limit: int, keep_frame: int) -> None:
        """Drop cached frames (never the start or ``keep_frame``) until under ``limit`` bytes.

        Dropped frames are re-simulated from the nearest kept earlier frame when shown again, which gives
        the same result because resuming from a state is bit-identical. Drops the frame whose neighbours
        are closest, so the kept frames stay evenly spread.
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

    # ---------------------------------------------------------------------------- write-back
    def write_back(self, scene: bpy.types.Scene) -> None:
        """Show the world's current state on the Blender objects.

        Rest data (``rest_matrix``, the ``unified_particles_rest`` attribute) exists exactly while an
        object is displaced by the simulation: it is written when an object leaves its start pose and
        dropped when the start frame is shown (then the object shows its rest pose, exactly).
        """
        at_rest = self.shown_frame == self.start_frame
        for entry in self.entries:
            target = bpy.data.objects.get(entry.target)
            if target is None:
                continue
            if entry.kind == "RIGID":
                assert entry.rest_matrix is not None
                settings = object_settings(target)
                if at_rest:
                    matrix = entry.rest_matrix
                    settings.has_rest = False
                else:
                    matrix = np.asarray(entry.body.transform, dtype=np.float64) @ entry.rest_matrix
                    if not settings.has_rest:
                        settings.rest_matrix = [float(v) for v in entry.rest_matrix.reshape(-1)]
                        settings.has_rest = True
                target.matrix_world = mesh_io.numpy_to_matrix(matrix)
                entry.last_written = mesh_io.matrix_to_numpy(target.matrix_world)
            elif entry.kind in ("CLOTH", "GRANULAR"):
                assert entry.rest_local is not None
                mesh = target.data
                if at_rest:
                    local = entry.rest_local
                    mesh_io.remove_attribute(mesh, REST_ATTRIBUTE)
                else:
                    world_positions = (
                        entry.body.vertex_positions
                        if entry.kind == "CLOTH"
                        else np.asarray(self.world.positions)[entry.body.indices]
                    )
                    inverse = np.linalg.inv(mesh_io.matrix_to_numpy(target.matrix_world))
                    local = mesh_io.transform_points(inverse, world_positions)
                    if mesh_io.read_float_vector_attribute(mesh, REST_ATTRIBUTE) is None:
                        mesh_io.write_float_vector_attribute(mesh, REST_ATTRIBUTE, entry.rest_local)
                mesh_io.write_positions(mesh, local)
                entry.last_written = np.asarray(local, dtype=np.float32)
        self.last_written_frame = self.shown_frame

    def user_edited_rest(self) -> bool:
        """True if a simulated object was moved or its mesh edited since the last write-back."""
        for entry in self.entries:
            obj = bpy.data.objects.get(entry.target)
            if obj is None or entry.last_written is None:
                continue
            if entry.kind == "RIGID":
                current = mesh_io.matrix_to_numpy(obj.matrix_world)
                if not np.allclose(current, entry.last_written, rtol=1e-5, atol=1e-6):
                    return True
            elif entry.kind == "CLOTH":
                if len(obj.data.vertices) != len(entry.last_written):
                    return True
                current32 = mesh_io.read_positions(obj.data).astype(np.float32)
                if not np.array_equal(current32, entry.last_written):
                    return True
        return False


# ------------------------------------------------------------------------------------ helpers
def _positions_of(state: Any, fallback: int) -> Any:
    """Particle positions inside a state snapshot, whatever container the core uses."""
    for key in ("positions", "x", "particle_q"):
        value = state.get(key) if isinstance(state, dict) else getattr(state, key, None)
        if value is not None:
            return value
    return range(fallback)


def _nbytes(value: Any) -> int:
    """Memory of a state snapshot (arrays inside dicts, sequences, dataclasses or objects)."""
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if isinstance(value, dict):
        return sum(_nbytes(v) for v in value.values())
    if isinstance(value, list | tuple):
        return sum(_nbytes(v) for v in value)
    if hasattr(value, "__dataclass_fields__"):
        return sum(_nbytes(getattr(value, f)) for f in value.__dataclass_fields__)
    if hasattr(value, "__dict__"):
        return sum(_nbytes(v) for v in vars(value).values())
    return 8


def simulated_objects(scene: bpy.types.Scene) -> list[bpy.types.Object]:
    """Objects of ``scene`` with a role, sorted by name (a stable build order)."""
    objects = [o for o in scene.objects if object_settings(o).role in SIM_ROLES]
    return sorted(objects, key=lambda o: o.name)


def structure_signature(
    scene: bpy.types.Scene, objects: list[bpy.types.Object] | None = None
) -> tuple[Any, ...]:
    """What decides which particles exist: objects, roles, particle radius, start frame."""
    parts: list[Any] = [round(scene_settings(scene).particle_radius, 9), scene.frame_start]
    for obj in simulated_objects(scene) if objects is None else objects:
        s = object_settings(obj)
        parts.append(
            (obj.name, s.role, s.collider_shape, s.particle_object.name if s.particle_object else "")
        )
    return tuple(parts)


_OBJECT_SETTINGS = (
    "density",
    "area_density",
    "friction",
    "stretch_stiffness",
    "bend_stiffness",
    "pin_group",
    "self_collision",
    "cohesion",
)
_SCENE_SETTINGS = (
    "substeps",
    "iterations",
    "stabilization_iterations",
    "relaxation",
    "shock_propagation",
    "sleep_threshold",
    "max_speed",
    "damping",
    "restitution",
)


def settings_signature(
    scene: bpy.types.Scene, objects: list[bpy.types.Object] | None = None
) -> tuple[Any, ...]:
    """Every setting that changes the result (to notice changes made without update callbacks)."""
    s = scene_settings(scene)
    parts: list[Any] = [getattr(s, name) for name in _SCENE_SETTINGS]
    parts += [tuple(scene.gravity[:]), scene.use_gravity, scene.render.fps, scene.render.fps_base]
    for obj in simulated_objects(scene) if objects is None else objects:
        parts.append(tuple(getattr(object_settings(obj), name) for name in _OBJECT_SETTINGS))
    return tuple(parts)


def is_animated(obj: bpy.types.Object | None) -> bool:
    """Whether an object's transform may change over time (animation, drivers, constraints, parents)."""
    depth = 0
    while obj is not None and depth < 64:
        anim = obj.animation_data
        if anim is not None and (anim.action is not None or len(anim.drivers) or len(anim.nla_tracks)):
            return True
        if len(obj.constraints):
            return True
        obj = obj.parent
        depth += 1
    return False


def rigid_rest_matrix(obj: bpy.types.Object) -> FloatArray:
    """A rigid object's world matrix before the simulation moved it (the current one if it is not moved)."""
    s = object_settings(obj)
    if s.has_rest:
        return np.asarray(s.rest_matrix, dtype=np.float64).reshape(4, 4)
    return mesh_io.matrix_to_numpy(obj.matrix_world)


def cloth_rest_positions(obj: bpy.types.Object) -> FloatArray:
    """A mesh's local vertex positions before the simulation moved them (the current ones if not moved)."""
    mesh = mesh_of(obj)
    rest = mesh_io.read_float_vector_attribute(mesh, REST_ATTRIBUTE)
    return mesh_io.read_positions(mesh) if rest is None else rest


def grain_points(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph, radius: float) -> FloatArray:
    """World-space grain centres filling the evaluated mesh of ``obj``."""
    from ..core import SimulationInputError, fill_mesh_with_grains
    from ..core.geometry import estimate_interior_count

    local, tris = mesh_io.evaluated_mesh_arrays(obj, depsgraph)
    matrix = mesh_io.matrix_to_numpy(obj.matrix_world)
    vertices = mesh_io.transform_points(matrix, local)
    tris = mesh_io.oriented_triangles(matrix, tris)
    if len(tris) == 0:
        raise SimulationInputError(f"{obj.name!r} has no faces to fill with grains")
    estimate = estimate_interior_count(vertices, tris, 2.0 * radius)
    if estimate > MAX_GRAINS_PER_OBJECT:
        raise SimulationInputError(
            f"{obj.name!r} would hold about {estimate:,} grains of radius {radius:g} m (at most "
            f"{MAX_GRAINS_PER_OBJECT:,}); raise the particle radius or make the object smaller"
        )
    points = np.asarray(fill_mesh_with_grains(vertices, tris, radius))
    if len(points) == 0:
        raise SimulationInputError(
            f"{obj.name!r} is too small to hold a grain of radius {radius:g} m; "
            "make it bigger or lower the particle radius"
        )
    return points.reshape(-1, 3)


def restore_objects(objects: list[bpy.types.Object]) -> None:
    """Put objects back as they were before the simulation moved them and forget the rest data."""
    for obj in objects:
        s = object_settings(obj)
        if s.has_rest:
            obj.matrix_world = mesh_io.numpy_to_matrix(np.asarray(s.rest_matrix).reshape(4, 4))
            s.has_rest = False
        if isinstance(obj.data, bpy.types.Mesh):
            rest = mesh_io.read_float_vector_attribute(obj.data, REST_ATTRIBUTE)
            if rest is not None:
                mesh_io.write_positions(obj.data, rest)
            mesh_io.remove_attribute(obj.data, REST_ATTRIBUTE)


# ------------------------------------------------------------------------------- registry
_SIMULATIONS: dict[str, Simulation] = {}
# Rigid object name -> the exact rest matrix of its last build. Blender re-derives matrix_world from
# location/rotation/scale (or keyframes), which changes the last bits; an object found within 1e-6 of its
# remembered rest is taken to be at that rest, so rebuilding (after Reset, a settings change at the start
# frame, or a bake) starts bit-identically.
_REST_MEMORY: dict[str, FloatArray] = {}
_PAUSED: set[str] = set()
_IN_HANDLER: list[bool] = [False]


def get_simulation(scene: bpy.types.Scene) -> Simulation:
    """The runner of ``scene`` (created, unbuilt, if there is none)."""
    sim = _SIMULATIONS.get(scene.name)
    if sim is None:
        sim = _SIMULATIONS[scene.name] = Simulation(scene.name, start_frame=int(scene.frame_start))
    return sim


def find_simulation(scene: bpy.types.Scene) -> Simulation | None:
    """The runner of ``scene`` if there is one (never creates one)."""
    return _SIMULATIONS.get(scene.name)


def invalidate(scene: bpy.types.Scene, frame: int | None) -> None:
    """Settings changed at ``frame`` (None: structure changed): re-simulate from there."""
    sim = _SIMULATIONS.get(scene.name)
    if sim is not None:
        sim.invalidate(frame)
    if scene_settings(scene).last_error:
        scene_settings(scene).last_error = ""


def free_simulation(scene: bpy.types.Scene) -> None:
    _SIMULATIONS.pop(scene.name, None)


def free_all() -> None:
    """Forget every simulation (a file is being loaded, or the add-on is disabled)."""
    _SIMULATIONS.clear()
    _PAUSED.clear()
    _REST_MEMORY.clear()


def reset(scene: bpy.types.Scene) -> None:
    """Restore every simulated object to its rest state and drop the simulation and its cache."""
    objects = [o for o in scene.objects if object_settings(o).role in SIM_ROLES]
    restore_objects(objects)
    for obj in objects:
        if object_settings(obj).role == "GRANULAR":
            target = object_settings(obj).particle_object
            if target is not None:
                restore_objects([target])
    free_simulation(scene)
    scene_settings(scene).last_error = ""


@contextlib.contextmanager
def paused(scene: bpy.types.Scene) -> Iterator[None]:
    """While inside, the frame handler leaves ``scene`` alone."""
    name = scene.name
    _PAUSED.add(name)
    try:
        yield
    finally:
        _PAUSED.discard(name)


@contextlib.contextmanager
def _nested_handler_guard() -> Iterator[None]:
    previous = _IN_HANDLER[0]
    _IN_HANDLER[0] = True
    try:
        yield
    finally:
        _IN_HANDLER[0] = previous


def _report_once(sim: Simulation, scene: bpy.types.Scene, message: str, failed: bool = True) -> None:
    """Print ``message`` once, show it in the panel; if ``failed``, stop trying until something changes."""
    if sim.error != message:
        print(f"Unified Particles ({scene.name}): {message}", file=sys.stderr)
    sim.error = message
    if failed:
        sim.failed = True
        sim.failed_key = (structure_signature(scene), settings_signature(scene))
    if scene_settings(scene).last_error != message:
        scene_settings(scene).last_error = message


def on_frame_change(scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph | None) -> None:
    """What the frame handler does: show the simulation at the scene's current frame."""
    if _IN_HANDLER[0] or scene.name in _PAUSED:
        return
    settings = getattr(scene, "unified_particles", None)
    if settings is None or settings.is_baked:
        return
    if not any(object_settings(o).role in SIM_ROLES for o in scene.objects):
        if scene.name in _SIMULATIONS:
            free_simulation(scene)
        return
    sim = get_simulation(scene)
    with _nested_handler_guard():
        _show_frame(sim, scene, depsgraph)


def _show_frame(sim: Simulation, scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph | None) -> None:
    from ..core import SimulationInputError

    frame = int(scene.frame_current)
    objects = simulated_objects(scene)
    if sim.built:
        if structure_signature(scene, objects) != sim.signature:
            sim.invalidate(None)
        elif sim.last_written_frame == sim.start_frame and sim.user_edited_rest():
            _adopt_user_edits(sim)
            sim.invalidate(None)
        elif sim.dirty_from is None and settings_signature(scene, objects) != sim.settings_key:
            sim.invalidate(None)
    if sim.failed:
        if (structure_signature(scene, objects), settings_signature(scene, objects)) == sim.failed_key:
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
        sim.ensure_frame(scene, frame, depsgraph)
        sim.write_back(scene)
    except SimulationInputError as exc:
        _report_once(sim, scene, str(exc))
        _show_cached(sim, scene, frame)  # e.g. after a blow-up: the last good frame
    except Exception as exc:  # a handler must not raise: show it in the panel instead
        _report_once(sim, scene, f"{type(exc).__name__}: {exc}")
    else:
        sim.error = ""
        if sim.ignored_settings:
            print(
                f"Unified Particles: solver ignores settings {sorted(set(sim.ignored_settings))}",
                file=sys.stderr,
            )
            sim.ignored_settings = []
        if scene_settings(scene).last_error:
            scene_settings(scene).last_error = ""


def _show_cached(sim: Simulation, scene: bpy.types.Scene, frame: int) -> None:
    """Show the latest cached frame at or before ``frame`` (nothing if there is none)."""
    good = [f for f in sim.cache if f <= frame]
    if sim.world is None or not good:
        return
    best = max(good)
    if sim.last_written_frame == best and sim.shown_frame == best:
        return
    try:
        sim._restore(best)
        sim.shown_frame = best
        sim.write_back(scene)
    except Exception as exc:  # a handler must not raise
        print(f"Unified Particles ({scene.name}): cannot show frame {best}: {exc}", file=sys.stderr)


def _adopt_user_edits(sim: Simulation) -> None:
    """The user changed objects at the start frame: their current pose becomes the rest pose."""
    for entry in sim.entries:
        obj = bpy.data.objects.get(entry.target)
        if obj is None:
            continue
        if entry.kind == "RIGID":
            object_settings(obj).has_rest = False
            _REST_MEMORY.pop(entry.name, None)
        elif entry.kind == "CLOTH":
            mesh_io.remove_attribute(obj.data, REST_ATTRIBUTE)


def status_lines(scene: bpy.types.Scene) -> list[str]:
    """Human-readable status for the panel."""
    sim = _SIMULATIONS.get(scene.name)
    if sim is None or not sim.built:
        return ["Not simulated yet: change frame to start"]
    lines = []
    frames = sim.cached_range
    if frames is not None:
        lines.append(f"Frames {frames[0]}-{frames[1]} ({sim.frames_cached} cached)")
    particles = len(sim.world.positions) if sim.world is not None else 0
    lines.append(f"{particles} particles, {len(sim.entries)} objects")
    if sim.dirty_from is not None:
        lines.append(f"Settings changed: re-simulating from frame {sim.dirty_from}")
    return lines
