"""Cloth bending in Blender: presets set a physical bending rigidity (issue 24, item 2), old files keep.

Reference: the Cusick drape test (BS 5058 / ISO 9073-9): fabric clamped on an 18 cm disc drapes by its
bending length (B / (m g))^(1/3) against its overhang; silk (B = 3 uN m, 0.06 kg/m^2: 1.7 cm) hangs
nearly straight, denim (100 uN m, 0.4 kg/m^2: 2.9 cm) stands out (docs/physics.md, Cloth).
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from .conftest import addon_module
from .helpers import local_positions, run_op, small_scene


def _clamped_square(bpy: ModuleType, x: float, preset: str) -> tuple[Any, np.ndarray]:
    """A 30 cm square of cloth (1.5 cm cells) at height 1 m, pinned inside r = 9 cm (the clamp)."""
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=21, y_subdivisions=21, size=0.3, location=(x, 0, 1))
    cloth = bpy.context.active_object
    rest = local_positions(cloth)
    clamp = np.flatnonzero(np.hypot(rest[:, 0], rest[:, 1]) <= 0.09)
    cloth.vertex_groups.new(name="Clamp").add([int(i) for i in clamp], 1.0, "REPLACE")
    assert run_op(bpy, "make_cloth", cloth) == {"FINISHED"}
    assert run_op(bpy, "apply_preset", cloth, preset=preset) == {"FINISHED"}
    cloth.unified_particles.pin_group = "Clamp"
    return cloth, rest


def test_silk_drapes_and_denim_stands_out(bpy_clean: ModuleType) -> None:
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.0075)  # the default budget, 4 x 4
    silk, rest = _clamped_square(bpy, -0.5, "SILK")
    denim, _ = _clamped_square(bpy, 0.5, "DENIM")
    assert silk.unified_particles.bending_model == "RIGIDITY"
    assert silk.unified_particles.bending_rigidity == pytest.approx(3.0)
    assert denim.unified_particles.bending_rigidity == pytest.approx(120.0)
    for frame in range(1, 25):  # 1 s
        scene.frame_set(frame)
    assert scene.unified_particles.last_error == ""
    free = np.hypot(rest[:, 0], rest[:, 1]) > 0.09
    reach = {}
    for cloth in (silk, denim):
        x = local_positions(cloth)
        # How far the overhang still reaches out, over how far it reached flat (1: a board, ~0.6: hanging
        # straight down from the clamp's edge).
        flat = np.hypot(rest[free, 0], rest[free, 1]).mean()
        reach[cloth.name] = np.hypot(x[free, 0], x[free, 1]).mean() / flat
    # Measured (default budget, this mesh): silk 0.65, denim 0.79; the legacy Bend Stiffness of the same
    # presets gave silk 0.85, denim 0.82 (the same scene in the core): the lighter silk stood out more.
    assert reach[denim.name] > reach[silk.name] + 0.08, reach
    assert reach[denim.name] > 0.72, reach


def test_old_cloth_keeps_its_bend_stiffness_and_new_cloth_its_rigidity(
    bpy_clean: ModuleType, tmp_path: Path
) -> None:
    """A file saved before ``bending_model`` existed reopens with the legacy bending (its Bend Stiffness);
    one saved now reopens with what it had, even where the default was never touched."""
    bpy = bpy_clean
    small_scene(bpy, radius=0.05)
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=4, y_subdivisions=4, size=1.0, location=(0, 0, 1))
    cloth = bpy.context.active_object
    run_op(bpy, "make_cloth", cloth)
    assert cloth.unified_particles.get("bending_model") is None  # a default: not stored yet
    handlers = addon_module("blender.handlers")
    old, new = tmp_path / "old.blend", tmp_path / "new.blend"
    bpy.app.handlers.save_pre.remove(handlers.on_save_pre)  # as a version without the setting saved it
    try:
        bpy.ops.wm.save_as_mainfile(filepath=str(old), copy=True)
    finally:
        bpy.app.handlers.save_pre.append(handlers.on_save_pre)
    bpy.ops.wm.save_as_mainfile(filepath=str(new), copy=True)
    bpy.ops.wm.open_mainfile(filepath=str(old))
    assert bpy.data.objects["Grid"].unified_particles.bending_model == "STIFFNESS"
    bpy.ops.wm.open_mainfile(filepath=str(new))
    assert bpy.data.objects["Grid"].unified_particles.bending_model == "RIGIDITY"
