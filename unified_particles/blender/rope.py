# SPDX-License-Identifier: GPL-3.0-or-later
"""The Rope role: a curve (Bezier, poly, NURBS) or an edge-only mesh simulated as a rope (core ``add_rope``).

The source's evaluated geometry in world space (a curve's evaluated mesh: its splines at their resolution)
is read as one polyline, walked along its edges from an end; the core resamples it every particle
diameter. The result is shown and baked like grains (:mod:`.granular`): the source is hidden and a
``<source> Rope`` particle object holds one vertex per rope particle, in order along the rope, drawn as a
smooth tube through them by its Geometry Nodes (:func:`tube_node_group`), so it bakes to a point cache
(the Mesh Cache modifier moves the vertices, the nodes after it make the tube) and replays without the
add-on. Pins (Rope Pins: start, end,
both) follow the source's world matrix as it moves (keyframes, parents). Tie Start / Tie End hold an end at
the point of a rigid body where it lies at the start (core ``add_rope(attach=...)``, solved on the body's
pose: the rope pulls the body and the body the rope); nothing new is baked (the rope and the body are). Not
a registered module.
"""

from __future__ import annotations

import bpy
import numpy as np

from ..core import RigidBody, SimulationInputError
from . import mesh_io
from .mesh_io import FloatArray, IntArray
from .rna import as_type

ROPE_PINS = {"NONE": None, "START": "start", "END": "end", "BOTH": "both"}
TUBE_NODE_GROUP_SUFFIX = " Rope Tube"
# The tube: a Catmull-Rom spline through the particles (it passes through each), this many segments per
# link, and a circle of this many sides scaled by each particle's radius.
TUBE_SEGMENTS_PER_LINK = 4
TUBE_SIDES = 12


def tube_node_group(name: str, material: bpy.types.Material | None) -> bpy.types.NodeTree:
    """A Geometry Nodes group drawing the vertices of a mesh, in index order, as one smooth tube of their
    ``radius`` attribute: Mesh to Points, Points to Curves, Catmull-Rom, Curve to Mesh with a circle,
    smooth shading, the material. Blender's own nodes only, so a bake replays without the add-on."""
    group = bpy.data.node_groups.new(name, "GeometryNodeTree")
    interface = group.interface  # since 4.0 (the 4.2 LTS and 5.0 both have it)
    if interface is None:
        raise RuntimeError(f"node group {name!r} has no interface")
    interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    nodes, link = group.nodes, group.links.new
    group_in, group_out = nodes.new("NodeGroupInput"), nodes.new("NodeGroupOutput")
    radius = nodes.new("GeometryNodeInputNamedAttribute")
    as_type(radius, bpy.types.GeometryNodeInputNamedAttribute).data_type = "FLOAT"
    as_type(radius.inputs["Name"], bpy.types.NodeSocketString).default_value = "radius"
    to_points = nodes.new("GeometryNodeMeshToPoints")
    as_type(to_points, bpy.types.GeometryNodeMeshToPoints).mode = "VERTICES"
    to_curve = nodes.new("GeometryNodePointsToCurves")  # in point index order: along the rope
    spline = nodes.new("GeometryNodeCurveSplineType")
    as_type(spline, bpy.types.GeometryNodeCurveSplineType).spline_type = "CATMULL_ROM"
    resolution = nodes.new("GeometryNodeSetSplineResolution")
    as_type(resolution.inputs["Resolution"], bpy.types.NodeSocketInt).default_value = TUBE_SEGMENTS_PER_LINK
    set_radius = nodes.new("GeometryNodeSetCurveRadius")
    circle = nodes.new("GeometryNodeCurvePrimitiveCircle")  # radius 1 m (its default), scaled per point
    as_type(circle.inputs["Resolution"], bpy.types.NodeSocketInt).default_value = TUBE_SIDES
    to_mesh = nodes.new("GeometryNodeCurveToMesh")
    smooth = nodes.new("GeometryNodeSetShadeSmooth")
    set_material = nodes.new("GeometryNodeSetMaterial")
    as_type(set_material.inputs["Material"], bpy.types.NodeSocketMaterial).default_value = material
    link(group_in.outputs[0], to_points.inputs["Mesh"])
    link(radius.outputs["Attribute"], to_points.inputs["Radius"])
    link(to_points.outputs["Points"], to_curve.inputs["Points"])
    link(to_curve.outputs["Curves"], spline.inputs["Curve"])
    link(spline.outputs["Curve"], resolution.inputs["Geometry"])
    link(resolution.outputs["Geometry"], set_radius.inputs["Curve"])
    link(radius.outputs["Attribute"], set_radius.inputs["Radius"])
    link(set_radius.outputs["Curve"], to_mesh.inputs["Curve"])
    link(circle.outputs["Curve"], to_mesh.inputs["Profile Curve"])
    if "Scale" in to_mesh.inputs:  # 4.4+: the profile's scale is an input (4.2 scales it by the radius)
        link(nodes.new("GeometryNodeInputRadius").outputs[0], to_mesh.inputs["Scale"])
    as_type(to_mesh.inputs["Fill Caps"], bpy.types.NodeSocketBool).default_value = True
    link(to_mesh.outputs["Mesh"], smooth.inputs["Geometry"])
    link(smooth.outputs["Geometry"], set_material.inputs["Geometry"])
    link(set_material.outputs["Geometry"], group_out.inputs[0])
    for k, node in enumerate(nodes):  # laid out left to right, for whoever opens the editor
        node.location = (250 * k - 1500, 0)
    return group


