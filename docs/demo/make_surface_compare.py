"""The liquid surface before and after anisotropic kernels (issue 25 item 5): one simulation, two renders.

A block of water (r = 2.5 cm) dropped into a pool in a 0.8 m tank is simulated with the core (plane
colliders), with the spray, foam and bubbles of ``core.whitewater`` stepped alongside. One frame is
rendered twice with Cycles:

- ``docs/images/surface_before.jpg``: the add-on's *Liquid Surface* group on the particles (balls of
  2 r, Points to Volume, Volume to Mesh, smoothed, shrunk; imported from this checkout);
- ``docs/images/surface_after.jpg``: ``core.surface_kernels.anisotropic_kernels`` (Yu and Turk 2013):
  smoothed centres and one ellipsoid per particle (an icosphere stretched by its axes), meshed by Mesh to
  Volume and Volume to Mesh at the same voxel size, with the whitewater as small white spheres.

It prints the flatness of the pool far from the splash (standard deviation of the surface vertices'
heights there) for both.

    .venv/bin/python docs/demo/make_surface_compare.py [--frame 14] [--samples 16]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

_USER_DIR = tempfile.mkdtemp(prefix="up-surface-user-")
os.environ.setdefault("BLENDER_USER_RESOURCES", _USER_DIR)
os.environ.setdefault("XDG_CACHE_HOME", os.path.join(_USER_DIR, "cache"))
REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

import bpy  # noqa: E402
import numpy as np  # noqa: E402

import unified_particles  # noqa: E402
from unified_particles.core import World, fill_mesh_with_fluid  # noqa: E402
from unified_particles.core.primitives import box_mesh  # noqa: E402
from unified_particles.core.surface_kernels import anisotropic_kernels  # noqa: E402
from unified_particles.core.whitewater import Whitewater  # noqa: E402

R = 0.025
HALF = 0.4  # tank half-width, m
FPS = 24
#: The ellipsoids' ball radius, in r: the smoothed centres of a flat pool's top layer sit 0.73 r below its
#: particles and its kernels reach 0.41 of the ball upwards, so 4.2 r puts the surface one radius above
#: the top particles, where the liquid's volume ends (as the add-on's surface).
BALL_RADII = 4.2


def simulate(frames: int) -> tuple[np.ndarray, Whitewater]:
    """Liquid positions at the last of ``frames`` frames, and the whitewater stepped with them."""
    world = World(R, substeps=4, iterations=4)
    world.add_collider_plane((0, 0, 0), (0, 0, 1), friction=0.5)
    for point, normal in (
        ((-HALF, 0, 0), (1, 0, 0)),
        ((HALF, 0, 0), (-1, 0, 0)),
        ((0, -HALF, 0), (0, 1, 0)),
        ((0, HALF, 0), (0, -1, 0)),
    ):
        world.add_collider_plane(point, normal, friction=0.5)
    pool_v, pool_f = box_mesh((2 * HALF, 2 * HALF, 0.15), (0, 0, 0.075))
    drop_v, drop_f = box_mesh((0.2, 0.2, 0.2), (0.15, 0.05, 0.45))
    pool, drop = fill_mesh_with_fluid(pool_v, pool_f, R), fill_mesh_with_fluid(drop_v, drop_f, R)
    points = np.concatenate([pool, drop])
    fluid = world.add_fluid(points)
    whitewater = Whitewater(R, capacity=20_000, seed=1, floor_z=-0.05)
    t0 = time.perf_counter()
    for _ in range(frames):
        world.step(1.0 / FPS)
        whitewater.step(fluid.positions, fluid.velocities, 1.0 / FPS)
    seconds = time.perf_counter() - t0
    print(f"{fluid.count} particles, {frames} frames in {seconds:.1f} s; {whitewater.counts()}")
    return fluid.positions, whitewater


def point_object(name: str, points: np.ndarray) -> Any:
    mesh = bpy.data.meshes.new(name)
    mesh.vertices.add(len(points))
    mesh.vertices.foreach_set("co", points.astype(np.float32).ravel())
    mesh.update()
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def icosphere() -> tuple[np.ndarray, np.ndarray]:
    """A unit icosphere (two subdivisions: 162 vertices, 320 triangles; one leaves flat facets that
    crease the union of large ellipsoids)."""
    import bmesh

    bm = bmesh.new()
    bmesh.ops.create_icosphere(bm, subdivisions=2, radius=1.0)
    v = np.array([vert.co[:] for vert in bm.verts])
    f = np.array([[vert.index for vert in face.verts] for face in bm.faces])
    bm.free()
    return v, f


def ellipsoids(name: str, centres: np.ndarray, axes: np.ndarray) -> Any:
    """One mesh of all ellipsoids: centre + axes @ u over a unit icosphere's vertices u."""
    v, f = icosphere()
    co = centres[:, None, :] + np.einsum("nij,vj->nvi", axes, v)
    faces = (f[None, :, :] + len(v) * np.arange(len(centres))[:, None, None]).reshape(-1, 3)
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata(co.reshape(-1, 3).tolist(), [], faces.tolist())
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    return obj


