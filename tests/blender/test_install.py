"""The extension installs with Blender's installer, registers, and unregisters without leftovers."""

from __future__ import annotations

from types import ModuleType

from .conftest import PACKAGE


def registered_classes(bpy: ModuleType) -> set[str]:
    """Names of registered bpy classes that come from the extension's package."""
    found: set[str] = set()
    bases = (bpy.types.Operator, bpy.types.Panel, bpy.types.PropertyGroup, bpy.types.Menu, bpy.types.UIList)
    for base in bases:
        stack = list(base.__subclasses__())
        while stack:
            cls = stack.pop()
            stack.extend(cls.__subclasses__())
            if cls.__module__.startswith(PACKAGE) and getattr(cls, "is_registered", False):
                found.add(cls.__name__)
    return found


def extension_handlers(bpy: ModuleType) -> list[str]:
    names = []
    for attr in dir(bpy.app.handlers):
        handlers = getattr(bpy.app.handlers, attr)
        if isinstance(handlers, list):
            names += [f"{attr}:{h.__name__}" for h in handlers if h.__module__.startswith(PACKAGE)]
    return names


def test_installed_extension_registers_then_unregisters_cleanly(bpy_clean: ModuleType) -> None:
    import addon_utils

    bpy = bpy_clean
    assert PACKAGE in bpy.context.preferences.addons
    assert hasattr(bpy.types.Scene, "unified_particles")
    assert hasattr(bpy.types.Object, "unified_particles")
    assert bpy.context.scene.unified_particles.particle_radius > 0.0
    classes = registered_classes(bpy)
    assert "UNIFIED_PARTICLES_PG_scene" in classes
    for name in (
        "make_rigid",
        "make_cloth",
        "make_granular",
        "make_collider",
        "clear",
        "reset",
        "apply_preset",
    ):
        assert f"UNIFIED_PARTICLES_OT_{name}" in classes
        assert hasattr(bpy.ops.unified_particles, name)
    for name in ("main", "world", "advanced", "object", "cache"):
        assert f"UNIFIED_PARTICLES_PT_{name}" in classes
    handlers = extension_handlers(bpy)
    assert {"frame_change_post:on_frame_change_post", "load_pre:on_load_pre"} <= set(handlers), handlers

    addon_utils.disable(PACKAGE, default_set=True)
    assert PACKAGE not in bpy.context.preferences.addons
    assert registered_classes(bpy) == set()
    assert extension_handlers(bpy) == []
    assert not hasattr(bpy.types, "UNIFIED_PARTICLES_OT_make_rigid")
    assert not hasattr(bpy.types, "UNIFIED_PARTICLES_PT_main")
    assert not hasattr(bpy.types.Scene, "unified_particles")
    assert not hasattr(bpy.types.Object, "unified_particles")

    addon_utils.enable(PACKAGE, default_set=True)
    assert PACKAGE in bpy.context.preferences.addons
    assert registered_classes(bpy) == classes
    assert sorted(extension_handlers(bpy)) == sorted(handlers)
    assert bpy.context.scene.unified_particles.substeps >= 1
