# SPDX-License-Identifier: GPL-3.0-or-later
"""Blender's force field objects as ``core`` force fields: read every frame, part of the change detector.

Any object of the view layer whose ``obj.field.type`` is one the core supports (Force, Wind, Vortex,
Turbulence, Drag; empties made with Add > Force Field, or any object with a field in its Physics tab)
acts on every simulated particle. :func:`sync` gives the World each field's pose (``matrix_world``) and
settings of the current frame (so fields animate like colliders) and each body its
``object.unified_particles.field_weight``; the frame path calls it before every step. :func:`signature`
is the fields' part of ``scene_reader.settings_signature``: changing a field re-simulates and makes a
bake Outdated. What the settings mean, and where the core differs from Blender: ``core/fields.py``
and docs/physics.md, "Force fields". Other field types (Magnetic, Harmonic, Charge, Lennard-Jones,
Texture, Curve Guide, Boid, Fluid Flow) are ignored.

Imports ``rna``, ``mesh_io`` and the core.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import bpy

from ..core import SimulationInputError, World
from ..core.fields import KINDS
from . import mesh_io
from .rna import object_settings

# Blender FieldSettings read into the core, by the core's keyword (the same names).
FIELD_SETTINGS = (
    "strength",
    "flow",
    "shape",
    "falloff_type",
    "falloff_power",
    "use_min_distance",
    "distance_min",
    "use_max_distance",
    "distance_max",
    "radial_falloff",
    "use_radial_min",
    "radial_min",
    "use_radial_max",
    "radial_max",
    "z_direction",
    "noise",
    "size",
    "seed",
    "linear_drag",
    "quadratic_drag",
    "use_global_coords",
)
# Body kinds of the frame path's entries that force fields push.
BODY_KINDS = ("RIGID", "CLOTH", "GRANULAR")


def _view_layer(scene: bpy.types.Scene) -> bpy.types.ViewLayer | None:
    """The window's view layer if it shows ``scene``, else the scene's first (as scene_reader does)."""
    context = bpy.context
    if getattr(context, "scene", None) == scene and getattr(context, "view_layer", None) is not None:
        return context.view_layer
    return scene.view_layers[0] if len(scene.view_layers) else None


def _field(obj: bpy.types.Object) -> bpy.types.FieldSettings:
    """The object's field settings (every object has them; their type is NONE without a field)."""
    field = obj.field
    if field is None:
        raise RuntimeError(f"{obj.name!r} has no field settings")
    return field


def field_objects(scene: bpy.types.Scene) -> list[bpy.types.Object]:
    """The scene's force field objects of a supported kind in its view layer, sorted by name."""
    layer = _view_layer(scene)
    objects = layer.objects if layer is not None else scene.objects
    found = [o for o in objects if o.field is not None and o.field.type in KINDS]
    return sorted(found, key=lambda o: o.name)


def any_animated(scene: bpy.types.Scene) -> bool:
    """Whether some force field moves or changes over time (frames must then be evaluated one by one)."""
    return any(mesh_io.is_animated(o) for o in field_objects(scene))


def field_settings(obj: bpy.types.Object) -> dict[str, Any]:
    """The core keywords of an object's field settings (plain Python values, JSON-able)."""
    f = _field(obj)
    out: dict[str, Any] = {name: getattr(f, name) for name in FIELD_SETTINGS}
    out["seed"] = int(f.seed)
    out["enabled"] = bool(f.apply_to_location)  # Blender's "Affect Location"
    return out


def signature(scene: bpy.types.Scene) -> dict[str, Any]:
    """Every force field's kind and settings, and the pose of those not animated (moving a field by hand
    re-simulates; an animated one is read at every frame anyway), JSON-able."""
    out: dict[str, Any] = {}
    for obj in field_objects(scene):
        entry = {"kind": _field(obj).type, **field_settings(obj)}
        if not mesh_io.is_animated(obj):
            entry["matrix"] = [round(float(v), 9) for v in mesh_io.matrix_to_numpy(obj.matrix_world).ravel()]
        out[obj.name] = entry
    return out


def sync(world: World, entries: Sequence[Any], scene: bpy.types.Scene, depsgraph: Any = None) -> None:
    """Give ``world`` the scene's force fields as they are at the current frame, and each body its weight.

    ``entries`` are the frame path's ``scene_reader.Entry`` objects (``kind``, ``name``, ``body``);
    ``depsgraph``: read evaluated objects from it (None: the objects as they are, after a frame_set).
    Fields are matched by object name; a field whose object is gone is removed.
    """
    existing = {f.name: f for f in world.force_fields}
    seen: set[str] = set()
    for obj in field_objects(scene):
        source = obj.evaluated_get(depsgraph) if depsgraph is not None else obj
        settings = field_settings(source)
        matrix = mesh_io.matrix_to_numpy(source.matrix_world)
        kind = _field(obj).type
        try:
            field = existing.get(obj.name)
            if field is None or field.kind != kind:
                if field is not None:
                    world.remove_force_field(field)
                world.add_force_field(kind, transform=matrix, name=obj.name, **settings)
            else:
                field.configure(**settings)
                field.set_transform(matrix)
        except SimulationInputError as exc:
            raise SimulationInputError(f"Force field {obj.name!r}: {exc}") from None
        seen.add(obj.name)
    for name, field in existing.items():
        if name not in seen:
            world.remove_force_field(field)
    for entry in entries:
        if entry.kind in BODY_KINDS:
            body_obj = bpy.data.objects.get(entry.name)
            if body_obj is not None:
                world.set_field_weight(entry.body, float(object_settings(body_obj).field_weight))