def mesh_to_surface(obj: Any, voxel: float, material: Any) -> None:
    """Geometry Nodes: Mesh to Volume (interior) -> Volume to Mesh -> 3 smoothing passes -> material."""
    group = bpy.data.node_groups.new("Ellipsoid Surface", "GeometryNodeTree")
    group.interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
    group.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    nodes, links = group.nodes, group.links
    gin, gout = nodes.new("NodeGroupInput"), nodes.new("NodeGroupOutput")
    to_volume = nodes.new("GeometryNodeMeshToVolume")
    if "Resolution Mode" in to_volume.inputs:
        to_volume.inputs["Resolution Mode"].default_value = "Size"
    else:
        to_volume.resolution_mode = "VOXEL_SIZE"
    to_volume.inputs["Voxel Size"].default_value = voxel
    to_mesh = nodes.new("GeometryNodeVolumeToMesh")
    blur = nodes.new("GeometryNodeBlurAttribute")
    blur.data_type = "FLOAT_VECTOR"
    blur.inputs["Iterations"].default_value = 3
    smooth = nodes.new("GeometryNodeSetPosition")
    shade = nodes.new("GeometryNodeSetShadeSmooth")
    set_material = nodes.new("GeometryNodeSetMaterial")
    set_material.inputs["Material"].default_value = material
    links.new(gin.outputs[0], to_volume.inputs[0])
    links.new(to_volume.outputs[0], to_mesh.inputs[0])
    links.new(nodes.new("GeometryNodeInputPosition").outputs[0], blur.inputs["Value"])
    links.new(to_mesh.outputs[0], smooth.inputs["Geometry"])
    links.new(blur.outputs[0], smooth.inputs["Position"])
    links.new(smooth.outputs[0], shade.inputs[0])
    links.new(shade.outputs[0], set_material.inputs[0])
    links.new(set_material.outputs[0], gout.inputs[0])
    modifier = obj.modifiers.new("Surface", "NODES")
    modifier.node_group = group


def water_material() -> Any:
    mat = bpy.data.materials.new("Water")
    if not mat.use_nodes:  # 5.0+: materials always use nodes
        mat.use_nodes = True
    bsdf = mat.node_tree.nodes["Principled BSDF"]
    bsdf.inputs["Base Color"].default_value = (0.75, 0.9, 0.97, 1.0)
    bsdf.inputs["Roughness"].default_value = 0.03
    transmission = "Transmission Weight" if "Transmission Weight" in bsdf.inputs else "Transmission"
    bsdf.inputs[transmission].default_value = 1.0
    bsdf.inputs["IOR"].default_value = 1.33
    return mat


