# SPDX-License-Identifier: GPL-3.0-or-later
"""Cloth on deformed meshes: the simulated shape lands after the deformers, as with Blender's Cloth.

A cloth whose mesh is deformed (shape keys, or an Armature, Hook, Lattice, Mesh Deform, ... modifier)
cannot take the simulated positions in its vertices like other cloths: the deformers would move them a
second time. Such a cloth keeps its rest shape in the mesh and gets a Geometry Nodes modifier, *Unified
Particles Cloth*, right after its last deforming modifier (subdivision and other modifiers stay after
it). The modifier's node group

* stores the deformed position (its input) in the point attribute ``up_animated``: the pinned vertices
  are read from there each frame, so a cape pinned to a bone rides on the bone;
* sets the position to the point attribute ``up_simulated`` where the mesh has one: write-back puts the
  simulated positions (object space) there; at the start frame there is none and the deformed mesh shows.

The node group is plain Blender, so a file plays without the add-on; a bake puts its Mesh Cache
modifier right after this one. Imports ``mesh_io`` and ``rna``; not a registered module.
"""

from __future__ import annotations

import bpy
import numpy as np

from . import mesh_io
from .mesh_io import FloatArray
from .rna import as_type, mesh_of, object_bake

MODIFIER_NAME = "Unified Particles Cloth"
NODE_GROUP_NAME = "Unified Particles Cloth Result"
ANIMATED_ATTRIBUTE = "up_animated"
SIMULATED_ATTRIBUTE = "up_simulated"

# Modifiers that move vertices without changing the mesh: the cloth's pins follow what they do.
DEFORM_MODIFIERS = frozenset(
    {
        "ARMATURE",
        "CAST",
        "CURVE",
        "DISPLACE",
        "HOOK",
        "LAPLACIANDEFORM",
        "LATTICE",
        "MESH_DEFORM",
        "SHRINKWRAP",
        "SIMPLE_DEFORM",
        "SMOOTH",
        "CORRECTIVE_SMOOTH",
        "LAPLACIANSMOOTH",
        "SURFACE_DEFORM",
        "WARP",
        "WAVE",
    }
)


def deformers(obj: bpy.types.Object) -> list[bpy.types.Modifier]:
    """The object's enabled deforming modifiers, in stack order."""
    return [m for m in obj.modifiers if m.type in DEFORM_MODIFIERS and m.show_viewport]


def is_deformed(obj: bpy.types.Object) -> bool:
    """Whether the cloth's mesh is moved by shape keys (its own, not a Shape Keys bake's) or deforming
    modifiers."""
    if obj.type != "MESH":
        return False
    own_keys = mesh_of(obj).shape_keys is not None and object_bake(obj).baked_output != "SHAPE_KEYS"
    return own_keys or bool(deformers(obj))


def result_modifier(obj: bpy.types.Object) -> bpy.types.NodesModifier | None:
    modifier = obj.modifiers.get(MODIFIER_NAME)
    return modifier if isinstance(modifier, bpy.types.NodesModifier) else None


def _node_group() -> bpy.types.NodeTree:
    """The shared node group (one for every cloth): store the deformed position, show the simulated one."""
    group = bpy.data.node_groups.get(NODE_GROUP_NAME)
    if group is not None and group.bl_idname == "GeometryNodeTree":
        return group
    group = bpy.data.node_groups.new(NODE_GROUP_NAME, "GeometryNodeTree")
    interface = group.interface
    if interface is None:
        raise RuntimeError(f"node group {NODE_GROUP_NAME!r} has no interface")
    interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    nodes, links = group.nodes, group.links
    group_in = nodes.new("NodeGroupInput")
    position = nodes.new("GeometryNodeInputPosition")
    store: bpy.types.Node = nodes.new("GeometryNodeStoreNamedAttribute")
    store_settings = as_type(store, bpy.types.GeometryNodeStoreNamedAttribute)
    store_settings.data_type = "FLOAT_VECTOR"
    store_settings.domain = "POINT"
    as_type(store.inputs["Name"], bpy.types.NodeSocketString).default_value = ANIMATED_ATTRIBUTE
    simulated: bpy.types.Node = nodes.new("GeometryNodeInputNamedAttribute")
    as_type(simulated, bpy.types.GeometryNodeInputNamedAttribute).data_type = "FLOAT_VECTOR"
    as_type(simulated.inputs["Name"], bpy.types.NodeSocketString).default_value = SIMULATED_ATTRIBUTE
    set_position = nodes.new("GeometryNodeSetPosition")
    group_out = nodes.new("NodeGroupOutput")
    for node, x, y in (
        (group_in, -600, 0),
        (position, -600, -150),
        (store, -300, 0),
        (simulated, -300, -250),
        (set_position, 0, 0),
        (group_out, 300, 0),
    ):
        node.location = (x, y)
    links.new(group_in.outputs[0], store.inputs["Geometry"])
    links.new(position.outputs["Position"], store.inputs["Value"])
    links.new(store.outputs["Geometry"], set_position.inputs["Geometry"])
    links.new(simulated.outputs["Exists"], set_position.inputs["Selection"])
    links.new(simulated.outputs["Attribute"], set_position.inputs["Position"])
    links.new(set_position.outputs["Geometry"], group_out.inputs[0])
    return group


