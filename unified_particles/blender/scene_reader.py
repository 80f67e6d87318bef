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

Imports the base modules (``mesh_io``, ``granular``, ``fluids``, ``materials``, ``settings_ui``,
``rna``) and the core.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from typing import Any

import bpy
import numpy as np
from mathutils import Euler, Matrix, Quaternion, Vector

from ..core import MeshCollider, SimulationInputError, World, fill_mesh_with_grains
from . import cloth_result, fields, fluids, granular, mesh_io
from .materials import TETHER_GIVE, soft_pin_frequency, stiffness_to_compliance
from .mesh_io import REST_ATTRIBUTE, FloatArray, is_animated
from .rna import mesh_of, object_bake, object_settings, scene_settings
from .settings_ui import panel_setting_names, world_keywords

SIM_ROLES = ("RIGID", "CLOTH", "GRANULAR", "COLLIDER", "FLUID", "INFLOW", "OUTFLOW")
# Roles that only act on the others (nothing of theirs moves).
_PASSIVE_ROLES = ("COLLIDER", "OUTFLOW")
# Refuse to fill one object with more grains than this (the viewport and the solver would crawl).
MAX_GRAINS_PER_OBJECT = 2_000_000
# Smallest cloth mass, kg: a zero-area cloth still gets finite particle masses.
MIN_CLOTH_MASS = 1e-6
# Guards the normalisation of a plane collider's normal (a zero-scaled object has none).
_TINY_LENGTH = 1e-30

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
    "pin_stiffness",
    "self_collision",
    "cohesion",
    "field_weight",  # force fields (blender/fields.py)
)
# Settings of liquids (Fluid, Inflow: blender/fluids.py), in the change detector for those roles only (so
# bakes of other objects made before fluids existed stay up to date).
FLUID_SETTINGS = ("viscosity", "fluid_cohesion", "adhesion", "vorticity")
INFLOW_SETTINGS = ("flow_velocity", "flow_axis", "flow_start", "flow_end")


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
    animated: bool = False  # collider, or rigid child of a parent: may move from frame to frame
    last_written: Any = None  # what write-back put into Blender last (to detect user edits)
    kinematic: bool = False  # rigid with Animated on or animated: read it and the pose every frame
    own_animation: bool = False  # rigid whose own transform is animated (keyframes, drivers, constraints)
    rest_values: tuple[str, list[float]] | None = None  # own_animation: typed transform at the start frame
    deformed: bool = (
        False  # cloth moved by shape keys or deforming modifiers: result after them (cloth_result)
    )
    may_deform: bool = False  # mesh collider with shape keys or modifiers: its mesh is read every frame
    emitter: Any = None  # inflow: its fluids.InflowPlan


def view_layer_of(scene: bpy.types.Scene) -> bpy.types.ViewLayer | None:
    """The view layer whose depsgraph the simulation follows: the window's if it shows ``scene``."""
    context = bpy.context
    if getattr(context, "scene", None) == scene and getattr(context, "view_layer", None) is not None:
        return context.view_layer
    return scene.view_layers[0] if len(scene.view_layers) else None


def _in_view_layer(scene: bpy.types.Scene) -> set[str] | None:
    layer = view_layer_of(scene)
    return None if layer is None else {o.name for o in layer.objects}


def simulated_objects(scene: bpy.types.Scene) -> list[bpy.types.Object]:
    """Objects of ``scene`` with a role in its view layer, sorted by name (a stable build order).

    As with Blender's rigid bodies, an object hidden in the viewport still simulates, and one in a
    collection excluded from the view layer (not in the view layer's depsgraph) does not.
    """
    names = _in_view_layer(scene)
    objects = [
        o
        for o in scene.objects
        if object_settings(o).role in SIM_ROLES and (names is None or o.name in names)
    ]
    return sorted(objects, key=lambda o: o.name)


def excluded_objects(scene: bpy.types.Scene) -> list[bpy.types.Object]:
    """Objects with a role that are not simulated because the view layer excludes them."""
    names = _in_view_layer(scene)
    if names is None:
        return []
    return sorted(
        (o for o in scene.objects if object_settings(o).role in SIM_ROLES and o.name not in names),
        key=lambda o: o.name,
    )


