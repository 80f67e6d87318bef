# SPDX-License-Identifier: GPL-3.0-or-later
"""The particle object of a granular source: a vertex-only mesh drawn as spheres by Geometry Nodes.

``make_granular`` hides the source mesh (never deletes it) and creates ``<source> Grains``: a mesh
with one vertex per grain, a float POINT attribute ``radius`` and a Geometry Nodes modifier
(Named Attribute ``radius`` -> Mesh to Points -> Set Material with the source's material). Point
clouds render as spheres in Cycles and Eevee and draw in the viewport. ``clear`` deletes the
particle object and shows the source again. Not a registered module (no ``register()``).
"""

from __future__ import annotations

import contextlib

import bpy
import numpy as np

from ..core import SimulationInputError, World
from . import hair, mesh_io, rope
from .mesh_io import FloatArray
from .rna import as_type, context_scene, mesh_of, object_settings

NODE_GROUP_SUFFIX = " Grains Spheres"
# Roles whose source is drawn by a particle object: grains here, liquids in ``fluids`` (same pointers).
PARTICLE_ROLES = ("GRANULAR", "FLUID", "INFLOW", "ROPE", "HAIR")
# The particle object's name: the source's and this (fluids: " Fluid").
_SUFFIX = {"GRANULAR": " Grains", "ROPE": " Rope", "HAIR": " Hair Points"}


def particle_object_name(source: bpy.types.Object) -> str:
    """The name of a source's particle object: ``<source> Grains`` or ``<source> Fluid``."""
    return source.name + _SUFFIX.get(object_settings(source).role, " Fluid")


def _link(
    node_tree: bpy.types.NodeTree, from_socket: bpy.types.NodeSocket, to_socket: bpy.types.NodeSocket
) -> None:
    node_tree.links.new(from_socket, to_socket)


def sphere_node_group(name: str, material: bpy.types.Material | None) -> bpy.types.NodeTree:
    """A Geometry Nodes group turning the vertices of a mesh into spheres of their ``radius`` attribute."""
    group = bpy.data.node_groups.new(name, "GeometryNodeTree")
    # The interface API exists since 4.0 (the 4.2 LTS and 5.0 both have it).
    interface = group.interface
    if interface is None:
        raise RuntimeError(f"node group {name!r} has no interface")
    interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    nodes = group.nodes
    group_in = nodes.new("NodeGroupInput")
    group_in.location = (-600, 0)
    radius = nodes.new("GeometryNodeInputNamedAttribute")
    as_type(radius, bpy.types.GeometryNodeInputNamedAttribute).data_type = "FLOAT"
    as_type(radius.inputs["Name"], bpy.types.NodeSocketString).default_value = "radius"
    radius.location = (-600, -200)
    to_points = nodes.new("GeometryNodeMeshToPoints")
    as_type(to_points, bpy.types.GeometryNodeMeshToPoints).mode = "VERTICES"
    to_points.location = (-300, 0)
    set_material = nodes.new("GeometryNodeSetMaterial")
    set_material.location = (0, 0)
    as_type(set_material.inputs["Material"], bpy.types.NodeSocketMaterial).default_value = material
    group_out = nodes.new("NodeGroupOutput")
    group_out.location = (300, 0)
    _link(group, group_in.outputs[0], to_points.inputs["Mesh"])
    _link(group, radius.outputs["Attribute"], to_points.inputs["Radius"])
    _link(group, to_points.outputs["Points"], set_material.inputs["Geometry"])
    _link(group, set_material.outputs["Geometry"], group_out.inputs[0])
    return group


def source_material(source: bpy.types.Object) -> bpy.types.Material | None:
    if source.active_material is not None:
        return source.active_material
    for slot in source.material_slots:
        if slot.material is not None:
            return slot.material
    return None