def stage(samples: int) -> None:
    scene = bpy.context.scene
    scene.render.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = samples
    scene.cycles.use_denoising = True
    scene.cycles.denoiser = "OPENIMAGEDENOISE"
    scene.render.resolution_x, scene.render.resolution_y = 640, 360
    settings = scene.render.image_settings
    if hasattr(settings, "media_type"):
        settings.media_type = "IMAGE"
    settings.file_format = "JPEG"
    settings.quality = 90
    floor_mat = bpy.data.materials.new("Tiles")
    floor_mat.diffuse_color = (0.08, 0.16, 0.2, 1.0)
    if not floor_mat.use_nodes:
        floor_mat.use_nodes = True
    floor_mat.node_tree.nodes["Principled BSDF"].inputs["Base Color"].default_value = (0.08, 0.16, 0.2, 1.0)
    bpy.ops.mesh.primitive_plane_add(size=2 * HALF, location=(0, 0, 0))
    bpy.context.active_object.data.materials.append(floor_mat)
    for x, y, sx, sy in ((0, HALF + 0.02, 2 * HALF + 0.08, 0.04), (-HALF - 0.02, 0, 0.04, 2 * HALF)):
        bpy.ops.mesh.primitive_cube_add(size=1.0, location=(x, y, 0.15))
        bpy.context.active_object.scale = (sx, sy, 0.3)
    bpy.ops.object.camera_add(location=(1.05, -1.05, 0.75))
    camera = bpy.context.active_object
    direction = np.array([0.0, 0.0, 0.08]) - np.array(camera.location)
    from mathutils import Vector

    camera.rotation_euler = Vector(direction.tolist()).to_track_quat("-Z", "Y").to_euler()
    camera.data.lens = 30.0
    scene.camera = camera
    bpy.ops.object.light_add(type="SUN", rotation=(math.radians(40), math.radians(10), math.radians(30)))
    bpy.context.active_object.data.energy = 3.0
    world = bpy.data.worlds.new("Sky")
    if not world.use_nodes:
        world.use_nodes = True
    world.node_tree.nodes["Background"].inputs["Color"].default_value = (0.6, 0.7, 0.8, 1.0)
    scene.world = world


def flatness(obj: Any) -> float:
    """Std of the surface's upward-facing vertices' heights over the pool's far corner (x, y < -0.1 m)."""
    ev = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    mesh = ev.to_mesh()
    co = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", co)
    normals = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.vertices.foreach_get("normal", normals)
    ev.to_mesh_clear()
    co, normals = co.reshape(-1, 3), normals.reshape(-1, 3)
    far = (co[:, 0] < -0.1) & (co[:, 1] < -0.1) & (co[:, 0] > -HALF + 3 * R) & (co[:, 1] > -HALF + 3 * R)
    top = far & (normals[:, 2] > 0.5) & (co[:, 2] > 0.05)
    return float(co[top, 2].std())


def render(path: Path) -> None:
    t0 = time.perf_counter()
    bpy.context.scene.render.filepath = str(path)
    bpy.ops.render.render(write_still=True)
    print(f"{path.name}: {time.perf_counter() - t0:.0f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frame", type=int, default=14, help="frame rendered (the drop lands at about 6)")
    parser.add_argument("--samples", type=int, default=16)
    args = parser.parse_args([a for a in sys.argv[1:] if a != "--"])
    x, whitewater = simulate(args.frame)
    bpy.ops.wm.read_homefile(use_factory_startup=True, use_empty=True)
    unified_particles.register()
    from unified_particles.blender import liquid_surface

    stage(args.samples)
    water = water_material()
    before = point_object("Fluid Particles", x)
    liquid_surface.ensure_liquid_surface(before, water, radius=R)
    t0 = time.process_time()
    print(f"before: pool-top height std {flatness(before) / R:.3f} r")
    print(f"CPU: surface {1e3 * (time.process_time() - t0):.0f} ms")
    render(REPO / "docs" / "images" / "surface_before.jpg")
    before.hide_render = True
    before.hide_set(True)
    t0 = time.process_time()
    centres, axes = anisotropic_kernels(x, 4.0 * R, BALL_RADII * R)
    kernels_ms = 1e3 * (time.process_time() - t0)
    after = ellipsoids("Anisotropic Surface", centres, axes)
    mesh_to_surface(after, 2.0 * R / liquid_surface.DEFAULT_RESOLUTION, water)
    t0 = time.process_time()
    print(f"after: pool-top height std {flatness(after) / R:.3f} r")
    mesh_ms = 1e3 * (time.process_time() - t0)
    print(f"CPU: kernels {kernels_ms:.0f} ms, ellipsoids meshed {mesh_ms:.0f} ms")
    foam = point_object("Whitewater", whitewater.positions[whitewater.alive])
    foam_mat = bpy.data.materials.new("Foam")
    foam_mat.diffuse_color = (1.0, 1.0, 1.0, 1.0)
    if not foam_mat.use_nodes:
        foam_mat.use_nodes = True
    foam_mat.node_tree.nodes["Principled BSDF"].inputs["Roughness"].default_value = 0.8
    liquid_surface.ensure_liquid_surface(foam, foam_mat, surface="SPHERES", radius=0.25 * R)
    render(REPO / "docs" / "images" / "surface_after.jpg")


if __name__ == "__main__":
    main()