def hidden_objects(scene: bpy.types.Scene) -> list[bpy.types.Object]:
    """Simulated objects hidden in the viewport (they simulate all the same)."""
    layer = view_layer_of(scene)

    def hidden(o: bpy.types.Object) -> bool:
        return bool(o.hide_viewport or (layer is not None and o.hide_get(view_layer=layer)))

    # A granular source is hidden by the add-on itself: what the user sees (or hides) is its grains.
    return [
        o
        for o in simulated_objects(scene)
        if (hidden(object_settings(o).particle_object) if object_settings(o).particle_object else hidden(o))
    ]


def _problem_text(obj: bpy.types.Object, exc: Exception) -> str:
    message = (
        str(exc) if isinstance(exc, (SimulationInputError, RuntimeError)) else f"{type(exc).__name__}: {exc}"
    )
    return message if repr(obj.name) in message else f"{obj.name!r}: {message}"


def make_world(
    scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph, problems: dict[str, str] | None = None
) -> tuple[World, list[Entry]]:
    """The World of the scene's simulated objects at their rest state, and one Entry per object.

    An object that cannot be built (bad mesh, too many particles, ...) is left out and the others are
    simulated: its message goes into ``problems`` (object name -> message) if given. Without
    ``problems``, or if no object could be built, the first problem raises.
    """
    settings = scene_settings(scene)
    radius = float(settings.particle_radius)
    gravity = tuple(scene.gravity[:]) if scene.use_gravity else (0.0, 0.0, 0.0)
    keywords: dict[str, Any] = world_keywords(settings)
    world = World(radius=radius, gravity=gravity, **keywords)
    entries: list[Entry] = []
    found: dict[str, str] = {}
    first: Exception | None = None
    for obj in simulated_objects(scene):
        role = object_settings(obj).role
        try:
            if obj.type != "MESH":
                raise RuntimeError(f"{obj.name!r} is not a mesh; clear it or convert it to a mesh")
            if role == "RIGID":
                entries.append(_add_rigid(world, obj, depsgraph))
            elif role == "CLOTH":
                entries.append(_add_cloth(world, obj, depsgraph))
            elif role == "GRANULAR":
                entries.append(_add_granular(world, obj, depsgraph, radius))
            elif role == "COLLIDER":
                entries.append(_add_collider(world, obj, depsgraph))
            elif role == "FLUID":
                entries.append(_add_fluid(world, obj, depsgraph, radius))
            elif role == "INFLOW":
                entries.append(_add_inflow(world, obj, depsgraph, radius, scene))
            elif role == "OUTFLOW":
                entries.append(_add_outflow(obj, depsgraph, radius))
        except Exception as exc:
            if problems is None:
                raise
            found[obj.name] = _problem_text(obj, exc)
            first = first if first is not None else exc
    if first is not None:
        assert problems is not None
        if all(e.kind in _PASSIVE_ROLES for e in entries):  # nothing left to simulate: the whole simulation
            if isinstance(first, SimulationInputError):  # fails with this message (naming the object)
                raise SimulationInputError(next(iter(found.values()))) from None
            raise first
        problems.update(found)
    return world, entries


def _add_rigid(world: World, obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph) -> Entry:
    s = object_settings(obj)
    own = _own_animation(obj)
    rest_values = animation_values(obj) if own else None
    rest = animation_matrix(obj, depsgraph) if own else rigid_rest_matrix(obj, depsgraph)
    local, tris = mesh_io.evaluated_mesh_arrays(obj, depsgraph)
    body = world.add_rigid(
        mesh_io.transform_points(rest, local),
        mesh_io.oriented_triangles(rest, tris),
        density=float(s.density),
        friction=float(s.friction),
        name=obj.name,
        initial_velocity=tuple(s.initial_velocity),
    )
    kinematic = uses_animated(obj)
    # A child of a moving parent: its keyframes (bake) are local, so the parent is needed at every frame.
    # A body following its animation needs the scene at every frame too (its pose and Animated), and so
    # does one with keyframes of its own (they place it on playback: the bake caches relative to them).
    entry = Entry(
        "RIGID",
        obj.name,
        body,
        obj.name,
        rest_matrix=rest,
        animated=is_animated(obj.parent) or kinematic or own,
        kinematic=kinematic,
        own_animation=own,
        rest_values=rest_values,
    )
    if kinematic and bool(s.animated):  # on at the start frame: kinematic from the first step
        world.set_kinematic(body, True)
    return entry


