# SPDX-License-Identifier: GPL-3.0-or-later
"""The liquid surface: a plain Geometry Nodes group that renders a fluid's particle object.

A fluid's particle object is a vertex-only mesh, one vertex per particle. ``ensure_liquid_surface``
adds (or updates) a Geometry Nodes modifier ``Liquid Surface`` on it that uses one node group per
file, ``Unified Particles Liquid`` (built once, then reused by every fluid). The group uses only
Blender's built-in nodes, so a saved or baked file renders without the add-on:

1. **Inactive particles are deleted.** Fluid slots that are not live (free emitter slots, removed
   particles) are parked far below the scene; every vertex with ``z < INACTIVE_BELOW_Z`` (metres,
   object space) is deleted before anything else. Whoever writes a fluid's points parks inactive
   ones below this constant (import it from here).
2. **Mesh** (the default): Mesh to Points -> Points to Volume (each particle a ball of
   ``BLOB_FACTOR`` particle radii, so a lattice two radii apart merges into one body with no
   interior holes) -> Volume to Mesh -> smoothing (Blur Attribute on the position, ``Smoothing``
   passes) -> every vertex moved ``BLOB_FACTOR - DROP_FACTOR`` radii inwards along its normal, so
   the surface of fluid at rest lies about one particle radius outside the outermost particle
   centres, where the fluid's volume ends, and a lone particle is a drop of ``DROP_FACTOR`` radii
   -> Shade Smooth -> Set Material.
   **Spheres**: Mesh to Points with the particle radius -> Set Material (a point cloud; Cycles and
   Eevee draw it as spheres, as for grains).
3. The material is a modifier input (the fluid source's material), so each fluid keeps its own.

Modifier inputs (names as shown in the modifier panel):

- ``Material``: the material of the surface or spheres.
- ``Spheres``: off = liquid surface mesh, on = one sphere per particle.
- ``Particle Radius`` (m): the world's particle radius.
- ``Resolution``: voxels per particle diameter (voxel size = 2 x radius / resolution). 4 (the
  default) resolves single drops; 2 is coarse and fast; 8 is fine and costs about 8x the memory.
- ``Smoothing``: smoothing passes over the surface's vertices (0 = none). Each pass spreads detail
  over about one voxel; 3-5 gives a calm surface without melting drops.
- ``Centre Shift``: particle radii the surface moves out to make up for points pulled into the
  liquid by smoothing (0 for the particles as simulated).

Not a registered module (no ``register()``); imports only ``rna``.
"""

from __future__ import annotations

from typing import Any, Literal

import bpy
import numpy as np

from .rna import as_type, context_scene, mesh_of, scene_settings

#: Vertices below this height (metres, object space) are inactive fluid slots and are deleted.
INACTIVE_BELOW_Z = -1.0e5
NODE_GROUP_NAME = "Unified Particles Liquid"
MODIFIER_NAME = "Liquid Surface"
#: Radius of each particle's ball in the volume, in particle radii (see the module docstring).
BLOB_FACTOR = 2.0
#: Radius of a lone particle's drop, in particle radii: 1.24 gives the drop the (2 R)^3 volume each
#: particle owns at rest density; 1.2 also puts the faces of a block of fluid at rest (made bumpy by
#: the lattice, then smoothed) one radius outside its outer particle centres on average.
DROP_FACTOR = 1.2
#: Bumped when the group's layout changes: an older group found in a file is rebuilt in place.
GROUP_VERSION = 2
DEFAULT_RESOLUTION = 4.0
DEFAULT_SMOOTHING = 3

Surface = Literal["MESH", "SPHERES"]


def _set(socket: bpy.types.NodeSocket, value: Any) -> None:
    """Set an unlinked input socket's default value (the stubs type sockets generically)."""
    setattr(socket, "default_value", value)  # noqa: B010


def _interface_socket(group: bpy.types.NodeTree, name: str, socket_type: str, in_out: str = "INPUT") -> Any:
    interface = group.interface
    if interface is None:
        raise RuntimeError(f"node group {group.name!r} has no interface")
    return interface.new_socket(name, in_out=in_out, socket_type=socket_type)  # type: ignore[arg-type]


