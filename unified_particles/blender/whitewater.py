# SPDX-License-Identifier: GPL-3.0-or-later
"""Whitewater in Blender: the spray, foam and bubbles of a liquid (``core.whitewater``, Ihmsen et al.
2012) as a point object of their own, ``<source> Whitewater``, live and baked.

A liquid with Whitewater on (``object.unified_particles.whitewater``) gets a ``core.Whitewater`` of
``whitewater_capacity`` slots, stepped after every frame's step with the liquid's live particles
(:func:`step`; seeded by the source's name, so a re-simulated frame makes the same particles). Its
particle object holds **three blocks of capacity points**: spray, foam, bubbles. Slot i of the core is
point i of the block of its kind and parked (``fluids.PARK_Z``) in the two others; free slots are parked
in all three. So the kind of every point is fixed by its index, and a point cache (PC2 + Mesh Cache,
positions only) replays the kinds without the add-on: the Geometry Nodes group ``Unified Particles
Whitewater`` (plain Blender nodes) stores each point's block (index // capacity) before deleting the
parked points, draws each block as a point cloud of spheres of ``POINT_RADII`` particle radii (an
instance of its own: a point cloud takes one material) and gives each block its
material (white foam, glinting spray, clear bubbles; modifier inputs, so each file keeps its own).

Imports ``fluids``, ``liquid_surface``, ``mesh_io``, ``rna`` and the core; not a registered module.
"""

from __future__ import annotations

import zlib
from typing import Any

import bpy
import numpy as np

from ..core.whitewater import BUBBLE, FOAM, SPRAY, Whitewater
from . import fluids, liquid_surface, mesh_io
from .liquid_surface import _interface_socket, _Nodes, _set, set_modifier_input
from .mesh_io import FloatArray
from .rna import as_type, context_scene, mesh_of, object_settings, scene_settings

OBJECT_SUFFIX = " Whitewater"
NODE_GROUP_NAME = "Unified Particles Whitewater"
MODIFIER_NAME = "Whitewater"
GROUP_VERSION = 2
#: ID property of a whitewater object: its liquid's source object.
SOURCE_KEY = "unified_particles_whitewater_of"
#: The blocks of the particle object, in order: core kind of each.
BLOCKS = (SPRAY, FOAM, BUBBLE)
#: A diffuse particle's sphere, in particle radii (Ihmsen et al. render them as small points).
POINT_RADII = 0.25
#: Material names and Principled BSDF settings: base colour, roughness, transmission.
MATERIALS: dict[str, tuple[tuple[float, float, float, float], float, float]] = {
    "Whitewater Spray": ((0.9, 0.95, 1.0, 1.0), 0.2, 0.6),
    "Whitewater Foam": ((1.0, 1.0, 1.0, 1.0), 0.9, 0.0),
    "Whitewater Bubbles": ((0.85, 0.95, 1.0, 1.0), 0.0, 1.0),
}


def source_of(obj: bpy.types.Object) -> bpy.types.Object | None:
    """The liquid whose whitewater ``obj`` draws (None: not a whitewater object)."""
    source = obj.get(SOURCE_KEY)
    return source if isinstance(source, bpy.types.Object) else None


def create(source: bpy.types.Object, scene: bpy.types.Scene) -> Whitewater:
    """The core whitewater of a liquid whose source is ``source`` (its settings' capacity, the scene's
    radius and gravity, a seed from its name)."""
    settings = object_settings(source)
    gravity = tuple(scene.gravity[:]) if scene.use_gravity else (0.0, 0.0, 0.0)
    return Whitewater(
        float(scene_settings(scene).particle_radius),
        capacity=int(settings.whitewater_capacity),
        seed=zlib.crc32(source.name.encode()),
        gravity=gravity,
    )


def bake_uid(source_uid: str) -> str:
    """The cache id of a liquid's whitewater stream: its source's, marked (files of their own)."""
    return f"{source_uid}-whitewater"


def step(entries: list[Any], world: Any, dt: float) -> None:
    """After a frame's step: every liquid's whitewater follows its live particles for ``dt`` seconds."""
    for entry in entries:
        if getattr(entry, "whitewater", None) is None:
            continue
        body = entry.body
        live = body.indices[np.asarray(world.particle_active)[body.indices]]
        entry.whitewater.step(np.asarray(world.positions)[live], np.asarray(world.velocities)[live], dt)


