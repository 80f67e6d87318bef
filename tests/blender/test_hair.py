"""The Hair role from the sidebar: a Curves object on a turning head (a keyframed UV sphere) becomes hair
whose roots follow the surface, bakes, and replays without the add-on (Curves API and Geometry Nodes differ by
version: this module runs on the LTS versions too)."""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from .conftest import REPLAY_HEAD, run_blender_without_addon
from .helpers import matrix, run_op, small_scene

FRAMES = 6
STRANDS, POINTS, SPACING = 8, 6, 0.04


def _curve_points(obj: Any, depsgraph: Any) -> np.ndarray:
    """The evaluated Curves object's points in world space (N, 3)."""
    ev = obj.evaluated_get(depsgraph)
    data = ev.data
    flat = np.empty(len(data.points) * 3, dtype=np.float32)
    data.attributes["position"].data.foreach_get("vector", flat)
    m = matrix(ev)
    out: np.ndarray = flat.reshape(-1, 3).astype(np.float64) @ m[:3, :3].T + m[:3, 3]
    return out


def _hair_on_turning_head(bpy: ModuleType) -> tuple[Any, Any, np.ndarray]:
    """A 0.5 m UV sphere turning 60 degrees about Z and tilting 20 about X over the frames, with 8 strands
    of 6 points grown along its normals from triangle centroids (surface_uv_coordinate: the centroids' UVs).
    Returns the head, the Curves object and the roots (S, 3) at frame 1."""
    scene = small_scene(bpy, radius=0.02, substeps=2, iterations=2)
    scene.frame_end = FRAMES
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.5, location=(0.0, 0.0, 1.0), segments=16, ring_count=8)
    head = bpy.context.active_object
    head.name = "Head"
    head.rotation_euler = (0.0, 0.0, 0.0)
    head.keyframe_insert("rotation_euler", frame=1)
    head.rotation_euler = (math.radians(20.0), 0.0, math.radians(60.0))
    head.keyframe_insert("rotation_euler", frame=FRAMES)
    scene.frame_set(1)
    mesh = head.data
    mesh.calc_loop_triangles()
    tris = mesh.loop_triangles
    picks = np.linspace(10, len(tris) - 10, STRANDS).astype(int)  # away from the poles
    co = np.array([v.co[:] for v in mesh.vertices])
    uv = np.array([d.uv[:] for d in mesh.uv_layers["UVMap"].data])
    m = matrix(head)
    roots, normals, uvs = [], [], []
    for k in picks:
        t = tris[int(k)]
        roots.append(co[list(t.vertices)].mean(axis=0) @ m[:3, :3].T + m[:3, 3])
        normals.append(np.array(t.normal[:]) @ m[:3, :3].T)
        uvs.append(uv[list(t.loops)].mean(axis=0))
    root = np.array(roots)
    pts = root[:, None] + SPACING * np.arange(POINTS)[None, :, None] * np.array(normals)[:, None]
    curves = bpy.data.hair_curves.new("Hair")
    curves.add_curves([POINTS] * STRANDS)
    curves.attributes["position"].data.foreach_set("vector", pts.astype(np.float32).ravel())
    curves.surface = head
    curves.surface_uv_map = "UVMap"
    attr = curves.attributes.new("surface_uv_coordinate", "FLOAT2", "CURVE")
    attr.data.foreach_set("vector", np.array(uvs, dtype=np.float32).ravel())
    obj = bpy.data.objects.new("Hair", curves)
    scene.collection.objects.link(obj)
    assert run_op(bpy, "make_hair", obj) == {"FINISHED"}
    return head, obj, root


REPLAY = REPLAY_HEAD + textwrap.dedent(
    """
    blend, name, frames = sys.argv[1], sys.argv[2], int(sys.argv[3])
    open_without_addon(blend)
    obj = bpy.data.objects[name]
    out = []
    for frame in range(1, frames + 1):
        bpy.context.scene.frame_set(frame)
        ev = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
        flat = np.empty(len(ev.data.points) * 3, dtype=np.float32)
        ev.data.attributes["position"].data.foreach_get("vector", flat)
        m = np.array([list(r) for r in ev.matrix_world])
        out.append((flat.reshape(-1, 3) @ m[:3, :3].T + m[:3, 3]).tolist())
    print("RESULT " + json.dumps(out))
    """
)


def test_make_hair_roots_follow_a_turning_head_bake_and_replay(bpy_clean: ModuleType, tmp_path: Path) -> None:
    bpy = bpy_clean
    head, obj, root = _hair_on_turning_head(bpy)
    assert obj.unified_particles.role == "HAIR"
    assert head.unified_particles.role == "COLLIDER"  # the surface was made a collider
    points = obj.unified_particles.particle_object
    assert points is not None
    assert points.name == "Hair Hair Points"
    scene = bpy.context.scene
    first = np.arange(STRANDS) * POINTS
    m1 = matrix(head)

    def roots_expected() -> np.ndarray:  # the frame-1 roots carried by the head's motion since frame 1
        motion = matrix(head) @ np.linalg.inv(m1)
        out: np.ndarray = root @ motion[:3, :3].T + motion[:3, 3]
        return out

    shown = [_curve_points(obj, bpy.context.evaluated_depsgraph_get())]
    np.testing.assert_allclose(shown[0][first], root, atol=1e-5)  # on the surface at the UV points
    for frame in range(2, FRAMES + 1):
        scene.frame_set(frame)
        shown.append(_curve_points(obj, bpy.context.evaluated_depsgraph_get()))
        np.testing.assert_allclose(shown[-1][first], roots_expected(), atol=1e-5)
    tips = shown[-1][first + POINTS - 1]
    assert np.isfinite(shown[-1]).all()
    assert np.linalg.norm(tips - shown[-1][first], axis=1).max() < SPACING * (POINTS - 1) * 1.02 + 1e-4
    # Bake, then a Blender without the add-on replays what was shown live.
    blend = tmp_path / "hair.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    assert run_op(bpy, "bake") == {"FINISHED"}
    assert "MESH_CACHE" in [m.type for m in points.modifiers]
    baked = []
    for frame in range(1, FRAMES + 1):
        scene.frame_set(frame)
        baked.append(_curve_points(obj, bpy.context.evaluated_depsgraph_get()))
    np.testing.assert_allclose(np.array(baked), np.array(shown), atol=1e-5)
    bpy.ops.wm.save_mainfile()
    proc = run_blender_without_addon(REPLAY, str(blend), obj.name, str(FRAMES))
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    replayed = np.array(json.loads(lines[-1][7:]))
    np.testing.assert_allclose(replayed, np.array(baked), atol=1e-5)
    np.testing.assert_allclose(replayed[-1][first], roots_expected(), atol=1e-5)


def test_make_hair_refuses_a_mesh(bpy_clean: ModuleType) -> None:
    bpy = bpy_clean
    small_scene(bpy)
    bpy.ops.mesh.primitive_cube_add()
    cube = bpy.context.active_object
    with pytest.raises(RuntimeError, match="cannot be hair"):  # the {'ERROR'} report, raised by bpy.ops
        run_op(bpy, "make_hair", cube)
    assert cube.unified_particles.role == "NONE"
