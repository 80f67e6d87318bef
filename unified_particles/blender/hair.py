# SPDX-License-Identifier: GPL-3.0-or-later
"""The Hair role: a Curves object (Blender 4.2+ hair) whose strands are simulated (core ``add_hair``).

Every curve point becomes a particle; each strand's root is attached to the Curves' surface mesh
(``Curves.surface``) where its ``surface_uv_coordinate`` lies on the surface's UV map
(``Curves.surface_uv_map``): a triangle and barycentric weights, found once at build; without them, the
surface point closest to the root. Every frame the surface's evaluated mesh (armature, shape keys, any
modifier that keeps its vertex count) moves the roots, and the second points keep the angle they leave the
surface at.

The result reaches the Curves object through a vertex-only ``<curves> Hair Points`` mesh (hidden, one vertex
per curve point, written like a rope's particle object and baked the same way: PC2 + Mesh Cache) and a
Geometry Nodes modifier on the Curves object (Object Info of the points, Relative -> Sample Index of their
position by point index -> Set Position): the hair renders as curves in Cycles and Eevee, live and baked,
and a bake replays without the add-on (Mesh Cache and Geometry Nodes are Blender's own). Not a registered
module.
"""

from __future__ import annotations

import bpy
import numpy as np

from ..core import Hair, SimulationInputError, World
from ..core.hair import locate_uv
from . import mesh_io
from .mesh_io import FloatArray, IntArray
from .rna import as_type, object_settings

FOLLOW_MODIFIER = "Unified Particles Hair"
FOLLOW_GROUP_SUFFIX = " Hair Follow"
UV_ATTRIBUTE = "surface_uv_coordinate"


def can_be_hair(obj: bpy.types.Object) -> bool:
    """A Curves (hair) object."""
    return obj.type == "CURVES"


def surface_of(obj: bpy.types.Object) -> bpy.types.Object:
    """The Curves object's surface mesh object; raises SimulationInputError without one."""
    surface = getattr(obj.data, "surface", None)
    if surface is None or surface.type != "MESH":
        raise SimulationInputError(
            f"{obj.name!r} has no surface mesh: set its Surface (Object Data > Surface) to the mesh the "
            "hair grows on"
        )
    return surface


def strand_points(obj: bpy.types.Object) -> tuple[FloatArray, IntArray]:
    """The Curves object's points in world space (N, 3), metres, and the points per curve (S,)."""
    curves = as_type(obj.data, bpy.types.Curves)
    n, s = len(curves.points), len(curves.curves)
    local = np.empty(n * 3, dtype=np.float32)
    as_type(curves.attributes["position"], bpy.types.FloatVectorAttribute).data.foreach_get("vector", local)
    offsets = np.empty(s + 1, dtype=np.int32)
    curves.curve_offset_data.foreach_get("value", offsets)
    matrix = mesh_io.matrix_to_numpy(obj.matrix_world)
    points: FloatArray = mesh_io.transform_points(matrix, local.reshape(-1, 3).astype(np.float64))
    return points, np.diff(offsets).astype(np.int64)


def surface_mesh(
    surface: bpy.types.Object, depsgraph: bpy.types.Depsgraph, uv_map: str = ""
) -> tuple[FloatArray, IntArray, FloatArray | None]:
    """The surface's evaluated mesh: world vertices (V, 3), triangles (T, 3) and, if ``uv_map`` names one of
    its UV maps, the triangles' UV corners (T, 3, 2)."""
    surface_eval = surface.evaluated_get(depsgraph)
    mesh = surface_eval.to_mesh()
    try:
        mesh.calc_loop_triangles()
        v = np.empty(len(mesh.vertices) * 3, dtype=np.float64)
        mesh.vertices.foreach_get("co", v)
        tris = np.empty(len(mesh.loop_triangles) * 3, dtype=np.int32)
        mesh.loop_triangles.foreach_get("vertices", tris)
        uv_corners = None
        layer = mesh.uv_layers.get(uv_map) if uv_map else None
        if layer is not None:
            loops = np.empty(len(mesh.loop_triangles) * 3, dtype=np.int32)
            mesh.loop_triangles.foreach_get("loops", loops)
            uv = np.empty(len(mesh.loops) * 2, dtype=np.float64)
            layer.data.foreach_get("uv", uv)
            uv_corners = uv.reshape(-1, 2)[loops].reshape(-1, 3, 2)
    finally:
        surface_eval.to_mesh_clear()
    matrix = mesh_io.matrix_to_numpy(surface_eval.matrix_world)
    world_v: FloatArray = mesh_io.transform_points(matrix, v.reshape(-1, 3))
    return world_v, tris.reshape(-1, 3).astype(np.int64), uv_corners


def root_attachments(
    obj: bpy.types.Object, uv_corners: FloatArray | None
) -> tuple[IntArray | None, FloatArray | None]:
    """Each strand's (triangle, barycentric weights) from its ``surface_uv_coordinate`` on the surface's UV
    map; (None, None) without them (the core then takes the surface point closest to each root)."""
    curves = as_type(obj.data, bpy.types.Curves)
    attribute = curves.attributes.get(UV_ATTRIBUTE)
    if uv_corners is None or attribute is None or attribute.domain != "CURVE" or not len(curves.curves):
        return None, None
    uv = np.empty(len(curves.curves) * 2, dtype=np.float64)
    attribute.data.foreach_get("vector", uv)
    tri, bary = locate_uv(uv_corners, uv.reshape(-1, 2))
    if (tri < 0).any():
        return None, None
    return tri, bary