def block_points(ww: Whitewater) -> tuple[FloatArray, np.ndarray]:
    """World points (3 C, 3) of the particle object and which are live (3 C,): the blocks of the module
    doc (a slot's point is live in the block of its kind only)."""
    live = np.concatenate([ww.kind == kind for kind in BLOCKS])
    return np.tile(ww.positions, (len(BLOCKS), 1)), live


def write(obj: bpy.types.Object, ww: Whitewater) -> None:
    """Show ``ww`` on its particle object ``obj`` (local space, the other blocks' points parked)."""
    points, live = block_points(ww)
    inverse = np.linalg.inv(mesh_io.matrix_to_numpy(obj.matrix_world))
    mesh_io.write_positions(
        mesh_of(obj), fluids.park_inactive(mesh_io.transform_points(inverse, points), live)
    )


def ensure_object(source: bpy.types.Object, capacity: int, radius: float) -> bpy.types.Object:
    """The ``<source> Whitewater`` object of a liquid (made, or resized to 3 x ``capacity`` points, all
    parked) with its modifier; the source's ``whitewater_object``."""
    settings = object_settings(source)
    obj = settings.whitewater_object
    if obj is None or obj.type != "MESH" or source_of(obj) != source:  # a copy's: its own
        name = source.name + OBJECT_SUFFIX
        obj = bpy.data.objects.new(name, bpy.data.meshes.new(name))
        for collection in list(source.users_collection) or [context_scene(bpy.context).collection]:
            collection.objects.link(obj)
        settings.whitewater_object = obj
        obj[SOURCE_KEY] = source  # not ``source_object``: that marks grains and liquid (blender/identity.py)
    mesh = mesh_of(obj)
    n = len(BLOCKS) * int(capacity)
    if len(mesh.vertices) != n:
        parked = np.zeros((n, 3))
        parked[:, 2] = fluids.PARK_Z
        mesh_io.set_point_cloud(mesh, parked, POINT_RADII * radius)
    _ensure_modifier(obj, int(capacity), POINT_RADII * radius)
    return obj


def remove_object(source: bpy.types.Object) -> None:
    """Delete the whitewater object of ``source`` (Whitewater off, Clear), if it is its own."""
    settings = object_settings(source)
    obj = settings.whitewater_object
    settings.whitewater_object = None
    if obj is not None and source_of(obj) == source:
        bpy.data.objects.remove(obj)


def _material(name: str) -> bpy.types.Material:
    mat = bpy.data.materials.get(name)
    if mat is not None:
        return mat
    colour, roughness, transmission = MATERIALS[name]
    mat = bpy.data.materials.new(name)
    mat.diffuse_color = colour
    if not mat.use_nodes:  # 5.0+: materials always use nodes
        mat.use_nodes = True
    tree = mat.node_tree
    bsdf = tree.nodes.get("Principled BSDF") if tree is not None else None
    if bsdf is not None:
        _set(bsdf.inputs["Base Color"], colour)
        _set(bsdf.inputs["Roughness"], roughness)
        key = "Transmission Weight" if "Transmission Weight" in bsdf.inputs else "Transmission"
        _set(bsdf.inputs[key], transmission)
    return mat


