"""Air on cloth in Blender (issue 25, item 1): the cloth panel's Air Viscosity, Blender's own cloth for
comparison, and Convert mapping Blender's Air Viscosity."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np

from .helpers import run_op, select_only, small_scene, view3d_override, world_positions


def _sheet(bpy: ModuleType, x: float) -> tuple[Any, np.ndarray, np.ndarray]:
    """A 1 m square (20 x 20 quads) at height 2 m, its -X edge in the vertex group "Edge"."""
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=21, y_subdivisions=21, size=1.0, location=(x, 0, 2))
    sheet = bpy.context.active_object
    rest = world_positions(sheet)
    edge = np.flatnonzero(np.isclose(rest[:, 0], x - 0.5))
    free = np.flatnonzero(np.isclose(rest[:, 0], x + 0.5))
    sheet.vertex_groups.new(name="Edge").add([int(i) for i in edge], 1.0, "REPLACE")
    return sheet, edge, free


def test_a_sheet_pinned_along_one_edge_settles_in_air_as_blenders_cloth_does(bpy_clean: ModuleType) -> None:
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.025)
    ours, _, ours_free = _sheet(bpy, -1.0)
    assert run_op(bpy, "make_cloth", ours) == {"FINISHED"}
    ours.unified_particles.pin_group = "Edge"
    assert ours.unified_particles.air_viscosity == 1.0  # Blender's cloth default
    theirs, _, their_free = _sheet(bpy, 1.0)
    mod = theirs.modifiers.new("Cloth", "CLOTH")
    mod.settings.vertex_group_mass = "Edge"
    assert mod.settings.air_damping == 1.0
    drops: dict[str, list[float]] = {"ours": [], "theirs": []}
    for frame in range(2, 2 + 72):  # 3 s
        scene.frame_set(frame)
        depsgraph = bpy.context.evaluated_depsgraph_get()
        for name, obj, free in (("ours", ours, ours_free), ("theirs", theirs, their_free)):
            evaluated = obj.evaluated_get(depsgraph)
            m = np.array(evaluated.matrix_world)
            co = np.array([evaluated.data.vertices[int(i)].co for i in free])
            drops[name].append(2.0 - float((co @ m[:3, :3].T + m[:3, 3])[:, 2].mean()))
    assert scene.unified_particles.last_error == ""
    # The stretch solve's coarse correction follows the core's default (on; the Advanced panel's
    # Converged Cloth Stretch turns it off).
    assert scene.unified_particles.cloth_coarse_correction == 1
    ours_d, theirs_d = np.array(drops["ours"]), np.array(drops["theirs"])
    # Measured (Blender 5.0, every 1/4 s): ours (cotton-weight default, 0.15 kg/m^2) 0.27 0.58 0.85 0.89
    # 0.98 1.00 1.00 ...; Blender's (vertex mass 0.3 kg, Air Viscosity 1) 0.30 0.84 0.92 0.74 0.70 0.81
    # 0.99 0.94 0.87 0.91 0.98: both swing back less than 30% of the drop (in a vacuum ours swung back to
    # 77%); ours, light as real cloth in real air, has settled by 2 s, Blender's still swings 10 cm.
    assert ours_d[24:].min() > 0.7
    assert theirs_d[24:].min() > 0.6
    assert ours_d[-24:].min() > 0.95
    assert ours_d[-24:].max() < 1.05
    assert np.ptp(ours_d[-24:]) <= np.ptp(theirs_d[-24:])  # settled no later than Blender's


def test_convert_maps_blenders_air_viscosity(bpy_clean: ModuleType) -> None:
    bpy = bpy_clean
    small_scene(bpy)
    sheet, _, _ = _sheet(bpy, 0.0)
    mod = sheet.modifiers.new("Cloth", "CLOTH")
    mod.settings.air_damping = 2.5
    select_only(bpy, sheet)
    with bpy.context.temp_override(**view3d_override(bpy)):
        assert bpy.ops.unified_particles.convert_blender_physics(scope="SCENE") == {"FINISHED"}
    assert sheet.unified_particles.role == "CLOTH"
    assert sheet.unified_particles.air_viscosity == 2.5