def _add_cloth(world: World, obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph) -> Entry:
    s = object_settings(obj)
    mesh = mesh_of(obj)
    deformed = cloth_result.is_deformed(obj)
    if deformed:
        # Shape keys or deforming modifiers: the cloth starts in its deformed shape of the start frame and
        # its result goes after the deformers (see cloth_result); the mesh keeps its rest shape.
        if cloth_result.ensure_result_modifier(obj):
            depsgraph.update()
        cloth_result.show_simulated(obj, None)
        local = cloth_result.animated_positions(obj, depsgraph)
    else:
        cloth_result.remove_result(obj)  # no longer deformed: back to writing into the mesh
        local = cloth_rest_positions(obj)
    matrix = mesh_io.matrix_to_numpy(obj.matrix_world)
    vertices = mesh_io.transform_points(matrix, local)
    tris = mesh_io.oriented_triangles(matrix, mesh_io.mesh_triangles(mesh))
    if len(tris) == 0:
        raise RuntimeError(f"Cloth {obj.name!r} has no faces")
    area = mesh_io.surface_area(vertices, tris)
    pinned = mesh_io.vertex_group_members(obj, s.pin_group) if s.pin_group else np.zeros(0, np.int64)
    soft, frequency = np.zeros(0, np.int64), np.zeros(0)
    if s.pin_group and s.pin_stiffness < 1.0:  # soft pins: every vertex of the group, by its weight
        weights = mesh_io.vertex_group_weights(obj, s.pin_group)
        soft, pinned = np.flatnonzero(weights > 0.0), pinned[:0]
        frequency = soft_pin_frequency(float(s.pin_stiffness) * weights[soft])
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
        tether_give=TETHER_GIVE,  # the core adds what the stretch compliance allows
        initial_velocity=tuple(s.initial_velocity),
        soft_pins=soft,
        soft_pin_frequency=frequency if soft.size else 1.0,
    )
    # A cloth whose object moves (keyframes, parents, constraints) or whose mesh is deformed: its pins ride
    # along (move_pins).
    return Entry(
        "CLOTH",
        obj.name,
        body,
        obj.name,
        rest_local=local,
        animated=deformed or is_animated(obj),
        deformed=deformed,
    )


def _add_granular(
    world: World, obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph, radius: float
) -> Entry:
    s = object_settings(obj)
    points = grain_points(obj, depsgraph, radius, world)
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
        initial_velocity=tuple(s.initial_velocity),
    )
    return Entry("GRANULAR", obj.name, body, target.name, rest_local=mesh_io.read_positions(mesh))


def _add_fluid(world: World, obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph, radius: float) -> Entry:
    s = object_settings(obj)
    points = fluids.fluid_points(obj, depsgraph, radius, world)
    everything = np.ones(len(points), dtype=bool)
    target = s.particle_object
    if target is None:
        target = fluids.create_fluid_object(obj, "FLUID", points, everything, radius)
    else:
        fluids.set_points(target, points, everything, radius)
        fluids.apply_surface(obj)  # the source's material now
    mesh = mesh_of(target)
    mesh_io.remove_attribute(mesh, REST_ATTRIBUTE)  # the fresh fill is the rest state
    body = fluids.add_fluid_body(world, points, s, obj.name, initial_velocity=s.initial_velocity)
    return Entry("FLUID", obj.name, body, target.name, rest_local=mesh_io.read_positions(mesh))