def _build(group: bpy.types.NodeTree) -> None:
    """Store each point's block, delete the parked points, spheres, one material per block."""
    group.nodes.clear()
    interface = group.interface
    if interface is None:
        raise RuntimeError(f"node group {group.name!r} has no interface")
    interface.clear()
    _interface_socket(group, "Geometry", "NodeSocketGeometry")
    _interface_socket(group, "Geometry", "NodeSocketGeometry", "OUTPUT")
    radius = _interface_socket(group, "Point Radius", "NodeSocketFloat")
    radius.default_value, radius.min_value, radius.subtype = 0.01, 0.0, "DISTANCE"
    capacity = _interface_socket(group, "Capacity", "NodeSocketInt")
    capacity.default_value, capacity.min_value = 1, 1
    capacity.description = "Points per block (spray, foam, bubbles)"
    for name in MATERIALS:
        _interface_socket(group, name.replace("Whitewater ", ""), "NodeSocketMaterial")
    nodes, links = _Nodes(group), group.links
    group_in = nodes.node("NodeGroupInput", -1200, 0)
    group_out = nodes.node("NodeGroupOutput", 1400, 0)
    index = nodes.node("GeometryNodeInputIndex", -1200, -200).outputs[0]
    per_block = nodes.math("DIVIDE", -1000, -200, index, group_in.outputs["Capacity"])
    block = nodes.math("FLOOR", -800, -200, per_block, 0.0)
    store = nodes.node("GeometryNodeStoreNamedAttribute", -600, 0)
    store.data_type, store.domain = "FLOAT", "POINT"
    _set(store.inputs["Name"], "whitewater_block")
    links.new(group_in.outputs["Geometry"], store.inputs["Geometry"])
    links.new(block, store.inputs["Value"])
    z = nodes.node("ShaderNodeSeparateXYZ", -600, -300)
    links.new(nodes.node("GeometryNodeInputPosition", -800, -300).outputs[0], z.inputs[0])
    delete = nodes.node("GeometryNodeDeleteGeometry", -400, 0)
    delete.domain = "POINT"
    links.new(store.outputs[0], delete.inputs["Geometry"])
    parked = nodes.math("LESS_THAN", -400, -300, z.outputs["Z"], liquid_surface.INACTIVE_BELOW_Z)
    links.new(parked, delete.inputs["Selection"])
    named = nodes.node("GeometryNodeInputNamedAttribute", -200, -300)
    named.data_type = "FLOAT"
    _set(named.inputs["Name"], "whitewater_block")
    # One point cloud per block, each its own instance: a point cloud takes one material only.
    instances = nodes.node("GeometryNodeGeometryToInstance", 1000, 0)
    for k, name in enumerate(MATERIALS):
        other = nodes.node("FunctionNodeCompare", -200 + 300 * k, -500)
        other.data_type, other.operation = "FLOAT", "NOT_EQUAL"
        links.new(named.outputs[0], other.inputs[0])
        _set(other.inputs[1], float(k))
        _set(other.inputs["Epsilon"], 0.25)
        keep = nodes.node("GeometryNodeDeleteGeometry", -200 + 300 * k, 200 - 250 * k)
        keep.domain = "POINT"
        links.new(delete.outputs[0], keep.inputs["Geometry"])
        links.new(other.outputs[0], keep.inputs["Selection"])
        to_points = nodes.node("GeometryNodeMeshToPoints", 0 + 300 * k, 200 - 250 * k)
        to_points.mode = "VERTICES"
        links.new(keep.outputs[0], to_points.inputs["Mesh"])
        links.new(group_in.outputs["Point Radius"], to_points.inputs["Radius"])
        set_material = nodes.node("GeometryNodeSetMaterial", 200 + 300 * k, 200 - 250 * k)
        links.new(to_points.outputs[0], set_material.inputs["Geometry"])
        links.new(group_in.outputs[name.replace("Whitewater ", "")], set_material.inputs["Material"])
        links.new(set_material.outputs[0], instances.inputs["Geometry"])
    links.new(instances.outputs[0], group_out.inputs[0])
    group["unified_particles_whitewater_version"] = GROUP_VERSION


def node_group() -> bpy.types.NodeTree:
    """The file's ``Unified Particles Whitewater`` group (built on first use or from an older layout)."""
    group = bpy.data.node_groups.get(NODE_GROUP_NAME)
    if group is not None and group.bl_idname != "GeometryNodeTree":
        group.name = NODE_GROUP_NAME + " (not ours)"
        group = None
    if group is None:
        group = bpy.data.node_groups.new(NODE_GROUP_NAME, "GeometryNodeTree")
    if group.get("unified_particles_whitewater_version") != GROUP_VERSION:
        _build(group)
    return group


def _ensure_modifier(obj: bpy.types.Object, capacity: int, point_radius: float) -> None:
    group = node_group()
    found = next(
        (m for m in obj.modifiers if isinstance(m, bpy.types.NodesModifier) and m.node_group == group), None
    )
    if found is None:
        found = as_type(obj.modifiers.new(MODIFIER_NAME, "NODES"), bpy.types.NodesModifier)
        found.node_group = group
    values: dict[str, Any] = {"Point Radius": float(point_radius), "Capacity": int(capacity)}
    values.update({name.replace("Whitewater ", ""): _material(name) for name in MATERIALS})
    for name, value in values.items():
        set_modifier_input(found, name, value)
    mesh = mesh_of(obj)
    for name in MATERIALS:
        if name not in mesh.materials:
            mesh.materials.append(_material(name))
    found.use_pin_to_last = True  # after the bake's Mesh Cache
    obj.update_tag()