def ensure_result_modifier(obj: bpy.types.Object) -> bool:
    """Give a deformed cloth its result modifier, right after its last deformer (True if it changed)."""
    modifier = result_modifier(obj)
    changed = modifier is None
    if modifier is None:
        modifier = as_type(obj.modifiers.new(MODIFIER_NAME, "NODES"), bpy.types.NodesModifier)
    if modifier.node_group is None or modifier.node_group.name != NODE_GROUP_NAME:
        modifier.node_group = _node_group()
        changed = True
    if not (modifier.show_viewport and modifier.show_render):  # switched off by hand: the pins need it
        modifier.show_viewport = modifier.show_render = True
        changed = True
    names = [m.name for m in obj.modifiers]
    last_deformer = max((names.index(m.name) for m in deformers(obj)), default=-1)
    index = names.index(modifier.name)
    # Just after the last deformer (moving it down past a deformer takes that deformer's index).
    target = last_deformer if last_deformer > index else last_deformer + 1
    if target != index:
        obj.modifiers.move(index, target)
        changed = True
    return changed


def remove_result(obj: bpy.types.Object) -> None:
    """Take the result modifier and both attributes off a cloth (Clear, or it is no longer deformed)."""
    modifier = result_modifier(obj)
    if modifier is not None:
        obj.modifiers.remove(modifier)
    if obj.type == "MESH":
        mesh = mesh_of(obj)
        names = [n for n in (SIMULATED_ATTRIBUTE, ANIMATED_ATTRIBUTE) if mesh.attributes.get(n) is not None]
        for name in names:
            mesh_io.remove_attribute(mesh, name)
        if names:
            mesh.update()
    group = bpy.data.node_groups.get(NODE_GROUP_NAME)
    if group is not None and group.users == 0:
        bpy.data.node_groups.remove(group)


def animated_positions(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph | None) -> FloatArray:
    """(V, 3) object-space positions of the cloth's vertices after its deformers, at the evaluated frame.

    Read from the ``up_animated`` attribute of the evaluated mesh. Modifiers after the result modifier
    that add vertices (Subdivision) keep the original vertices first, with their values copied."""
    n = len(mesh_of(obj).vertices)
    graph = depsgraph if depsgraph is not None else bpy.context.evaluated_depsgraph_get()
    obj_eval = obj.evaluated_get(graph)
    mesh = obj_eval.to_mesh()
    try:
        attr = mesh.attributes.get(ANIMATED_ATTRIBUTE)
        if (
            not isinstance(attr, bpy.types.FloatVectorAttribute)
            or attr.domain != "POINT"
            or len(attr.data) < n
        ):
            raise RuntimeError(
                f"Cloth {obj.name!r}: its deformed shape is not available (the '{MODIFIER_NAME}' modifier is "
                "missing or disabled, or a modifier before it changes the vertex count); press Reset"
            )
        flat = np.empty(len(attr.data) * 3, dtype=np.float32)
        attr.data.foreach_get("vector", flat)
    finally:
        obj_eval.to_mesh_clear()
    return flat.reshape(-1, 3)[:n].astype(np.float64)


def show_simulated(obj: bpy.types.Object, local: FloatArray | None) -> None:
    """Show the simulated object-space positions ``local`` (V, 3) after the deformers; None: the deformed
    mesh itself (the start frame)."""
    mesh = mesh_of(obj)
    if local is None:
        mesh_io.remove_attribute(mesh, SIMULATED_ATTRIBUTE)
    else:
        mesh_io.write_float_vector_attribute(mesh, SIMULATED_ATTRIBUTE, local)
    mesh.update()