def _add_inflow(
    world: World, obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph, radius: float, scene: bpy.types.Scene
) -> Entry:
    """An inflow: a fluid body with every slot it will fill reserved (all free at the start frame)."""
    s = object_settings(obj)
    plan = fluids.inflow_plan(obj, depsgraph, radius, scene)
    fluids.check_inflow_capacity(obj, plan, world)
    points = fluids.parked_points(mesh_io.matrix_to_numpy(obj.matrix_world), plan.capacity)
    free = np.zeros(plan.capacity, dtype=bool)
    target = s.particle_object
    if target is None:
        target = fluids.create_fluid_object(obj, "INFLOW", points, free, radius)
    else:
        fluids.set_points(target, points, free, radius)
        fluids.apply_surface(obj)
    mesh = mesh_of(target)
    mesh_io.remove_attribute(mesh, REST_ATTRIBUTE)
    body = fluids.add_fluid_body(world, np.zeros((0, 3)), s, obj.name, capacity=plan.capacity)
    return Entry(
        "INFLOW",
        obj.name,
        body,
        target.name,
        rest_local=mesh_io.read_positions(mesh),
        animated=is_animated(obj),
        emitter=plan,
    )


def _add_outflow(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph, radius: float) -> Entry:
    local, tris = mesh_io.evaluated_mesh_arrays(obj, depsgraph)
    if len(tris) == 0:
        raise RuntimeError(f"Outflow {obj.name!r} has no faces")
    matrix = mesh_io.evaluated_matrix_world(obj, depsgraph)
    outflow = fluids.Outflow.from_mesh(local, tris, matrix, radius)
    return Entry("OUTFLOW", obj.name, outflow, obj.name, animated=is_animated(obj))


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
    deforms = collider_may_deform(obj)
    # Shape keys or deforming modifiers (an armature, a lattice): it will deform, so no volume is built
    # (seconds for a 20k-triangle character). Other modifiers keep the volume until the mesh changes.
    body = world.add_collider_mesh(
        local,
        tris,
        transform=matrix,
        friction=float(s.friction),
        name=obj.name,
        deforming=cloth_result.is_deformed(obj),
    )
    return Entry(
        "COLLIDER", obj.name, body, obj.name, animated=deforms or is_animated(obj), may_deform=deforms
    )


def collider_may_deform(obj: bpy.types.Object) -> bool:
    """Whether a mesh collider's evaluated mesh may change over time: it has shape keys or modifiers
    (armature, lattice, hooks, Geometry Nodes, ...). Such a mesh is read again every frame and passed
    to the core only where it changed (``move_colliders``), so a static Solidify costs one read."""
    return obj.type == "MESH" and (mesh_of(obj).shape_keys is not None or len(obj.modifiers) > 0)


def move_colliders(entries: list[Entry], depsgraph: bpy.types.Depsgraph | None) -> None:
    """Give every mesh collider its object's pose of the current frame, and its mesh if it deforms.

    Every mesh collider is read every frame (cheap: one matrix), so moving one by hand works too;
    ``Entry.animated`` only decides whether skipped frames need the scene evaluated. A collider that
    may deform (``collider_may_deform``) has its evaluated mesh read too; where its local vertices
    differ from the collider's, they become the collider's target shape for this frame
    (``MeshCollider.set_vertices``: a deforming collider from then on). A changed vertex count (a
    modifier that changes the topology) cannot deform the collider: the mesh it was built with stays.
    """
    for entry in entries:
        if isinstance(entry.body, MeshCollider):  # planes are static
            obj = bpy.data.objects.get(entry.name)
            if obj is not None:
                entry.body.set_transform(mesh_io.evaluated_matrix_world(obj, depsgraph))
                if entry.may_deform:
                    graph = depsgraph if depsgraph is not None else bpy.context.evaluated_depsgraph_get()
                    local = mesh_io.evaluated_positions(obj, graph)
                    body = entry.body
                    if local.shape == body.vertices.shape and not np.array_equal(local, body.vertices):
                        body.set_vertices(local)


