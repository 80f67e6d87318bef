"""Blender's own solvers on the standard scenes, driven through bpy (one scene per process).

    python -m benchmarks.peers_blender S1|S2|S3 [--frames N]

S1: the Cloth modifier (default settings: quality 5, memory cache) on a 65x65 grid made by
``primitive_grid_add``, a UV sphere with a Collision modifier. S2: Bullet rigid bodies (box shape) on 125
cubes onto a passive ground box. S3: Bullet rigid bodies (sphere shape) on 1000 spheres. Each frame is one
``scene.frame_set(f)`` (what a user's playback or bake does); frame 1 is the rest state, frames 2..N+1 are
the N timed frames. Prints one JSON result line (see common.py).
"""

from __future__ import annotations

import argparse
import atexit
import os
import shutil
import sys
import tempfile
import time

import numpy as np

from benchmarks import scenes
from benchmarks.common import emit, peak_rss_mb, result, time_frames


def _import_bpy():
    tmp = tempfile.mkdtemp(prefix="up_bench_bpy_")
    atexit.register(shutil.rmtree, tmp, True)
    os.environ["BLENDER_USER_RESOURCES"] = tmp
    os.environ["XDG_CACHE_HOME"] = tmp
    import bpy

    bpy.ops.wm.read_homefile(use_factory_startup=True, use_empty=True)
    return bpy


def _mesh_object(bpy, name, verts, faces, location=(0.0, 0.0, 0.0)):
    me = bpy.data.meshes.new(name)
    me.from_pydata([tuple(v) for v in verts], [], [tuple(int(i) for i in f) for f in faces])
    me.update()
    ob = bpy.data.objects.new(name, me)
    ob.location = location
    bpy.context.scene.collection.objects.link(ob)
    return ob


def _world_coords(bpy, ob) -> np.ndarray:
    dg = bpy.context.evaluated_depsgraph_get()
    ev = ob.evaluated_get(dg)
    me = ev.data
    co = np.empty(len(me.vertices) * 3, dtype=np.float32)
    me.vertices.foreach_get("co", co)
    m = np.array(ev.matrix_world)
    co = co.reshape(-1, 3).astype(np.float64)
    return co @ m[:3, :3].T + m[:3, 3]


def _frame_range(scene, frames):
    scene.frame_start = 1
    scene.frame_end = frames + 1
    scene.render.fps = scenes.FPS
    scene.frame_set(1)


def run_s1(bpy, frames: int) -> dict:
    t0 = time.perf_counter()
    scene = bpy.context.scene
    sv, sf = scenes.s1_sphere()
    sphere = _mesh_object(bpy, "Sphere", sv, sf)
    sphere.modifiers.new("Collision", "COLLISION")
    bpy.ops.mesh.primitive_grid_add(
        x_subdivisions=scenes.S1_N - 1,
        y_subdivisions=scenes.S1_N - 1,
        size=scenes.S1_SIZE,
        location=(0.0, 0.0, scenes.S1_HEIGHT),
    )
    cloth = bpy.context.active_object
    mod = cloth.modifiers.new("Cloth", "CLOTH")
    mod.point_cache.frame_start = 1
    mod.point_cache.frame_end = frames + 1
    quality = mod.settings.quality
    edges = np.empty(len(cloth.data.edges) * 2, dtype=np.int64)
    cloth.data.edges.foreach_get("vertices", edges)
    edges = edges.reshape(-1, 2)
    _frame_range(scene, frames)
    p0 = _world_coords(bpy, cloth)
    rest = np.linalg.norm(p0[edges[:, 0]] - p0[edges[:, 1]], axis=1)
    build_s = time.perf_counter() - t0
    tr = scenes.Tracker()

    def measure(_f):
        p = _world_coords(bpy, cloth)
        tr.stretch(scenes.edge_stretch(p, edges, rest))
        tr.penetration(scenes.convex_penetration(p, sv, sf))
        tr.lowest(p[:, 2].min())

    times = time_frames(lambda f: scene.frame_set(f + 1), measure, frames)
    return result(
        "S1",
        "Blender cloth",
        times,
        particles=len(p0),
        constraints=len(edges),
        quality=tr.as_dict(),
        base_rss_mb=_BASE_RSS,
        build_s=build_s,
        notes=f"Cloth modifier defaults (quality {quality}), memory cache; constraints = mesh edges "
        "(Blender adds shear/bending springs internally)",
        blender=bpy.app.version_string,
    )


def _ground(bpy):
    gv, gf = scenes.cube(1.0)
    ground = _mesh_object(bpy, "Ground", gv, gf, location=(0.0, 0.0, -0.5))
    ground.scale = (40.0, 40.0, 1.0)
    return ground