def can_be_rope(obj: bpy.types.Object) -> bool:
    """A curve, or a mesh with edges and no faces."""
    if obj.type == "CURVE":
        return True
    mesh = obj.data
    return (
        obj.type == "MESH" and isinstance(mesh, bpy.types.Mesh) and len(mesh.edges) > 0 and not mesh.polygons
    )


def chain_order(n: int, edges: IntArray, name: str) -> IntArray:
    """The vertex indices of the one chain the ``edges`` (E, 2) of ``n`` vertices make, from an end (a loop:
    from vertex 0); raises SimulationInputError for branches or separate pieces. Build time only."""
    if len(edges) == 0:
        raise SimulationInputError(
            f"{name!r} has no edges: a rope needs a curve or a mesh of connected edges"
        )
    used = np.unique(edges)
    degree = np.bincount(edges.ravel(), minlength=n)
    if degree.max() > 2:
        raise SimulationInputError(
            f"{name!r} branches (a vertex on 3 or more edges): make one strand per object"
        )
    ends = np.flatnonzero(degree == 1)
    neighbours: dict[int, list[int]] = {int(v): [] for v in used}
    for a, b in edges.tolist():  # a walk once per build, never in the step
        neighbours[a].append(b)
        neighbours[b].append(a)
    start = int(ends[0]) if len(ends) else int(used[0])
    order, previous, current = [start], -1, start
    while True:
        following = [v for v in neighbours[current] if v != previous]
        if not following or following[0] == start:
            break
        previous, current = current, following[0]
        order.append(current)
    if len(order) != len(used):
        raise SimulationInputError(f"{name!r} is in several pieces: make one strand per object")
    if not len(ends):
        order.append(start)  # a closed loop comes back to its start
    return np.asarray(order, dtype=np.int64)


def rope_points(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph) -> FloatArray:
    """The source's evaluated polyline in world space, (K, 3) metres, in order along it."""
    obj_eval = obj.evaluated_get(depsgraph)
    mesh = obj_eval.to_mesh()
    try:
        n = len(mesh.vertices)
        co = np.empty(n * 3, dtype=np.float64)
        mesh.vertices.foreach_get("co", co)
        flat = np.empty(len(mesh.edges) * 2, dtype=np.int64)
        mesh.edges.foreach_get("vertices", flat)
        if len(mesh.polygons):
            raise SimulationInputError(f"{obj.name!r} has faces: a rope is a curve or a mesh of edges only")
    finally:
        obj_eval.to_mesh_clear()
    order = chain_order(n, flat.reshape(-1, 2), obj.name)
    matrix = mesh_io.matrix_to_numpy(obj_eval.matrix_world)
    points: FloatArray = mesh_io.transform_points(matrix, co.reshape(-1, 3)[order])
    return points


ROPE_TIES = (("rope_tie_start", "Tie Start", 0), ("rope_tie_end", "Tie End", -1))


def is_tied(obj: bpy.types.Object) -> bool:
    """A rope with Tie Start or Tie End set: built after the rigid bodies it is tied to."""
    s = obj.unified_particles  # type: ignore[attr-defined]
    return s.role == "ROPE" and any(getattr(s, prop) is not None for prop, _, _ in ROPE_TIES)


def rope_ties(obj: bpy.types.Object, rigid: dict[str, RigidBody]) -> list[tuple[int, RigidBody]]:
    """The rope's (end particle, rigid body) ties for core ``add_rope(attach=...)`` from Tie Start / Tie
    End; ``rigid``: the scene's built rigid bodies by object name. Raises SimulationInputError (the rope
    is then left out, its message shown) for a tie to an object that is not a simulated rigid body."""
    s = obj.unified_particles  # type: ignore[attr-defined]
    ties: list[tuple[int, RigidBody]] = []
    for prop, label, end in ROPE_TIES:
        target = getattr(s, prop)
        if target is None:
            continue
        if target.unified_particles.role != "RIGID":
            raise SimulationInputError(
                f"{obj.name!r}: {label} {target.name!r} is not a rigid body; give it the Rigid role "
                f"(Make Rigid) or clear {label}"
            )
        if target.name not in rigid:
            raise SimulationInputError(
                f"{obj.name!r}: {label} {target.name!r} is not simulated (excluded, hidden or it could not "
                f"be built); include it or clear {label}"
            )
        ties.append((end, rigid[target.name]))
    return ties


def tie_signature(obj: bpy.types.Object) -> dict[str, str]:
    """The names of the rope's tied bodies, for the change detector (only those set: older bakes stay up
    to date)."""
    s = obj.unified_particles  # type: ignore[attr-defined]
    return {prop: getattr(s, prop).name for prop, _, _ in ROPE_TIES if getattr(s, prop) is not None}