def move_pins(entries: list[Entry], depsgraph: bpy.types.Depsgraph | None) -> None:
    """Give the pins of every cloth whose object moves or whose mesh is deformed their place at the current
    frame.

    A pinned vertex is held where its object's world matrix of this frame puts its rest position (its
    deformed position for a cloth with deformers: an armature, shape keys, hooks, ...); the
    core carries it there in a straight line over the frame's small steps, and the cloth is pulled along
    (a cape pinned to a keyframed or parented object). Cloths that do not move keep their pins still.
    """
    for entry in entries:
        if entry.kind != "CLOTH" or not entry.animated:
            continue
        pinned, soft = entry.body.pinned, entry.body.soft_pins
        obj = bpy.data.objects.get(entry.name)
        if obj is None or entry.rest_local is None or not (len(pinned) or len(soft)):
            continue
        matrix = mesh_io.evaluated_matrix_world(obj, depsgraph)
        local = cloth_result.animated_positions(obj, depsgraph) if entry.deformed else entry.rest_local
        if len(pinned):
            entry.body.set_pin_targets(mesh_io.transform_points(matrix, local[pinned]))
        if len(soft):  # soft pins: their springs' anchors
            entry.body.set_soft_pin_targets(mesh_io.transform_points(matrix, local[soft]))


def move_kinematic_bodies(world: World, entries: list[Entry], depsgraph: bpy.types.Depsgraph | None) -> None:
    """Read Animated and the animation's pose of the current frame into every rigid body that uses it.

    Called before the step to this frame: while Animated is on the body is kinematic and reaches its
    animation's pose at the end of the step; off, it is simulated (with the velocity it had).
    """
    for entry in entries:
        if entry.kind != "RIGID" or not entry.kinematic or entry.rest_matrix is None:
            continue
        obj = bpy.data.objects.get(entry.name)
        if obj is None:
            continue
        on = bool(object_settings(obj).animated)
        world.set_kinematic(entry.body, on)
        if on:
            now = animation_matrix(obj, depsgraph, entry.rest_values)
            world.set_rigid_target(entry.body, now @ np.linalg.inv(entry.rest_matrix))


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
        parts.append(geometry_key(obj))
        if s.role == "INFLOW":  # the frames it pours in (the scene's end too) decide its reserved slots
            parts.append(fluids.flow_range(s, scene))
    return tuple(parts)


def geometry_key(obj: bpy.types.Object) -> tuple[int, ...]:
    """What an edit of the object's mesh changes: its counts, and for meshes the simulation never writes
    into (rigid, granular sources, colliders) a checksum of their vertex positions. A cloth's positions are
    the simulation's output, so only its counts count (a subdivided cloth is rebuilt from its rest shape,
    which Blender's edit tools carry along as an attribute)."""
    if obj.type != "MESH":
        return ()
    mesh = mesh_of(obj)
    counts = (len(mesh.vertices), len(mesh.edges), len(mesh.polygons))
    if object_settings(obj).role == "CLOTH":
        return counts
    positions = mesh_io.read_positions(mesh).astype(np.float32)
    return (*counts, zlib.crc32(positions.tobytes()))


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
        objects_part[name]["initial_velocity"] = [float(v) for v in settings.initial_velocity]
        objects_part[name]["animated"] = animated_signature(obj)
        if settings.role in fluids.FLUID_ROLES:
            names = FLUID_SETTINGS + (INFLOW_SETTINGS if settings.role == "INFLOW" else ())
            objects_part[name].update({prop: getattr(settings, prop) for prop in names})
    return {
        "solver": solver,
        "gravity": list(scene.gravity[:]) if scene.use_gravity else [0.0, 0.0, 0.0],
        "fps": [scene.render.fps, scene.render.fps_base],
        "objects": objects_part,
        "fields": fields.signature(scene),  # force field objects: kind, settings, pose if not animated
    }


# ------------------------------------------------------------------------------------- reading
# ------------------------------------------------------------------------- animated rigid bodies
ANIMATED_PATH = "unified_particles.animated"
# Where each transform channel sits in transform_values' list (location 3, rotation 4, scale 3).
_CHANNEL_OFFSET = {
    "location": 0,
    "rotation_quaternion": 3,
    "rotation_euler": 3,
    "rotation_axis_angle": 3,
    "scale": 7,
}


def _kept_action(obj: bpy.types.Object) -> tuple[Any, str] | None:
    """The object's own action and slot name while a keyframe bake has put the baked one in its place."""
    if object_bake(obj).baked_output != "KEYFRAMES" or not object_bake(obj).restore:
        return None
    try:
        info = json.loads(object_bake(obj).restore)
    except ValueError:
        return None
    name = info.get("user_action") if isinstance(info, dict) else None
    action = bpy.data.actions.get(name) if name else None
    return None if action is None else (action, str(info.get("user_action_slot", "")))