def _build(group: bpy.types.NodeTree) -> None:
    """Fill ``group`` (emptied first) with the liquid surface nodes: its inputs, then the three stages of
    the module doc (delete the parked particles, the surface, mesh or spheres with the material)."""
    group.nodes.clear()
    interface = group.interface
    if interface is None:
        raise RuntimeError(f"node group {group.name!r} has no interface")
    interface.clear()
    _add_inputs(group)
    nodes = _Nodes(group)
    group_in = nodes.node("NodeGroupInput", -1400, 0)
    group_out = nodes.node("NodeGroupOutput", 1600, 0)
    to_points = _live_points(nodes, group_in)
    surface = _surface(nodes, group_in, to_points)
    _mesh_or_spheres(nodes, group_in, group_out, surface, to_points)
    group["unified_particles_liquid_version"] = GROUP_VERSION


def _add_inputs(group: bpy.types.NodeTree) -> None:
    """The group's sockets: geometry in and out, and the modifier inputs of the module doc."""
    _interface_socket(group, "Geometry", "NodeSocketGeometry")
    _interface_socket(group, "Geometry", "NodeSocketGeometry", "OUTPUT")
    _interface_socket(group, "Material", "NodeSocketMaterial")
    spheres = _interface_socket(group, "Spheres", "NodeSocketBool")
    spheres.default_value = False
    spheres.description = "Draw one sphere per particle instead of a liquid surface"
    radius = _interface_socket(group, "Particle Radius", "NodeSocketFloat")
    radius.default_value, radius.min_value, radius.max_value = 0.05, 1e-5, 1e3
    radius.subtype = "DISTANCE"
    radius.description = "The world's particle radius"
    resolution = _interface_socket(group, "Resolution", "NodeSocketFloat")
    resolution.default_value, resolution.min_value, resolution.max_value = DEFAULT_RESOLUTION, 1.0, 16.0
    resolution.description = "Voxels per particle diameter: higher is finer and slower"
    smoothing = _interface_socket(group, "Smoothing", "NodeSocketInt")
    smoothing.default_value, smoothing.min_value, smoothing.max_value = DEFAULT_SMOOTHING, 0, 50
    smoothing.description = "Smoothing passes over the surface (0 = none)"
    shift = _interface_socket(group, "Centre Shift", "NodeSocketFloat")
    shift.default_value, shift.min_value, shift.max_value = 0.0, 0.0, 2.0
    shift.description = "Particle radii the points were pulled into the liquid (smoothed centres)"


class _Nodes:
    """Adds nodes to a group at a place in its editor, and links them."""

    def __init__(self, group: bpy.types.NodeTree) -> None:
        self.nodes, self.links = group.nodes, group.links

    def node(self, kind: str, x: float, y: float) -> Any:
        new = self.nodes.new(kind)
        new.location = (x, y)
        return new

    def math(self, operation: str, x: float, y: float, a: Any, b: Any) -> Any:
        """A Math node's output: ``a`` ``operation`` ``b``, each a socket to link or a number."""
        new = self.node("ShaderNodeMath", x, y)
        new.operation = operation
        for socket, value in ((new.inputs[0], a), (new.inputs[1], b)):
            if isinstance(value, bpy.types.NodeSocket):
                self.links.new(value, socket)
            else:
                _set(socket, float(value))
        return new.outputs[0]


def _live_points(nodes: _Nodes, group_in: Any) -> Any:
    """1. Delete the parked (inactive) particles; the live ones as points of the particle radius."""
    links, r_in = nodes.links, group_in.outputs["Particle Radius"]
    z = nodes.node("ShaderNodeSeparateXYZ", -1200, -250)
    links.new(nodes.node("GeometryNodeInputPosition", -1400, -250).outputs[0], z.inputs[0])
    parked = nodes.math("LESS_THAN", -1000, -250, z.outputs["Z"], INACTIVE_BELOW_Z)
    delete = nodes.node("GeometryNodeDeleteGeometry", -800, 0)
    delete.domain = "POINT"
    links.new(group_in.outputs["Geometry"], delete.inputs["Geometry"])
    links.new(parked, delete.inputs["Selection"])
    to_points = nodes.node("GeometryNodeMeshToPoints", -600, 0)
    to_points.mode = "VERTICES"
    links.new(delete.outputs[0], to_points.inputs["Mesh"])
    links.new(r_in, to_points.inputs["Radius"])
    return to_points