def create_particle_object(
    source: bpy.types.Object, points_world: FloatArray, radius: float | FloatArray
) -> bpy.types.Object:
    """Create the particle object of ``source`` with grains at ``points_world`` and hide the source."""
    # Make Granular creates it before it sets the role: " Grains" unless the source is already a rope.
    name = source.name + _SUFFIX.get(object_settings(source).role, " Grains")
    mesh = bpy.data.meshes.new(name)
    mesh_io.set_point_cloud(mesh, points_world, radius)
    material = source_material(source)
    if material is not None:
        mesh.materials.append(material)
    obj = bpy.data.objects.new(name, mesh)
    collections = list(source.users_collection) or [context_scene(bpy.context).collection]
    for collection in collections:
        collection.objects.link(obj)
    if object_settings(source).role == "HAIR":  # the Curves object stays shown and follows the points
        object_settings(obj).source_object = source
        object_settings(source).particle_object = obj
        obj.hide_render = True
        obj.hide_set(True)
        hair.follow(source, obj)
        return obj
    modifier = as_type(obj.modifiers.new(name[len(source.name) + 1 :], "NODES"), bpy.types.NodesModifier)
    if object_settings(source).role == "ROPE":  # a smooth tube through the rope's particles
        modifier.node_group = rope.tube_node_group(name + rope.TUBE_NODE_GROUP_SUFFIX, material)
    else:
        modifier.node_group = sphere_node_group(name + NODE_GROUP_SUFFIX, material)
    object_settings(obj).source_object = source
    object_settings(source).particle_object = obj
    if object_settings(source).role not in _SUFFIX:  # not a re-creation: remember the user's setting
        object_settings(source).source_hidden_render = source.hide_render
    source.hide_render = True
    source.hide_set(True)
    return obj


def update_particle_object(
    obj: bpy.types.Object, points_world: FloatArray, radius: float | FloatArray
) -> None:
    """Replace the grains of a particle object (points in world space)."""
    inverse = np.linalg.inv(mesh_io.matrix_to_numpy(obj.matrix_world))
    mesh_io.set_point_cloud(mesh_of(obj), mesh_io.transform_points(inverse, points_world), radius)


def delete_particle_object(obj: bpy.types.Object) -> None:
    """Delete a particle object with its mesh and grains node group, where nothing else uses them."""
    mesh = obj.data if isinstance(obj.data, bpy.types.Mesh) else None
    groups = [
        m.node_group
        for m in obj.modifiers
        if isinstance(m, bpy.types.NodesModifier) and m.node_group is not None
    ]
    bpy.data.objects.remove(obj)
    if mesh is not None and mesh.users == 0:
        bpy.data.meshes.remove(mesh)
    for group in groups:
        if group.users == 0 and group.name.endswith((NODE_GROUP_SUFFIX, rope.TUBE_NODE_GROUP_SUFFIX)):
            bpy.data.node_groups.remove(group)


def remove_particle_object(source: bpy.types.Object) -> None:
    """Delete the particle object of ``source`` (and its mesh and node group) and show the source again."""
    settings = object_settings(source)
    obj = settings.particle_object
    if obj is not None and object_settings(obj).source_object not in (None, source):
        obj = None  # a copy still pointing at the original's grains (not yet repaired): not ours to delete
    if obj is not None:
        delete_particle_object(obj)
    hair.unfollow(source)
    settings.particle_object = None
    source.hide_render = settings.source_hidden_render
    with contextlib.suppress(RuntimeError):  # not in the current view layer
        source.hide_set(False)


def check_fill(
    obj: bpy.types.Object,
    vertices: FloatArray,
    tris: object,
    radius: float,
    world: World | None,
    max_count: int,
    unit: str,
) -> None:
    """Refuse a fill (grains or fluid) of ``obj`` that breaks a limit (memory, with the particles already in
    ``world`` if given; sampling grid; ``max_count`` per object), naming the object and the smallest
    particle radius that keeps every limit."""
    checker = World(radius=radius) if world is None else world
    try:
        checker.check_fill(vertices, tris, "", max_count=max_count, unit=unit)  # type: ignore[arg-type]
    except SimulationInputError as exc:
        raise SimulationInputError(
            f"{obj.name!r}{exc}".replace("or fewer/smaller objects", "or make the object smaller").replace(
                "use a particle radius of", "raise the particle radius to"
            )
        ) from None