def fcurves(obj: bpy.types.Object) -> list[Any]:
    """The F-curves of the object's own action (for its slot in Blender 4.4+) and its drivers.

    While a keyframe bake replaces the action, the object's own one (which the bake keeps) is read, so
    the change detector sees the same settings before and after baking."""
    anim = obj.animation_data
    if anim is None:
        return []
    curves: list[Any] = list(anim.drivers)
    action, slot = anim.action, getattr(anim, "action_slot", None)
    kept = _kept_action(obj)
    if kept is not None:
        action = kept[0]
        slots = getattr(action, "slots", None)
        slot = next((x for x in slots if x.identifier == kept[1]), None) if slots is not None else None
    if action is None:
        return curves
    legacy = getattr(action, "fcurves", None)  # Blender < 5.0
    if legacy is not None:
        return curves + list(legacy)
    for layer in action.layers:
        strip: Any  # an ActionKeyframeStrip (the stubs' ActionStrip lacks channelbag)
        for strip in layer.strips:
            bag = strip.channelbag(slot) if slot is not None else None
            if bag is not None:
                curves += list(bag.fcurves)
    return curves


def uses_animated(obj: bpy.types.Object) -> bool:
    """A rigid object whose Animated is on, keyframed or driven: it may follow its animation."""
    return bool(object_settings(obj).animated) or any(c.data_path == ANIMATED_PATH for c in fcurves(obj))


def animated_signature(obj: bpy.types.Object) -> Any:
    """Animated for the change detector: its keys (frame, value) if animated, else its value. Its value at
    the current frame would change with the frame, which is not a change of the settings."""
    keys = [
        [[float(k.co[0]), float(k.co[1])] for k in c.keyframe_points] or "driven"
        for c in fcurves(obj)
        if c.data_path == ANIMATED_PATH
    ]
    return keys if keys else bool(object_settings(obj).animated)


def _own_animation(obj: bpy.types.Object) -> bool:
    """The object's own transform is animated (keyframed or driven channels, or constraints)."""
    return len(obj.constraints) > 0 or any(c.data_path in _CHANNEL_OFFSET for c in fcurves(obj))


def animation_values(
    obj: bpy.types.Object, rest_values: tuple[str, list[float]] | None = None
) -> tuple[str, list[float]]:
    """The typed transform the animation gives now: animated channels as Blender just evaluated them, the
    others as at rest (``rest_values``, default the stored rest transform or the typed one): write-back
    may have put the simulated pose there since."""
    mode, values = rest_values if rest_values is not None else rest_transform_values(obj)
    values = list(values)
    _, now = transform_values(obj)
    for curve in fcurves(obj):
        offset = _CHANNEL_OFFSET.get(curve.data_path)
        if offset is not None:
            i = offset + int(curve.array_index)
            values[i] = now[i]
    return mode, values


def animation_matrix(
    obj: bpy.types.Object,
    depsgraph: bpy.types.Depsgraph | None,
    rest_values: tuple[str, list[float]] | None = None,
) -> FloatArray:
    """A rigid object's world matrix as its animation places it at the current frame: keyframes and
    drivers of its own transform, its parents, its constraints.

    ``rest_values``: the typed transform at the start frame, for the channels that are not animated
    (default: the stored rest transform, or the typed one).
    """
    if not _own_animation(obj):
        return rigid_rest_matrix(obj, depsgraph)  # moved only by its parent
    mode, values = animation_values(obj, rest_values)
    if len(obj.constraints):
        # Constraints: Blender's own evaluation, of the animation's typed transform (write-back put the
        # simulated pose there, and shows it again after the step).
        layer = bpy.context.view_layer
        if mode == obj.rotation_mode and layer is not None:
            set_transform_values(obj, mode, values)
            layer.update()
        return mesh_io.evaluated_matrix_world(obj, depsgraph)
    return parent_frame(obj, depsgraph) @ basis_matrix(obj, mode, values)