def _rigid_setup(bpy, active, ground, shape, frames):
    scene = bpy.context.scene
    bpy.ops.rigidbody.world_add()
    rbw = scene.rigidbody_world
    rbw.point_cache.frame_start = 1
    rbw.point_cache.frame_end = frames + 1
    for ob in bpy.context.view_layer.objects:
        ob.select_set(False)
    for ob in active:
        ob.select_set(True)
    bpy.context.view_layer.objects.active = active[0]
    bpy.ops.rigidbody.objects_add(type="ACTIVE")
    for ob in active:
        ob.rigid_body.collision_shape = shape
    for ob in active:
        ob.select_set(False)
    ground.select_set(True)
    bpy.context.view_layer.objects.active = ground
    bpy.ops.rigidbody.objects_add(type="PASSIVE")
    ground.rigid_body.collision_shape = "BOX"
    return rbw


def run_s2(bpy, frames: int) -> dict:
    t0 = time.perf_counter()
    scene = bpy.context.scene
    cv, cf = scenes.cube(scenes.S2_SIDE)
    me = bpy.data.meshes.new("Cube")
    me.from_pydata([tuple(v) for v in cv], [], [tuple(int(i) for i in f) for f in cf])
    cubes = []
    for k, c in enumerate(scenes.s2_cube_centers()):
        ob = bpy.data.objects.new(f"Cube{k:03d}", me)
        ob.location = tuple(c)
        scene.collection.objects.link(ob)
        cubes.append(ob)
    ground = _ground(bpy)
    rbw = _rigid_setup(bpy, cubes, ground, "BOX", frames)
    _frame_range(scene, frames)
    build_s = time.perf_counter() - t0
    tr = scenes.Tracker()
    cvh = np.c_[cv, np.ones(len(cv))]

    def measure(_f):
        lows = [float((np.array(ob.matrix_world) @ cvh.T)[2].min()) for ob in cubes]
        low = min(lows)
        tr.lowest(low)
        tr.penetration(max(0.0, -low))

    times = time_frames(lambda f: scene.frame_set(f + 1), measure, frames)
    return result(
        "S2",
        "Bullet rigid",
        times,
        particles=len(cubes),
        constraints=None,
        quality=tr.as_dict(),
        base_rss_mb=_BASE_RSS,
        build_s=build_s,
        notes=f"125 box-shaped bodies (counted as bodies, not particles); Bullet defaults: "
        f"{rbw.substeps_per_frame} substeps/frame, {rbw.solver_iterations} iterations",
        blender=bpy.app.version_string,
    )


def run_s3(bpy, frames: int) -> dict:
    t0 = time.perf_counter()
    scene = bpy.context.scene
    r = scenes.S3_RADIUS
    sv, sf = scenes.uv_sphere(r, 8, 4)
    me = bpy.data.meshes.new("Grain")
    me.from_pydata([tuple(v) for v in sv], [], [tuple(int(i) for i in f) for f in sf])
    grains = []
    for k, c in enumerate(scenes.s3_points()):
        ob = bpy.data.objects.new(f"Grain{k:04d}", me)
        ob.location = tuple(c)
        scene.collection.objects.link(ob)
        grains.append(ob)
    ground = _ground(bpy)
    rbw = _rigid_setup(bpy, grains, ground, "SPHERE", frames)
    _frame_range(scene, frames)
    build_s = time.perf_counter() - t0
    tr = scenes.Tracker()

    def measure(_f):
        z = np.array([ob.matrix_world[2][3] for ob in grains])
        low = float(z.min()) - r
        tr.lowest(low)
        tr.penetration(max(0.0, -low))

    times = time_frames(lambda f: scene.frame_set(f + 1), measure, frames)
    return result(
        "S3",
        "Bullet spheres",
        times,
        particles=len(grains),
        constraints=None,
        quality=tr.as_dict(),
        base_rss_mb=_BASE_RSS,
        build_s=build_s,
        notes=f"sphere-shaped bodies; Bullet defaults: {rbw.substeps_per_frame} substeps/frame, "
        f"{rbw.solver_iterations} iterations; lowest z = lowest sphere bottom",
        blender=bpy.app.version_string,
    )


_BASE_RSS = 0.0
RUNNERS = {"S1": run_s1, "S2": run_s2, "S3": run_s3}


def main(argv=None) -> int:
    global _BASE_RSS
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("scene", choices=sorted(RUNNERS))
    ap.add_argument("--frames", type=int, default=scenes.FRAMES)
    args = ap.parse_args(argv)
    bpy = _import_bpy()
    _BASE_RSS = peak_rss_mb()
    emit(RUNNERS[args.scene](bpy, args.frames))
    return 0


if __name__ == "__main__":
    sys.exit(main())