def _surface(nodes: _Nodes, group_in: Any, to_points: Any) -> Any:
    """2. The surface: balls of BLOB_FACTOR radii -> fog volume -> mesh -> smoothed -> shrunk -> shaded
    smooth; returns its last node."""
    links, r_in = nodes.links, group_in.outputs["Particle Radius"]
    to_volume = nodes.node("GeometryNodePointsToVolume", -300, -300)
    if "Resolution Mode" in to_volume.inputs:  # 5.0+: a menu socket
        _set(to_volume.inputs["Resolution Mode"], "Size")
    else:  # 4.2-4.5: a node property
        to_volume.resolution_mode = "VOXEL_SIZE"
    links.new(to_points.outputs[0], to_volume.inputs["Points"])
    diameter = nodes.math("MULTIPLY", -600, -450, r_in, 2.0)
    voxel = nodes.math("DIVIDE", -450, -450, diameter, group_in.outputs["Resolution"])
    links.new(voxel, to_volume.inputs["Voxel Size"])
    links.new(nodes.math("MULTIPLY", -450, -600, r_in, BLOB_FACTOR), to_volume.inputs["Radius"])
    to_mesh = nodes.node("GeometryNodeVolumeToMesh", 0, -300)  # "Grid": meshes the volume's own voxels
    _set(to_mesh.inputs["Threshold"], 0.1)
    links.new(to_volume.outputs[0], to_mesh.inputs["Volume"])

    blur = nodes.node("GeometryNodeBlurAttribute", 0, -550)
    blur.data_type = "FLOAT_VECTOR"
    links.new(nodes.node("GeometryNodeInputPosition", -200, -550).outputs[0], blur.inputs["Value"])
    links.new(group_in.outputs["Smoothing"], blur.inputs["Iterations"])
    smooth = nodes.node("GeometryNodeSetPosition", 250, -300)
    links.new(to_mesh.outputs[0], smooth.inputs["Geometry"])
    links.new(blur.outputs[0], smooth.inputs["Position"])

    # Shrink by (BLOB_FACTOR - DROP_FACTOR - Centre Shift) radii along the normal: the surface ends about
    # one radius outside the outermost particle centres (before smoothing), where the fluid's volume ends.
    radii = nodes.math("ADD", 50, -700, group_in.outputs["Centre Shift"], DROP_FACTOR - BLOB_FACTOR)
    shrink_by = nodes.math("MULTIPLY", 250, -650, r_in, radii)
    offset = nodes.node("ShaderNodeVectorMath", 450, -550)
    offset.operation = "SCALE"
    links.new(nodes.node("GeometryNodeInputNormal", 250, -500).outputs[0], offset.inputs[0])
    links.new(shrink_by, offset.inputs["Scale"])
    shrink = nodes.node("GeometryNodeSetPosition", 650, -300)
    links.new(smooth.outputs[0], shrink.inputs["Geometry"])
    links.new(offset.outputs[0], shrink.inputs["Offset"])
    shade = nodes.node("GeometryNodeSetShadeSmooth", 850, -300)
    links.new(shrink.outputs[0], shade.inputs[0])
    return shade


def _mesh_or_spheres(nodes: _Nodes, group_in: Any, group_out: Any, surface: Any, to_points: Any) -> None:
    """3. The surface or the points (spheres), as the Spheres input says, then the material."""
    links = nodes.links
    switch = nodes.node("GeometryNodeSwitch", 1100, 0)
    switch.input_type = "GEOMETRY"
    links.new(group_in.outputs["Spheres"], switch.inputs["Switch"])
    links.new(surface.outputs[0], switch.inputs["False"])
    links.new(to_points.outputs[0], switch.inputs["True"])
    set_material = nodes.node("GeometryNodeSetMaterial", 1350, 0)
    links.new(switch.outputs[0], set_material.inputs["Geometry"])
    links.new(group_in.outputs["Material"], set_material.inputs["Material"])
    links.new(set_material.outputs[0], group_out.inputs[0])


def liquid_node_group() -> bpy.types.NodeTree:
    """The file's ``Unified Particles Liquid`` group: built on first use, rebuilt if from an older layout."""
    group = bpy.data.node_groups.get(NODE_GROUP_NAME)
    if group is not None and group.bl_idname != "GeometryNodeTree":
        group.name = NODE_GROUP_NAME + " (not ours)"  # a user's group of another kind: keep it, renamed
        group = None
    if group is None:
        group = bpy.data.node_groups.new(NODE_GROUP_NAME, "GeometryNodeTree")
    if group.get("unified_particles_liquid_version") != GROUP_VERSION:
        _build(group)
    return group