# ------------------------------------------------------------------------- rigid transforms
# A rigid object's rest pose is read from the transform values the user typed (location, rotation,
# scale, kept in ``rest_transform`` while the simulation moves the object) placed by its parent at the
# start frame (the frame the simulation is built at), never from what write-back wrote: so the start
# pose does not depend on the current frame, and replaying does not drift.
def transform_values(obj: bpy.types.Object) -> tuple[str, list[float]]:
    """The object's typed transform: its rotation mode and location (3), rotation (4), scale (3)."""
    mode = obj.rotation_mode
    if mode == "QUATERNION":
        rotation = [float(v) for v in obj.rotation_quaternion[:]]
    elif mode == "AXIS_ANGLE":
        rotation = [float(v) for v in obj.rotation_axis_angle[:]]
    else:
        rotation = [*obj.rotation_euler[:], 0.0]
    return mode, [*obj.location[:], *rotation, *obj.scale[:]]


def rest_transform_values(obj: bpy.types.Object) -> tuple[str, list[float]]:
    """The typed transform before the simulation moved the object (the current one if not moved)."""
    s = object_settings(obj)
    if s.has_rest and s.rest_rotation_mode:
        return s.rest_rotation_mode, list(s.rest_transform)
    return transform_values(obj)


def _rotation(mode: str, values: list[float]) -> Matrix:
    if mode == "QUATERNION":
        q = Quaternion(values[:4])
        return q.normalized().to_matrix() if q.magnitude > 0.0 else Matrix.Identity(3)
    if mode == "AXIS_ANGLE":
        axis = Vector(values[1:4])
        return Matrix.Rotation(values[0], 3, axis.normalized()) if axis.length > 0.0 else Matrix.Identity(3)
    return Euler(values[:3], mode).to_matrix()


def _delta_rotation(obj: bpy.types.Object, mode: str) -> Matrix:
    if mode == "QUATERNION":
        return _rotation(mode, [float(v) for v in obj.delta_rotation_quaternion[:]])
    if mode == "AXIS_ANGLE":
        return Matrix.Identity(3)
    return Euler(obj.delta_rotation_euler[:], mode).to_matrix()


def basis_matrix(obj: bpy.types.Object, mode: str, values: list[float]) -> FloatArray:
    """The local (basis) matrix of typed transform values, with the object's delta transforms, as Blender
    composes it: location + delta, delta rotation @ rotation, scale * delta scale."""
    rotation = np.array(_delta_rotation(obj, mode) @ _rotation(mode, values[3:7]), dtype=np.float64)
    size = np.asarray(values[7:10], dtype=np.float64) * np.asarray(obj.delta_scale[:], dtype=np.float64)
    matrix = np.eye(4)
    matrix[:3, :3] = rotation * size[None, :]
    matrix[:3, 3] = np.asarray(values[:3], dtype=np.float64) + np.asarray(
        obj.delta_location[:], dtype=np.float64
    )
    return matrix


def basis_values(obj: bpy.types.Object, basis: FloatArray, mode: str, like: list[float]) -> list[float]:
    """Typed transform values (location, rotation in ``mode``, scale) of a basis matrix, keeping the sign
    pattern of the scale in ``like`` (typed values) and, for Euler angles, the angles closest to them."""
    delta_scale = np.asarray(obj.delta_scale[:], dtype=np.float64)
    signs = np.where(np.asarray(like[7:10]) * delta_scale < 0.0, -1.0, 1.0)
    m = np.asarray(basis, dtype=np.float64)[:3, :3]
    size = signs * np.linalg.norm(m, axis=0)
    if np.any(size == 0.0) or np.linalg.det(m) * np.prod(signs) < 0.0:
        signs = np.ones(3)  # the sign pattern cannot describe this matrix: Blender's own choice
        size = np.linalg.norm(m, axis=0) * (1.0 if np.linalg.det(m) >= 0.0 else -1.0)
    safe = np.where(size == 0.0, 1.0, size)
    rotation = _delta_rotation(obj, mode).transposed() @ Matrix((m / safe[None, :]).tolist())
    scale = size / np.where(delta_scale == 0.0, 1.0, delta_scale)
    location = np.asarray(basis)[:3, 3] - np.asarray(obj.delta_location[:], dtype=np.float64)
    if mode == "QUATERNION":
        q = rotation.to_quaternion()
        if Quaternion(like[3:7]).dot(q) < 0.0:
            q.negate()
        rot = [float(v) for v in q[:]]
    elif mode == "AXIS_ANGLE":
        axis, angle = rotation.to_quaternion().to_axis_angle()
        rot = [angle, *axis[:]]
    else:
        rot = [*rotation.to_euler(mode, Euler(like[3:6], mode))[:], 0.0]
    return [*location.tolist(), *rot, *scale.tolist()]


