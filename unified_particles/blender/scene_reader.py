# SPDX-License-Identifier: GPL-3.0-or-later
"""Frame path, stage 1: read the Blender scene into a ``core.World`` and say what changed since.

Reads only: whatever Blender data the World needs that does not exist yet (a granular or fluid
source's particle object, a deformed cloth's result modifier, the pose under a constrained kinematic
body) is written by stage 3, :mod:`.writeback`, before or after these reads.

:func:`make_world` builds the World from the scene's objects with a role (evaluated meshes, world
space, every transform honoured) and returns one :class:`Entry` per object, linking it to its core
body (and, for a particle object, the points it should show: ``Entry.fill``). :func:`read_frame`
reads the scene of one frame into the World before the step into it. :func:`structure_signature` and
:func:`settings_signature` are the change detector: the live simulation re-simulates when they
change, and the bake hashes :func:`settings_signature` (plus its frames and outputs) to tell when a
bake is Outdated.

Design decisions:

* Cloth simulates the object's own mesh vertices (the mesh before modifiers, placed in world space
  by the object's transform), so the object's modifiers act on the simulated cloth afterwards, as
  with Blender's Cloth modifier at the top of the stack. Rigid bodies, granular sources and
  colliders are read from the evaluated mesh (modifiers applied).
* While the simulation has moved an object away from its start, its original data is kept in the
  .blend (``rest_matrix``/``has_rest`` on a rigid object, the ``REST_ATTRIBUTE`` point attribute on
  a cloth mesh or particle object); the reader builds from that rest data when it is there.

Imports the base modules (``transforms``, ``mesh_io``, ``cloth_result``, ``granular``, ``fluids``,
``fields``, ``joints``, ``materials``, ``settings_ui``, ``rna``) and the core.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from typing import Any

import bpy
import numpy as np

from ..core import MeshCollider, SimulationInputError, SoftBody, World, fill_mesh_with_grains
from ..core.sizes import grain_radii
from . import (
    cloth_result,
    fields,
    flat_colliders,
    fluids,
    granular,
    hair,
    joints,
    mesh_io,
    rope,
    sizes,
    tear_mesh,
    whitewater,
)
from .materials import TETHER_GIVE, bending_rigidity_si, soft_pin_frequency, stiffness_to_compliance
from .mesh_io import REST_ATTRIBUTE, FloatArray, is_animated
from .rna import mesh_of, object_settings, scene_settings
from .settings_ui import panel_setting_names, world_keywords
from .transforms import (
    animated_signature,
    animation_matrix,
    animation_values,
    own_animation,
    rigid_rest_matrix,
    uses_animated,
)

SIM_ROLES = ("RIGID", "CLOTH", "SOFT", "GRANULAR", "COLLIDER", "FLUID", "INFLOW", "OUTFLOW", "ROPE", "HAIR")
# Roles that only act on the others (nothing of theirs moves).
_PASSIVE_ROLES = ("COLLIDER", "OUTFLOW")
# Refuse to fill one object with more grains than this (the viewport and the solver would crawl).
MAX_GRAINS_PER_OBJECT = 2_000_000
# Smallest cloth mass, kg: a zero-area cloth still gets finite particle masses.
MIN_CLOTH_MASS = 1e-6

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
    "bending_model",
    "bending_rigidity",
    "pin_group",
    "pin_stiffness",
    "self_collision",
    "air_viscosity",
    "cohesion",
    "field_weight",  # force fields (blender/fields.py)
)
# Settings of liquids (Fluid, Inflow: blender/fluids.py), in the change detector for those roles only (so
# bakes of other objects made before fluids existed stay up to date).
FLUID_SETTINGS = ("viscosity", "fluid_cohesion", "adhesion", "vorticity")
# Blender's meaning of mass (blender/convert.py): in the change detector only when Mass From is Mass.
MASS_SETTINGS = ("mass_mode", "mass")
# Blender's meaning of pin weights: in the change detector only when on.
PIN_SETTINGS = ("pin_full_weight",)
INFLOW_SETTINGS = ("flow_velocity", "flow_axis", "flow_start", "flow_end")
# Settings of one role only (so bakes of other objects made before they existed stay up to date); a tearing
# cloth's (blender/tear_mesh.py) only when Tear Strain is above 0.
ROLE_SETTINGS = {
    "GRANULAR": ("kinetic_friction", "rolling_friction"),
    "HAIR": ("hair_stiffness", "hair_damping", "self_collision"),
}
TEAR_SETTINGS = ("tear_strain", "tear_group")


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
    rest_local: FloatArray | None = None  # cloth, particle objects: target's local vertex positions at build
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
    # Granular, fluid, inflow: the world points (N, 3) and which are live (N,) bool that its particle
    # object shows at the start frame; write-back (show_fills) writes them and sets target and rest_local.
    fill: tuple[FloatArray, np.ndarray] | None = None
    radii: FloatArray | None = None  # granular with its own size: each grain's radius (N,), metres
    pin_local: FloatArray | None = None  # rope: its pins' positions (K, 3) in its source's frame at build
    whitewater: Any = None  # fluid, inflow with Whitewater on: its core.Whitewater (stepped after the world)
    corners: Any = None  # tearing cloth: (3F,) the mesh vertex of each core triangle corner (tear_mesh.py)


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
    collection excluded from the view layer (not in the view layer's depsgraph) does not. A deleted inflow
    whose liquid stays is the scene's (``fluids.kept_inflows``).
    """
    names = _in_view_layer(scene)
    objects = [
        o
        for o in scene.objects
        if object_settings(o).role in SIM_ROLES and (names is None or o.name in names)
    ]
    return sorted(objects + fluids.kept_inflows(scene, names), key=lambda o: o.name)


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

    Reads only: ``writeback.prepare_build`` runs first (a deformed cloth's shape is read from its
    result modifier), and ``writeback.show_fills`` after, to show each entry's ``fill`` (a granular or
    fluid source's particle object is made there, so such an entry's ``target`` may still be "").

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
    # Plane colliders last: a flat mesh's plane faces the bodies and becomes a mesh where they could reach
    # its edge (flat_colliders), so it is built once their particles exist.
    # Tied ropes after the rigid bodies they are tied to.
    for obj in sorted(simulated_objects(scene), key=lambda o: (_is_plane(o), rope.is_tied(o))):
        role = object_settings(obj).role
        try:
            if role == "ROPE":  # curves too (blender/rope.py)
                entries.append(_add_rope(world, obj, depsgraph, entries))
                continue
            if role == "HAIR":  # a Curves object (blender/hair.py)
                body = hair.add_hair(world, obj, depsgraph, sizes.object_radius(obj, depsgraph))
                entries.append(Entry("HAIR", obj.name, body, _particle_object_name(obj)))
                entries[-1].fill = (body.positions, _live(len(body.indices)))
                continue
            if obj.type != "MESH":
                raise RuntimeError(f"{obj.name!r} is not a mesh; clear it or convert it to a mesh")
            if role == "RIGID":
                entries.append(_add_rigid(world, obj, depsgraph))
            elif role == "CLOTH":
                entries.append(_add_cloth(world, obj, depsgraph))
            elif role == "SOFT":
                entries.append(_add_soft(world, obj, depsgraph))
            elif role == "GRANULAR":
                entries.append(_add_granular(world, obj, depsgraph, radius))
            elif role == "COLLIDER":
                entries.append(_add_collider(world, obj, depsgraph))
            elif role in fluids.FLUID_ROLES:
                if role == "FLUID":
                    liquid = _add_fluid(world, obj, depsgraph, radius)
                else:
                    liquid = _add_inflow(world, obj, depsgraph, radius, scene)
                if object_settings(obj).whitewater:  # its spray, foam and bubbles (blender/whitewater.py)
                    liquid.whitewater = whitewater.create(obj, scene)
                entries.append(liquid)
            elif role == "OUTFLOW":
                entries.append(_add_outflow(obj, depsgraph, radius))
        except Exception as exc:
            if problems is None:
                raise
            found[obj.name] = _problem_text(obj, exc)
            first = first if first is not None else exc
    unmapped, _ = joints.add_joints(world, entries, scene)  # rigid body constraints (blender/joints.py)
    glued = [(e.body, float(object_settings(bpy.data.objects[e.name]).glue_strength)) for e in entries
             if e.kind == "RIGID" and e.name in bpy.data.objects]  # fmt: skip
    glued = [(body, strength) for body, strength in glued if strength > 0.0]
    if len(glued) > 1:  # Glue Strength: touching rigid bodies glued by breakable joints (core/glue.py)
        world.glue([b for b, _ in glued], strength=[s for _, s in glued])
    if problems is not None:
        problems.update(unmapped)
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
    own = own_animation(obj)
    rest_values = animation_values(obj) if own else None
    rest = animation_matrix(obj, depsgraph) if own else rigid_rest_matrix(obj, depsgraph)
    local, tris = mesh_io.evaluated_mesh_arrays(obj, depsgraph)
    body = world.add_rigid(
        mesh_io.transform_points(rest, local),
        mesh_io.oriented_triangles(rest, tris),
        density=float(s.density),
        friction=float(s.friction),
        mass=float(s.mass) if s.mass_mode == "MASS" else None,  # Blender's Mass, kg
        name=obj.name,
        initial_velocity=tuple(s.initial_velocity),
        radius=sizes.object_radius(obj, depsgraph),  # None: the scene's
        shell=s.fill == "SHELL",
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
    # Shape keys or deforming modifiers: the cloth starts in its deformed shape of the start frame and its
    # result goes after the deformers (see cloth_result; writeback.prepare_build gave it the result
    # modifier this is read from); the mesh keeps its rest shape.
    local = cloth_result.animated_positions(obj, depsgraph) if deformed else cloth_rest_positions(obj)
    matrix = mesh_io.matrix_to_numpy(obj.matrix_world)
    vertices = mesh_io.transform_points(matrix, local)
    tris = mesh_io.oriented_triangles(matrix, mesh_io.mesh_triangles(mesh))
    if len(tris) == 0:
        raise RuntimeError(f"Cloth {obj.name!r} has no faces")
    area = mesh_io.surface_area(vertices, tris)
    pinned = mesh_io.vertex_group_members(obj, s.pin_group) if s.pin_group else np.zeros(0, np.int64)
    tearing = float(s.tear_strain) > 0.0 and tear_mesh.is_unwelded(
        mesh
    )  # writeback.prepare_build unwelded it
    weld, first = np.arange(len(vertices)), np.arange(len(vertices))  # mesh vertex <-> core vertex
    if tearing:  # the core gets the cloth welded back (tear_mesh.py); pins and groups by any split copy
        weld, first = tear_mesh.welded(local)
    soft, frequency = np.zeros(0, np.int64), np.zeros(0)
    if s.pin_group and s.pin_stiffness < 1.0:  # soft pins: every vertex of the group, by its weight
        weights = np.zeros(len(first))
        np.maximum.at(weights, weld, mesh_io.vertex_group_weights(obj, s.pin_group))
        # Blender's meaning (Weight 1 Pins Hard): weight 1 pinned exactly, lower weights springs.
        full = weights >= 1.0 if s.pin_full_weight else np.zeros(len(weights), dtype=bool)
        soft, pinned = np.flatnonzero((weights > 0.0) & ~full), np.flatnonzero(full)
        frequency = soft_pin_frequency(float(s.pin_stiffness) * weights[soft])
    else:
        pinned = np.unique(weld[pinned])
    tear_mask = None
    if tearing and s.tear_group:
        tear_mask = np.unique(weld[mesh_io.vertex_group_members(obj, s.tear_group)])
    body = world.add_cloth(
        vertices[first],
        weld[tris],
        mass=float(s.mass) if s.mass_mode == "MASS" else max(float(s.area_density) * area, MIN_CLOTH_MASS),
        stretch_compliance=stiffness_to_compliance(s.stretch_stiffness),
        bend_compliance=stiffness_to_compliance(s.bend_stiffness),
        # Isometric bending of a physical rigidity (the default; the legacy Bend Stiffness otherwise).
        bending_rigidity=bending_rigidity_si(s.bending_rigidity) if s.bending_model == "RIGIDITY" else None,
        pinned=pinned,
        self_collision=bool(s.self_collision),
        friction=float(s.friction),
        name=obj.name,
        air_viscosity=float(s.air_viscosity),
        tether_give=TETHER_GIVE,  # the core adds what the stretch compliance allows
        initial_velocity=tuple(s.initial_velocity),
        soft_pins=soft,
        soft_pin_frequency=frequency if soft.size else 1.0,
        thickness=sizes.object_radius(obj, depsgraph),  # None: the scene's particle radius
        inflation=float(s.inflation) if s.use_pressure else None,  # a balloon (core/balloon.py)
        tear_strain=float(s.tear_strain) if tearing else None,  # core/tearing.py
        tear_mask=tear_mask,
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
        corners=tris.ravel().astype(np.int64) if tearing else None,
    )


def _add_soft(world: World, obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph) -> Entry:
    """A soft body: its mesh is filled and skinned to the clusters; it writes back and bakes as a cloth
    (kind CLOTH: the simulation moves its mesh's vertices); its pins ride on its object's motion."""
    s = object_settings(obj)
    local = cloth_rest_positions(obj)
    matrix = mesh_io.matrix_to_numpy(obj.matrix_world)
    tris = mesh_io.oriented_triangles(matrix, mesh_io.mesh_triangles(mesh_of(obj)))
    pinned = mesh_io.vertex_group_members(obj, s.pin_group) if s.pin_group else None
    body = world.add_soft(
        mesh_io.transform_points(matrix, local),
        tris,
        density=float(s.density),
        stiffness=float(s.soft_stiffness),
        friction=float(s.friction),
        pinned=pinned,
        plastic_yield=float(s.plastic_yield) if s.plastic_yield > 0.0 else None,
        plastic_creep=float(s.plastic_creep),
        mass=float(s.mass) if s.mass_mode == "MASS" else None,
        name=obj.name,
        initial_velocity=tuple(s.initial_velocity),
    )
    return Entry(
        "CLOTH", obj.name, body, obj.name, rest_matrix=matrix, rest_local=local, animated=is_animated(obj)
    )


def _add_granular(
    world: World, obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph, radius: float
) -> Entry:
    s = object_settings(obj)
    own = sizes.object_radius(obj, depsgraph)
    r = radius if own is None else own
    spread = float(s.size_spread)
    points = grain_points(obj, depsgraph, r, world, spread)
    # Each grain's radius: the object's size, spread (seeded: the same grains every time).
    radii = grain_radii(len(points), r, spread) if own is not None or spread > 0.0 else None
    # Mass mode: every grain weighs mass / count; the core's grain mass is density (2r)^3.
    volume = float(np.sum((2.0 * radii) ** 3)) if radii is not None else len(points) * (2.0 * radius) ** 3
    density = float(s.mass) / volume if s.mass_mode == "MASS" else s.density
    body = world.add_granular(
        points,
        density=float(density),
        friction=float(s.friction),
        cohesion=float(s.cohesion),
        name=obj.name,
        initial_velocity=tuple(s.initial_velocity),
        rolling_friction=float(s.rolling_friction),
        # Sliding never exceeds sticking: above Friction it acts as Friction (the property's description).
        kinetic_friction=min(float(s.kinetic_friction), float(s.friction)),
        radius=radii,  # None: the scene's
    )
    entry = Entry("GRANULAR", obj.name, body, _particle_object_name(obj), fill=(points, _live(len(points))))
    entry.radii = radii
    return entry


def _add_rope(
    world: World, obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph, built: list[Entry]
) -> Entry:
    s = object_settings(obj)
    points = rope.rope_points(obj, depsgraph)
    ties = rope.rope_ties(obj, {e.name: e.body for e in built if e.kind == "RIGID"})
    body = world.add_rope(
        points,
        mass=float(s.mass) if s.mass_mode == "MASS" else None,
        density=float(s.density),
        friction=float(s.friction),
        pinned=rope.ROPE_PINS[str(s.rope_pins)],
        name=obj.name,
        initial_velocity=tuple(s.initial_velocity),
        attach=ties or None,
    )
    fill = body.positions
    entry = Entry("ROPE", obj.name, body, _particle_object_name(obj), fill=(fill, _live(len(fill))))
    inverse = np.linalg.inv(mesh_io.matrix_to_numpy(obj.matrix_world))  # pins follow the source (move_pins)
    entry.pin_local = mesh_io.transform_points(inverse, fill[body.pinned])
    entry.animated = is_animated(obj)
    return entry


def _particle_object_name(source: bpy.types.Object) -> str:
    """The name of the source's particle object ("" before write-back has made it)."""
    target = object_settings(source).particle_object
    return "" if target is None else target.name


def _live(count: int, live: bool = True) -> np.ndarray:
    return np.full(count, live, dtype=bool)


def _add_fluid(world: World, obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph, radius: float) -> Entry:
    s = object_settings(obj)
    points = fluids.fluid_points(obj, depsgraph, radius, world)
    body = fluids.add_fluid_body(world, points, s, obj.name, initial_velocity=s.initial_velocity)
    return Entry("FLUID", obj.name, body, _particle_object_name(obj), fill=(points, _live(len(points))))


def _add_inflow(
    world: World, obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph, radius: float, scene: bpy.types.Scene
) -> Entry:
    """An inflow: a fluid body with every slot it will fill reserved (all free at the start frame)."""
    s = object_settings(obj)
    plan = fluids.inflow_plan(obj, depsgraph, radius, scene)
    fluids.check_inflow_capacity(obj, plan, world)
    points = fluids.parked_points(mesh_io.matrix_to_numpy(obj.matrix_world), plan.capacity)
    body = fluids.add_fluid_body(world, np.zeros((0, 3)), s, obj.name, capacity=plan.capacity)
    return Entry(
        "INFLOW",
        obj.name,
        body,
        _particle_object_name(obj),
        animated=is_animated(obj),
        emitter=plan,
        fill=(points, _live(plan.capacity, False)),  # every slot free at the start frame
    )


def _add_outflow(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph, radius: float) -> Entry:
    local, tris = mesh_io.evaluated_mesh_arrays(obj, depsgraph)
    if len(tris) == 0:
        raise RuntimeError(f"Outflow {obj.name!r} has no faces")
    matrix = mesh_io.evaluated_matrix_world(obj, depsgraph)
    outflow = fluids.Outflow.from_mesh(local, tris, matrix, radius)
    return Entry("OUTFLOW", obj.name, outflow, obj.name, animated=is_animated(obj))


def _is_plane(obj: bpy.types.Object) -> bool:
    s = object_settings(obj)
    return s.role == "COLLIDER" and s.collider_shape == "PLANE"


def _add_collider(world: World, obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph) -> Entry:
    s = object_settings(obj)
    matrix = mesh_io.evaluated_matrix_world(obj, depsgraph)
    local, tris = mesh_io.evaluated_mesh_arrays(obj, depsgraph)
    if len(tris) == 0:
        raise RuntimeError(f"Collider {obj.name!r} has no faces")
    if s.collider_shape == "PLANE":
        # The mesh's own plane in world space, facing the bodies; a mesh collider where they could fall
        # past its edge (flat_colliders explains the choice).
        bodies = world.positions[world.particle_active]
        plane = flat_colliders.flat_plane(local, tris, matrix, bodies)
        if plane is not None and not flat_colliders.needs_edge(plane, bodies):
            infinite = world.add_collider_plane(plane.point, plane.normal, float(s.friction), obj.name)
            return Entry("COLLIDER", obj.name, infinite, obj.name)
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
    """Give the pins of every cloth (and rope) whose object moves or whose mesh is deformed their place at
    the current frame.

    A pinned vertex is held where its object's world matrix of this frame puts its rest position (its
    deformed position for a cloth with deformers: an armature, shape keys, hooks, ...); the
    core carries it there in a straight line over the frame's small steps, and the cloth is pulled along
    (a cape pinned to a keyframed or parented object). Cloths that do not move keep their pins still.
    """
    for entry in entries:
        if entry.kind == "HAIR":  # its roots ride on its surface mesh, evaluated every frame
            hair.move_roots(entry.body, bpy.data.objects.get(entry.name), depsgraph)
        if entry.kind == "ROPE" and entry.animated and entry.pin_local is not None and len(entry.pin_local):
            source = bpy.data.objects.get(entry.name)  # the pins ride on the (hidden) source object
            if source is not None:
                matrix = mesh_io.evaluated_matrix_world(source, depsgraph)
                entry.body.set_pin_targets(mesh_io.transform_points(matrix, entry.pin_local))
        if entry.kind != "CLOTH" or not entry.animated:
            continue
        if isinstance(entry.body, SoftBody):  # its pinned particles follow the object from its build pose
            obj = bpy.data.objects.get(entry.name)
            if obj is not None and entry.rest_matrix is not None and len(entry.body.pinned):
                now = mesh_io.evaluated_matrix_world(obj, depsgraph)
                entry.body.set_pin_transform(now @ np.linalg.inv(entry.rest_matrix))
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


def inflate_balloons(world: World, entries: list[Entry]) -> None:
    """Each balloon's Inflation of this frame (keyframable) into the World."""
    for entry in entries:
        if entry.kind == "CLOTH" and getattr(entry.body, "balloon", None) is not None:
            obj = bpy.data.objects.get(entry.name)
            if obj is not None:
                world.set_inflation(entry.body, float(object_settings(obj).inflation))


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


def read_frame(
    world: World,
    entries: list[Entry],
    scene: bpy.types.Scene,
    frame: int,
    depsgraph: bpy.types.Depsgraph | None,
) -> None:
    """The scene at ``frame`` into the World, before the step into that frame: the one per-frame read.

    Colliders' poses (and deformed meshes), cloth pins, kinematic bodies' Animated and pose, force
    fields, and the particles inflows pour in this frame. ``depsgraph``: the evaluated scene at
    ``frame``, or None to read the objects as they are (after a ``scene.frame_set``). A constrained
    kinematic body is read as Blender evaluates it: ``writeback.show_animation_poses`` comes first.
    """
    move_colliders(entries, depsgraph)
    move_pins(entries, depsgraph)
    inflate_balloons(world, entries)
    move_kinematic_bodies(world, entries, depsgraph)
    fields.sync(world, entries, scene, depsgraph)
    fluids.emit_inflows(world, entries, frame, depsgraph)


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
        if sizes.has_own_size(obj):  # only then: signatures made before sizes existed stay the same
            parts.append(tuple(sizes.size_key(obj).values()))
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
    if s.time_scale != 1.0:  # only then, so bakes made before Speed existed stay up to date
        solver["time_scale"] = s.time_scale
    objects_part = {}
    for obj in simulated_objects(scene) if objects is None else objects:
        settings = object_settings(obj)
        name = str(key(obj)) if key is not None else obj.name
        objects_part[name] = {prop: getattr(settings, prop) for prop in OBJECT_SETTINGS}
        objects_part[name]["initial_velocity"] = [float(v) for v in settings.initial_velocity]
        objects_part[name]["animated"] = animated_signature(obj)
        if settings.mass_mode == "MASS":  # only then, so bakes made before Mass existed stay up to date
            objects_part[name].update({prop: getattr(settings, prop) for prop in MASS_SETTINGS})
        if settings.pin_full_weight:
            objects_part[name].update({prop: getattr(settings, prop) for prop in PIN_SETTINGS})
        effector = fields.weights_of(obj, scene)  # Blender's effector weights, if any
        if effector != (float(settings.field_weight), dict.fromkeys(fields.WEIGHT_KINDS, 1.0), None):
            objects_part[name]["effector_weights"] = effector  # only then: older bakes stay up to date
        if settings.role in fluids.FLUID_ROLES:
            names = FLUID_SETTINGS + (INFLOW_SETTINGS if settings.role == "INFLOW" else ())
            objects_part[name].update({prop: getattr(settings, prop) for prop in names})
            if settings.surface_smooth:  # the points written are the smoothed centres (older bakes: raw)
                objects_part[name]["surface_smooth"] = True
            if settings.whitewater:  # only then, so older bakes stay up to date
                objects_part[name]["whitewater"] = int(settings.whitewater_capacity)
            if settings.role == "INFLOW":  # keyframed: its keys, not its value at the current frame
                objects_part[name]["flow_velocity"] = fluids.flow_velocity_signature(obj)
        own = ROLE_SETTINGS.get(settings.role, ())
        if settings.role == "CLOTH" and settings.tear_strain > 0.0:  # only then: older bakes stay up to date
            own = TEAR_SETTINGS
        objects_part[name].update({prop: getattr(settings, prop) for prop in own})
        if settings.role == "ROPE":  # Tie Start / End, only when set
            objects_part[name].update(rope.tie_signature(obj))
        if sizes.has_own_size(obj):  # only then, so bakes made before sizes existed stay up to date
            objects_part[name].update(sizes.size_key(obj))
    signature: dict[str, Any] = {
        "solver": solver,
        "gravity": list(scene.gravity[:]) if scene.use_gravity else [0.0, 0.0, 0.0],
        "fps": [scene.render.fps, scene.render.fps_base],
        "objects": objects_part,
        "fields": fields.signature(scene),  # force field objects: kind, settings, pose if not animated
    }
    constraints = joints.signature(scene)  # only when there are some: older bakes stay up to date
    if constraints:
        signature["joints"] = {**constraints, "bullet_step": joints.bullet_step(scene)}
    return signature


def cloth_rest_positions(obj: bpy.types.Object) -> FloatArray:
    """A mesh's local vertex positions before the simulation moved them (the current ones if not moved)."""
    mesh = mesh_of(obj)
    rest = mesh_io.read_float_vector_attribute(mesh, REST_ATTRIBUTE)
    return mesh_io.read_positions(mesh) if rest is None else rest


def grain_points(
    obj: bpy.types.Object,
    depsgraph: bpy.types.Depsgraph,
    radius: float,
    world: World | None = None,
    spread: float = 0.0,
) -> FloatArray:
    """World-space grain centres filling the evaluated mesh of ``obj``. A fill that breaks a limit (memory,
    with the particles of ``world`` if given; sampling grid; ``MAX_GRAINS_PER_OBJECT``) is refused first,
    naming the object and the smallest radius that keeps every limit, at the largest grain, ``radius`` (1 +
    ``spread``: the Size Spread)."""
    local, tris = mesh_io.evaluated_mesh_arrays(obj, depsgraph)
    matrix = mesh_io.matrix_to_numpy(obj.matrix_world)
    vertices = mesh_io.transform_points(matrix, local)
    tris = mesh_io.oriented_triangles(matrix, tris)
    if len(tris) == 0:
        raise SimulationInputError(f"{obj.name!r} has no faces to fill with grains")
    granular.check_fill(obj, vertices, tris, radius * (1.0 + spread), world, MAX_GRAINS_PER_OBJECT, "grains")
    points = np.asarray(fill_mesh_with_grains(vertices, tris, radius, spread))
    if len(points) == 0:
        raise SimulationInputError(
            f"{obj.name!r} is too small to hold a grain of radius {radius:g} m; "
            "make it bigger or lower the particle radius"
        )
    return points.reshape(-1, 3)
