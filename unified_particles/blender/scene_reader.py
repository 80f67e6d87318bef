# SPDX-License-Identifier: GPL-3.0-or-later
"""Frame path, stage 1: read the Blender scene into a ``core.World`` and say what changed since.

:func:`make_world` builds the World from the scene's objects with a role (evaluated meshes, world
space, every transform honoured) and returns one :class:`Entry` per object, linking it to its core
body. :func:`move_colliders` reads the colliders' poses of the current frame into the World.
:func:`structure_signature` and :func:`settings_signature` are the change detector: the live
simulation re-simulates when they change, and the bake hashes :func:`settings_signature` (plus its
frames and outputs) to tell when a bake is Outdated.

Design decisions:

* Cloth simulates the object's own mesh vertices (the mesh before modifiers, placed in world space
  by the object's transform), so the object's modifiers act on the simulated cloth afterwards, as
  with Blender's Cloth modifier at the top of the stack. Rigid bodies, granular sources and
  colliders are read from the evaluated mesh (modifiers applied).
* While the simulation has moved an object away from its start, its original data is kept in the
  .blend (``rest_matrix``/``has_rest`` on a rigid object, the ``REST_ATTRIBUTE`` point attribute on
  a cloth mesh or particle object); the reader builds from that rest data when it is there.

Imports the base modules (``mesh_io``, ``granular``, ``materials``, ``settings_ui``, ``runtime``,
``rna``) and the core.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import bpy
import numpy as np

from ..core import MeshCollider, SimulationInputError, World, fill_mesh_with_grains
from ..core.geometry import estimate_interior_count
from . import granular, mesh_io, runtime
from .materials import stiffness_to_compliance, tether_give
from .mesh_io import REST_ATTRIBUTE, FloatArray
from .rna import mesh_of, object_settings, scene_settings
from .settings_ui import panel_setting_names, world_keywords

SIM_ROLES = ("RIGID", "CLOTH", "GRANULAR", "COLLIDER")
# Refuse to fill one object with more grains than this (the viewport and the solver would crawl).
MAX_GRAINS_PER_OBJECT = 2_000_000
# Smallest cloth mass, kg: a zero-area cloth still gets finite particle masses.
MIN_CLOTH_MASS = 1e-6
# How many parents up is_animated looks (a guard against a parent loop; Blender forbids them).
MAX_PARENT_DEPTH = 64
# Guards the normalisation of a plane collider's normal (a zero-scaled object has none).
_TINY_LENGTH = 1e-30
# A rigid object within this of its remembered rest matrix is taken to be at that rest (see runtime).
REST_MATCH_TOLERANCE = 1e-6

# Object settings the reader passes to the core: a change re-simulates (role, shape and pointers are in
# structure_signature too, since they change which particles exist).
OBJECT_SETTINGS = (
    "role",
    "collider_shape",
    "density",
    "area_density",
    "friction",
    "stretch_stiffness",
    "bend_stiffness",
    "pin_group",
    "self_collision",
    "cohesion",
)


@dataclass
class Entry:
    """One simulated object and its core body.

    ``kind`` is RIGID/CLOTH/GRANULAR/COLLIDER, ``name`` the object, ``target`` the object receiving the
    motion (the object itself or a granular source's particle object).
    """

    kind: str
    name: str
    body: Any
    target: str
    rest_matrix: FloatArray | None = None  # rigid: world matrix at build time
    rest_local: FloatArray | None = None  # cloth, granular: target's local vertex positions at build time
    animated: bool = False  # collider: may move from frame to frame
    last_written: Any = None  # what write-back put into Blender last (to detect user edits)


def simulated_objects(scene: bpy.types.Scene) -> list[bpy.types.Object]:
    """Objects of ``scene`` with a role, sorted by name (a stable build order)."""
    objects = [o for o in scene.objects if object_settings(o).role in SIM_ROLES]
    return sorted(objects, key=lambda o: o.name)


def make_world(scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph) -> tuple[World, list[Entry]]:
    """The World of the scene's simulated objects at their rest state, and one Entry per object."""
    settings = scene_settings(scene)
    radius = float(settings.particle_radius)
    gravity = tuple(scene.gravity[:]) if scene.use_gravity else (0.0, 0.0, 0.0)
    keywords: dict[str, Any] = world_keywords(settings)
    world = World(radius=radius, gravity=gravity, **keywords)
    entries: list[Entry] = []
    for obj in simulated_objects(scene):
        role = object_settings(obj).role
        if obj.type != "MESH":
            raise RuntimeError(f"{obj.name!r} is not a mesh; clear it or convert it to a mesh")
        if role == "RIGID":
            entries.append(_add_rigid(world, obj, depsgraph))
        elif role == "CLOTH":
            entries.append(_add_cloth(world, obj))
        elif role == "GRANULAR":
            entries.append(_add_granular(world, obj, depsgraph, radius))
        elif role == "COLLIDER":
            entries.append(_add_collider(world, obj, depsgraph))
    return world, entries


def _add_rigid(world: World, obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph) -> Entry:
    s = object_settings(obj)
    rest = rigid_rest_matrix(obj)
    remembered = runtime.REST_MEMORY.get(obj.name)
    if (
        not s.has_rest
        and remembered is not None
        and np.allclose(rest, remembered, rtol=0.0, atol=REST_MATCH_TOLERANCE)
    ):
        rest = remembered
    runtime.REST_MEMORY[obj.name] = rest
    local, tris = mesh_io.evaluated_mesh_arrays(obj, depsgraph)
    body = world.add_rigid(
        mesh_io.transform_points(rest, local),
        mesh_io.oriented_triangles(rest, tris),
        density=float(s.density),
        friction=float(s.friction),
        name=obj.name,
    )
    return Entry("RIGID", obj.name, body, obj.name, rest_matrix=rest)


def _add_cloth(world: World, obj: bpy.types.Object) -> Entry:
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
    body = world.add_cloth(
        vertices,
        tris,
        mass=max(float(s.area_density) * area, MIN_CLOTH_MASS),
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
    world: World, obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph, radius: float
) -> Entry:
    s = object_settings(obj)
    points = grain_points(obj, depsgraph, radius)
    target = s.particle_object
    if target is None:
        target = granular.create_particle_object(obj, points, radius)
    else:
        granular.update_particle_object(target, points, radius)
    mesh = mesh_of(target)
    mesh_io.remove_attribute(mesh, REST_ATTRIBUTE)  # the fresh grains are the rest state
    body = world.add_granular(
        points,
        density=float(s.density),
        friction=float(s.friction),
        cohesion=float(s.cohesion),
        name=obj.name,
    )
    return Entry("GRANULAR", obj.name, body, target.name, rest_local=mesh_io.read_positions(mesh))


def _add_collider(world: World, obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph) -> Entry:
    s = object_settings(obj)
    matrix = mesh_io.evaluated_matrix_world(obj, depsgraph)
    if s.collider_shape == "PLANE":
        normal = np.linalg.inv(matrix[:3, :3]).T @ np.array([0.0, 0.0, 1.0])
        plane = world.add_collider_plane(
            point=matrix[:3, 3],
            normal=normal / max(np.linalg.norm(normal), _TINY_LENGTH),
            friction=float(s.friction),
            name=obj.name,
        )
        return Entry("COLLIDER", obj.name, plane, obj.name)
    local, tris = mesh_io.evaluated_mesh_arrays(obj, depsgraph)
    if len(tris) == 0:
        raise RuntimeError(f"Collider {obj.name!r} has no faces")
    body = world.add_collider_mesh(local, tris, transform=matrix, friction=float(s.friction), name=obj.name)
    return Entry("COLLIDER", obj.name, body, obj.name, animated=is_animated(obj))


def move_colliders(entries: list[Entry], depsgraph: bpy.types.Depsgraph | None) -> None:
    """Give every mesh collider its object's pose of the current frame.

    Every mesh collider is read every frame (cheap: one matrix), so moving one by hand works too;
    ``Entry.animated`` only decides whether skipped frames need the scene evaluated.
    """
    for entry in entries:
        if isinstance(entry.body, MeshCollider):  # planes are static
            obj = bpy.data.objects.get(entry.name)
            if obj is not None:
                entry.body.set_transform(mesh_io.evaluated_matrix_world(obj, depsgraph))


# ----------------------------------------------------------------------------- change detection
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


def settings_signature(
    scene: bpy.types.Scene, objects: list[bpy.types.Object] | None = None, key: Any = None
) -> dict[str, Any]:
    """Every setting that changes the simulated motion, as JSON-able data: the one change detector.

    Solver settings (every declared panel setting), particle radius, gravity, frame rate, and each
    simulated object's ``OBJECT_SETTINGS`` under ``key(obj)`` (default: its name; the bake uses the
    object's stable cache id). The live simulation compares it to notice changes made without update
    callbacks (undo, scripts); the bake hashes it, with its frames and outputs, to tell it is Outdated.
    """
    s = scene_settings(scene)
    solver = {name: getattr(s, name) for name in panel_setting_names()}
    solver["particle_radius"] = s.particle_radius
    objects_part = {}
    for obj in simulated_objects(scene) if objects is None else objects:
        settings = object_settings(obj)
        name = str(key(obj)) if key is not None else obj.name
        objects_part[name] = {prop: getattr(settings, prop) for prop in OBJECT_SETTINGS}
    return {
        "solver": solver,
        "gravity": list(scene.gravity[:]) if scene.use_gravity else [0.0, 0.0, 0.0],
        "fps": [scene.render.fps, scene.render.fps_base],
        "objects": objects_part,
    }


# ------------------------------------------------------------------------------------- reading
def is_animated(obj: bpy.types.Object | None) -> bool:
    """Whether an object's transform may change over time (animation, drivers, constraints, parents)."""
    depth = 0
    while obj is not None and depth < MAX_PARENT_DEPTH:
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