def set_transform_values(obj: bpy.types.Object, mode: str, values: list[float]) -> None:
    """Write typed transform values (in ``mode``, the object's rotation mode) into the object."""
    obj.location = values[0:3]
    if mode == "QUATERNION":
        obj.rotation_quaternion = values[3:7]
    elif mode == "AXIS_ANGLE":
        obj.rotation_axis_angle = values[3:7]
    else:
        obj.rotation_euler = values[3:6]
    obj.scale = values[7:10]


def parent_frame(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph | None = None) -> FloatArray:
    """Where an object's basis sits in the world now: parent @ parent inverse (identity without one)."""
    if obj.parent is None:
        return np.eye(4)
    if obj.parent_type == "OBJECT":
        parent = mesh_io.evaluated_matrix_world(obj.parent, depsgraph)
        return parent @ mesh_io.matrix_to_numpy(obj.matrix_parent_inverse)
    source = obj.evaluated_get(depsgraph) if depsgraph is not None else obj
    world = mesh_io.matrix_to_numpy(source.matrix_world)
    return world @ np.linalg.pinv(mesh_io.matrix_to_numpy(source.matrix_basis))


def rigid_rest_matrix(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph | None = None) -> FloatArray:
    """A rigid object's world matrix at rest: its typed transform (before the simulation moved it) placed
    by its parent as evaluated now (the simulation evaluates it at the start frame)."""
    s = object_settings(obj)
    if s.has_rest and not s.rest_rotation_mode:  # rest data of an older version: a world matrix
        return np.asarray(s.rest_matrix, dtype=np.float64).reshape(4, 4)
    if not s.has_rest and len(obj.constraints):  # constraints place it too: Blender's own evaluation
        return mesh_io.evaluated_matrix_world(obj, depsgraph)
    mode, values = rest_transform_values(obj)
    return parent_frame(obj, depsgraph) @ basis_matrix(obj, mode, values)


def cloth_rest_positions(obj: bpy.types.Object) -> FloatArray:
    """A mesh's local vertex positions before the simulation moved them (the current ones if not moved)."""
    mesh = mesh_of(obj)
    rest = mesh_io.read_float_vector_attribute(mesh, REST_ATTRIBUTE)
    return mesh_io.read_positions(mesh) if rest is None else rest


def check_grain_fill(
    obj: bpy.types.Object, vertices: FloatArray, tris: Any, radius: float, world: World | None = None
) -> None:
    """Refuse a grain fill that breaks a limit (memory, with the particles already in ``world`` if given;
    sampling grid; ``MAX_GRAINS_PER_OBJECT``), naming the object and the smallest particle radius that
    keeps every limit."""
    granular.check_fill(obj, vertices, tris, radius, world, MAX_GRAINS_PER_OBJECT, "grains")


def grain_points(
    obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph, radius: float, world: World | None = None
) -> FloatArray:
    """World-space grain centres filling the evaluated mesh of ``obj`` (limits checked first; memory with
    the particles of ``world`` if given)."""
    local, tris = mesh_io.evaluated_mesh_arrays(obj, depsgraph)
    matrix = mesh_io.matrix_to_numpy(obj.matrix_world)
    vertices = mesh_io.transform_points(matrix, local)
    tris = mesh_io.oriented_triangles(matrix, tris)
    if len(tris) == 0:
        raise SimulationInputError(f"{obj.name!r} has no faces to fill with grains")
    check_grain_fill(obj, vertices, tris, radius, world)
    points = np.asarray(fill_mesh_with_grains(vertices, tris, radius))
    if len(points) == 0:
        raise SimulationInputError(
            f"{obj.name!r} is too small to hold a grain of radius {radius:g} m; "
            "make it bigger or lower the particle radius"
        )
    return points.reshape(-1, 3)