def add_hair(
    world: World, obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph, radius: float | None
) -> Hair:
    """Add the Curves object ``obj`` to ``world`` as hair (its settings: mass or density, friction, bending,
    damping, self collision); ``radius``: its own particle radius, metres (None: the scene's)."""
    s = object_settings(obj)
    surface = surface_of(obj)
    points, counts = strand_points(obj)
    curves = as_type(obj.data, bpy.types.Curves)
    vertices, tris, uv_corners = surface_mesh(surface, depsgraph, str(curves.surface_uv_map))
    tri, bary = root_attachments(obj, uv_corners)
    return world.add_hair(
        points, vertices, tris, points_per_strand=counts, root_triangles=tri, root_barycentric=bary,
        radius=radius, mass=float(s.mass) if s.mass_mode == "MASS" else None, density=float(s.density),
        friction=float(s.friction), bend_compliance=bend_compliance(float(s.hair_stiffness)),
        damping=float(s.hair_damping), self_collision=bool(s.self_collision), name=obj.name,
    )  # fmt: skip


def bend_compliance(stiffness: float) -> float | None:
    """XPBD compliance (m/N) of the bending across two links for the Hair Stiffness factor (0..1, log scale:
    0 a chain, 1 nearly rigid strands)."""
    if stiffness <= 0.0:
        return None
    return float(10.0 ** (-1.0 - 6.0 * stiffness))


def move_roots(hair: Hair, obj: bpy.types.Object | None, depsgraph: bpy.types.Depsgraph | None) -> None:
    """Put ``hair``'s roots on its surface as evaluated at the current frame (skipped if the surface's vertex
    count changed: a modifier that adds geometry)."""
    if obj is None:
        return
    surface = getattr(obj.data, "surface", None)
    if surface is None or surface.type != "MESH":
        return
    graph = depsgraph if depsgraph is not None else bpy.context.evaluated_depsgraph_get()
    vertices, tris, _ = surface_mesh(surface, graph)
    if len(tris) == len(hair.surface_faces) and np.array_equal(tris, hair.surface_faces):
        hair.set_surface(vertices)


def follow(curves_obj: bpy.types.Object, points_obj: bpy.types.Object) -> None:
    """Give ``curves_obj`` the Geometry Nodes modifier that puts its points where ``points_obj``'s vertices
    are (by index; Object Info in Relative space, so both may move)."""
    unfollow(curves_obj)
    group = bpy.data.node_groups.new(curves_obj.name + FOLLOW_GROUP_SUFFIX, "GeometryNodeTree")
    interface = group.interface
    if interface is None:
        raise RuntimeError(f"node group {group.name!r} has no interface")
    interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    nodes, links = group.nodes, group.links
    group_in, group_out = nodes.new("NodeGroupInput"), nodes.new("NodeGroupOutput")
    info = nodes.new("GeometryNodeObjectInfo")
    as_type(info, bpy.types.GeometryNodeObjectInfo).transform_space = "RELATIVE"
    as_type(info.inputs["Object"], bpy.types.NodeSocketObject).default_value = points_obj
    sample = nodes.new("GeometryNodeSampleIndex")
    as_type(sample, bpy.types.GeometryNodeSampleIndex).data_type = "FLOAT_VECTOR"
    as_type(sample, bpy.types.GeometryNodeSampleIndex).domain = "POINT"
    position, index = nodes.new("GeometryNodeInputPosition"), nodes.new("GeometryNodeInputIndex")
    set_position = nodes.new("GeometryNodeSetPosition")
    value_in = next(s for s in sample.inputs if s.name == "Value" and s.type == "VECTOR" and s.enabled)
    value_out = next(s for s in sample.outputs if s.type == "VECTOR" and s.enabled)
    links.new(info.outputs["Geometry"], sample.inputs["Geometry"])
    links.new(position.outputs[0], value_in)
    links.new(index.outputs[0], sample.inputs["Index"])
    links.new(group_in.outputs[0], set_position.inputs["Geometry"])
    links.new(value_out, set_position.inputs["Position"])
    links.new(set_position.outputs[0], group_out.inputs[0])
    for k, node in enumerate((group_in, info, sample, set_position, group_out)):
        node.location = (300 * k - 600, 0)
    position.location, index.location = (-300, -250), (-300, -400)
    modifier = as_type(curves_obj.modifiers.new(FOLLOW_MODIFIER, "NODES"), bpy.types.NodesModifier)
    modifier.node_group = group


def unfollow(curves_obj: bpy.types.Object) -> None:
    """Remove the modifier :func:`follow` added (and its node group where nothing else uses it)."""
    modifier = curves_obj.modifiers.get(FOLLOW_MODIFIER)
    if modifier is None:
        return
    group = getattr(modifier, "node_group", None)
    curves_obj.modifiers.remove(modifier)
    if group is not None and group.users == 0 and group.name.endswith(FOLLOW_GROUP_SUFFIX):
        bpy.data.node_groups.remove(group)