def _radius_from_mesh(obj: bpy.types.Object) -> float | None:
    """The largest value of the particle object's ``radius`` point attribute, if it has any."""
    mesh = mesh_of(obj)
    attr = mesh.attributes.get("radius")
    if attr is None or attr.domain != "POINT" or attr.data_type != "FLOAT" or not len(mesh.vertices):
        return None
    values = np.empty(len(mesh.vertices), dtype=np.float32)
    as_type(attr, bpy.types.FloatAttribute).data.foreach_get("value", values)
    largest = float(values.max())
    return largest if largest > 0.0 else None


def _input_id(group: bpy.types.NodeTree, name: str) -> str:
    interface = group.interface
    if interface is None:
        raise RuntimeError(f"node group {group.name!r} has no interface")
    for item in interface.items_tree:
        if (
            isinstance(item, bpy.types.NodeTreeInterfaceSocket)
            and item.in_out == "INPUT"
            and item.name == name
        ):
            return item.identifier
    raise KeyError(name)


def modifier_input(modifier: bpy.types.NodesModifier, name: str) -> Any:
    """The value of the modifier's input ``name`` (a socket of its node group)."""
    group = modifier.node_group
    if group is None:
        raise KeyError(name)
    key = _input_id(group, name)
    holder = getattr(modifier, "properties", None)
    if holder is not None:  # 5.2+: modifier.properties.inputs.<identifier>.value
        return getattr(holder.inputs, key).value
    return modifier[key]  # 4.2-5.1: ID properties of the modifier


def set_modifier_input(modifier: bpy.types.NodesModifier, name: str, value: Any) -> None:
    """Set the modifier's input ``name`` (only when it changes, so nothing re-evaluates needlessly)."""
    group = modifier.node_group
    if group is None:
        raise KeyError(name)
    key = _input_id(group, name)
    holder = getattr(modifier, "properties", None)
    if holder is not None:
        item = getattr(holder.inputs, key)
        if item.value != value:
            item.value = value
    elif modifier.get(key) != value:
        modifier[key] = value


def ensure_liquid_surface(
    obj: bpy.types.Object,
    material: bpy.types.Material | None,
    surface: Surface = "MESH",
    resolution: float = DEFAULT_RESOLUTION,
    smoothing: int = DEFAULT_SMOOTHING,
    radius: float | None = None,
    centre_shift: float = 0.0,
) -> bpy.types.NodesModifier:
    """Add or update the ``Liquid Surface`` modifier of the point object ``obj``; return it.

    ``material`` is the fluid source's material (None: Blender's default). ``surface`` is "MESH"
    (a liquid surface) or "SPHERES" (one sphere per particle). ``resolution`` is voxels per particle
    diameter (1-16), ``smoothing`` the smoothing passes (0-50). ``radius`` is the particle radius in
    metres; None takes it from the mesh's ``radius`` point attribute, else the scene's Particle
    Radius. ``centre_shift``: particle radii the points were pulled into the liquid (0-2; Smooth
    Surface). The modifier stays last in the stack, so modifiers that animate the points (a Mesh
    Cache from a bake) run before it.
    """
    if surface not in ("MESH", "SPHERES"):
        raise ValueError(f"surface must be 'MESH' or 'SPHERES', not {surface!r}")
    if radius is None:
        radius = _radius_from_mesh(obj)
    if radius is None:
        radius = float(scene_settings(context_scene(bpy.context)).particle_radius)
    group = liquid_node_group()
    # Ours: the Geometry Nodes modifier playing the group (whatever the user renamed it to).
    found = next(
        (m for m in obj.modifiers if isinstance(m, bpy.types.NodesModifier) and m.node_group == group),
        None,
    )
    if found is None:
        found = as_type(obj.modifiers.new(MODIFIER_NAME, "NODES"), bpy.types.NodesModifier)
    nodes_modifier = found
    if nodes_modifier.node_group is not group:
        nodes_modifier.node_group = group
    values: dict[str, Any] = {
        "Material": material,
        "Spheres": surface == "SPHERES",
        "Particle Radius": float(radius),
        "Resolution": float(min(max(resolution, 1.0), 16.0)),
        "Smoothing": int(min(max(smoothing, 0), 50)),
        "Centre Shift": float(min(max(centre_shift, 0.0), 2.0)),
    }
    for name, value in values.items():
        set_modifier_input(nodes_modifier, name, value)
    mesh = mesh_of(obj)
    if material is not None and material.name not in mesh.materials:
        mesh.materials.append(material)  # listed on the object too (material slots, Eevee settings)
    # Keep the surface last: a bake's Mesh Cache (or anything moving the points) must run first.
    nodes_modifier.use_pin_to_last = True
    obj.update_tag()
    return nodes_modifier
