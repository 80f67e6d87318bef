"""Granular objects' Sliding Friction and Rolling Resistance reach the core (issue 24, item 9)."""

from __future__ import annotations

from types import ModuleType

import numpy as np

from .conftest import addon_module as module
from .helpers import add_cube, add_plane, run_op, small_scene


def test_dry_sand_preset_slides_and_rolls_as_calibrated(bpy_clean: ModuleType) -> None:
    bpy = bpy_clean
    scene = small_scene(bpy, radius=0.05)
    run_op(bpy, "make_collider", add_plane(bpy))
    box = add_cube(bpy, size=0.4, location=(0, 0, 0.5))
    assert run_op(bpy, "make_granular", box) == {"FINISHED"}
    s = box.unified_particles
    assert (s.kinetic_friction, s.rolling_friction) == (0.5, 0.0)  # as before: slides with its friction
    reader = module("blender.scene_reader")
    for name in ("kinetic_friction", "rolling_friction"):  # a change re-simulates
        before = reader.settings_signature(scene)
        setattr(s, name, 0.3)
        assert reader.settings_signature(scene) != before, name
    assert run_op(bpy, "apply_preset", box, preset="DRY_SAND") == {"FINISHED"}
    assert np.isclose(s.friction, 0.7)
    assert np.isclose(s.kinetic_friction, 0.21)
    assert np.isclose(s.rolling_friction, 1.15)

    scene.frame_set(2)
    assert scene.unified_particles.last_error == ""
    model = module("blender.simulation").get_simulation(scene).world.model
    grains = model.particle_is_grain
    assert grains.any()
    np.testing.assert_allclose(model.particle_kinetic_friction[grains], 0.21)
    np.testing.assert_allclose(model.particle_rolling_friction[grains], 1.15)

    # Above Friction, Sliding Friction acts as Friction (sliding never holds harder than sticking).
    s.kinetic_friction = 0.9
    scene.frame_set(1)
    scene.frame_set(2)
    assert scene.unified_particles.last_error == ""
    model = module("blender.simulation").get_simulation(scene).world.model
    np.testing.assert_allclose(model.particle_kinetic_friction[model.particle_is_grain], 0.7)
