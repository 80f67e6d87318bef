# SPDX-License-Identifier: GPL-3.0-or-later
"""Typed access to Blender data for the rest of the Blender layer.

mypy checks this package against fake-bpy-module's stubs of the bpy API. Two things the stubs
cannot know: the property groups this extension adds at register time (``scene.unified_particles``
and friends), and which ID type ``Object.data`` holds (the stubs give the union of every type).
The helpers below give precise types and check at run time what they claim, so a wrong object
type fails with a clear message instead of an AttributeError deep inside the solver glue.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar, cast

import bpy

if TYPE_CHECKING:
    from bpy.stub_internal.rna_enums import OperatorReturnItems

    from .bake.properties import UNIFIED_PARTICLES_PG_object_bake, UNIFIED_PARTICLES_PG_scene_bake
    from .properties import UNIFIED_PARTICLES_PG_object, UNIFIED_PARTICLES_PG_scene

    #: What an operator's execute/invoke/modal returns: a set of Blender's return items.
    OperatorResult = set[OperatorReturnItems]
else:
    OperatorResult = set

T = TypeVar("T")


def scene_settings(scene: bpy.types.Scene) -> UNIFIED_PARTICLES_PG_scene:
    """``scene.unified_particles``: the solver settings."""
    return cast("UNIFIED_PARTICLES_PG_scene", scene.unified_particles)  # type: ignore[attr-defined]


def frame_seconds(scene: bpy.types.Scene) -> float:
    """Simulated seconds per frame: the scene's Speed (Blender's rigid body world Speed) / frame rate."""
    fps = float(scene.render.fps) / float(scene.render.fps_base)
    return float(scene_settings(scene).time_scale) / fps


def object_settings(obj: bpy.types.Object) -> UNIFIED_PARTICLES_PG_object:
    """``object.unified_particles``: the role and its settings."""
    return cast("UNIFIED_PARTICLES_PG_object", obj.unified_particles)  # type: ignore[attr-defined]


def scene_bake(scene: bpy.types.Scene) -> UNIFIED_PARTICLES_PG_scene_bake:
    """``scene.unified_particles_bake``: the bake settings and state."""
    return cast("UNIFIED_PARTICLES_PG_scene_bake", scene.unified_particles_bake)  # type: ignore[attr-defined]


def object_bake(obj: bpy.types.Object) -> UNIFIED_PARTICLES_PG_object_bake:
    """``object.unified_particles_bake``: per-object bake format and output."""
    return cast("UNIFIED_PARTICLES_PG_object_bake", obj.unified_particles_bake)  # type: ignore[attr-defined]


def context_scene(context: bpy.types.Context) -> bpy.types.Scene:
    """The context's scene; Blender always has one where our operators and panels run."""
    scene = context.scene
    if scene is None:
        raise RuntimeError("Unified Particles needs an active scene")
    return scene


def mesh_of(obj: bpy.types.Object) -> bpy.types.Mesh:
    """The mesh data of a mesh object (``obj.data`` typed as Mesh)."""
    data = obj.data
    if not isinstance(data, bpy.types.Mesh):
        raise TypeError(f"'{obj.name}' is not a mesh object")
    return data


def layout_of(panel: Any) -> bpy.types.UILayout:
    """A panel's or operator's layout, which Blender sets before calling draw()."""
    layout = panel.layout
    if layout is None:
        raise RuntimeError("draw() called without a layout")
    return cast("bpy.types.UILayout", layout)


def as_type(value: Any, kind: type[T]) -> T:
    """``value`` checked to be a ``kind`` (e.g. the subclass of a modifier or node just created)."""
    if not isinstance(value, kind):
        raise TypeError(f"expected {kind.__name__}, got {type(value).__name__}")
    return value


def register_classes(classes: tuple[type, ...]) -> None:
    """Register Blender classes in order (``bpy.utils.register_classes_factory``, typed)."""
    for cls in classes:
        bpy.utils.register_class(cls)


def unregister_classes(classes: tuple[type, ...]) -> None:
    """Unregister Blender classes in reverse order."""
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
