"""Tear Strain from the sidebar: a ball dropped on a pinned sheet tears it; the bake replays the torn, split
mesh without the add-on (core/tearing.py holds the physics)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from types import ModuleType

import numpy as np

from .conftest import REPLAY_HEAD, addon_module, run_blender_without_addon
from .helpers import add_plane, local_positions, run_op, small_scene

FRAMES = 10

REPLAY = REPLAY_HEAD + textwrap.dedent(
    """
    blend, name, frames = sys.argv[1], sys.argv[2], int(sys.argv[3])
    open_without_addon(blend)
    obj = bpy.data.objects[name]
    out = []
    for frame in (1, frames):
        bpy.context.scene.frame_set(frame)
        out.append(evaluated_vertices(obj)[0].tolist())
    print("RESULT " + json.dumps(out))
    """
)


def test_a_ball_tears_a_sheet_and_the_bake_replays_the_pieces(bpy_clean: ModuleType, tmp_path: Path) -> None:
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.03)
    scene.frame_end = FRAMES
    sheet = add_plane(bpy, size=1.0, location=(0.0, 0.0, 1.0))
    bpy.ops.object.mode_set(mode="EDIT")
    bpy.ops.mesh.subdivide(number_cuts=11)  # 13 x 13 vertices, 7.7 cm apart
    bpy.ops.object.mode_set(mode="OBJECT")
    rest = local_positions(sheet)
    edge = [int(i) for i in np.flatnonzero(np.abs(rest[:, :2]).max(axis=1) > 0.49)]
    sheet.vertex_groups.new(name="Frame").add(edge, 1.0, "REPLACE")
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.15, location=(0.0, 0.0, 1.5))
    ball = bpy.context.active_object
    assert run_op(bpy, "make_cloth", sheet) == {"FINISHED"}
    assert run_op(bpy, "make_rigid", ball) == {"FINISHED"}
    ball.unified_particles.density = 8000.0  # 113 kg of steel
    settings = sheet.unified_particles
    settings.pin_group = "Frame"
    settings.tear_strain = 0.02
    blend = tmp_path / "tear.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    assert run_op(bpy, "bake") == {"FINISHED"}
    faces = len(sheet.data.polygons)
    assert len(sheet.data.vertices) == 3 * faces  # unwelded: each triangle its own vertices
    scene.frame_set(FRAMES)
    ev = sheet.evaluated_get(bpy.context.evaluated_depsgraph_get())
    mesh = ev.to_mesh()
    shown = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", shown)
    ev.to_mesh_clear()
    bpy.ops.wm.save_mainfile()
    proc = run_blender_without_addon(REPLAY, str(blend), sheet.name, str(FRAMES))
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    start, replayed = np.array(json.loads(lines[-1][7:]), dtype=np.float32)
    np.testing.assert_array_equal(replayed, shown)
    # The pieces separate: split copies of one rest vertex lie apart (beyond a vertex spacing) in the
    # replayed mesh, which no stretch of a whole sheet could do (its copies stay together).
    gap = _largest_gap_between_copies(start.reshape(-1, 3), replayed.reshape(-1, 3))
    assert gap > 0.077, f"the sheet should have torn open: split copies at most {gap:.4f} m apart"


def _largest_gap_between_copies(rest: np.ndarray, moved: np.ndarray) -> float:
    """The largest distance between two mesh vertices that were one vertex at rest (at the start frame)."""
    _, inverse = np.unique(rest, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    order = np.argsort(inverse, kind="stable")
    groups = np.split(order, np.flatnonzero(np.diff(inverse[order])) + 1)
    return max(float(np.ptp(moved[g], axis=0).max()) for g in groups)


def test_a_deformed_cloth_with_tear_strain_is_warned_that_it_cannot_tear(bpy_clean: ModuleType) -> None:
    # Tearing splits the mesh's own vertices (blender/tear_mesh.py); a mesh moved by shape keys or deforming
    # modifiers is simulated through the cloth result instead and never tears: say so, never silently.
    bpy = bpy_clean
    small_scene(bpy, radius=0.05)
    sheet = add_plane(bpy, size=1.0, location=(0.0, 0.0, 1.0))
    assert run_op(bpy, "make_cloth", sheet) == {"FINISHED"}
    sheet.unified_particles.tear_strain = 0.05
    simulation = addon_module("blender.simulation")
    assert not any("cannot tear" in line for line in simulation.blender_physics_warnings(bpy.context.scene))
    sheet.shape_key_add(name="Basis")
    warnings = simulation.blender_physics_warnings(bpy.context.scene)
    assert any(sheet.name in line and "cannot tear" in line for line in warnings), warnings
