# SPDX-License-Identifier: GPL-3.0-or-later
"""Blender's force field objects as ``core`` force fields: read every frame, part of the change detector.

Any object of the view layer whose ``obj.field.type`` is one the core supports (Force, Wind, Vortex,
Turbulence, Drag; empties made with Add > Force Field, or any object with a field in its Physics tab) acts
on every simulated particle. :func:`sync` gives the World each field's pose (``matrix_world``) and settings
of the current frame (so fields animate like colliders) and each body its weights
(``object.unified_particles.field_weight`` and, where Blender's physics on the object has them, its effector
weights per field type and effector collection: :func:`weights_of`); the frame path calls it before every
step. :func:`signature` is the fields' part of ``scene_reader.settings_signature``: changing a field
re-simulates and makes a bake Outdated. What the settings mean, and where the core differs from Blender:
``core/fields.py`` and docs/physics.md, "Force fields". Other field types (Magnetic, Harmonic, Charge,
Lennard-Jones, Texture, Curve Guide, Boid, Fluid Flow) are ignored.

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
BODY_KINDS = ("RIGID", "CLOTH", "GRANULAR", "FLUID", "INFLOW")
# Blender's per-type effector weights read, by the core's field kind.
WEIGHT_KINDS = {
    "FORCE": "force",
    "WIND": "wind",
    "VORTEX": "vortex",
    "TURBULENCE": "turbulence",
    "DRAG": "drag",
}


def blender_effector_weights(obj: bpy.types.Object, scene: bpy.types.Scene) -> Any | None:
    """Blender's own ``EffectorWeights`` of the physics it has on ``obj``, or None.

    A Cloth modifier's (``mod.settings.effector_weights``), a Soft Body's (``obj.soft_body``), or the
    rigid body world's (``scene.rigidbody_world.effector_weights``, shared by all its rigid bodies)
    for an object with a Rigid Body. These stay on the object when its Blender simulation is turned
    off, and say how the artist wanted the fields to act on it: they are honoured.
    """
    for mod in obj.modifiers:
        if mod.type == "CLOTH":
            cloth: Any = mod  # a ClothModifier
            return cloth.settings.effector_weights
        if mod.type == "SOFT_BODY" and obj.soft_body is not None:
            return obj.soft_body.effector_weights
    world = scene.rigidbody_world
    if obj.rigid_body is not None and world is not None:
        return world.effector_weights
    return None


def weights_of(
    obj: bpy.types.Object, scene: bpy.types.Scene
) -> tuple[float, dict[str, float], list[str] | None]:
    """(All, {kind: weight}, field names of the effector collection or None) for a simulated object.

    All is the object's Field Weight times Blender's "All" where Blender has weights for it; the kinds'
    weights and the collection are Blender's (1 and every field without)."""
    own = float(object_settings(obj).field_weight)
    weights = blender_effector_weights(obj, scene)
    if weights is None:
        return own, dict.fromkeys(WEIGHT_KINDS, 1.0), None
    kinds = {kind: float(getattr(weights, name)) for kind, name in WEIGHT_KINDS.items()}
    group = weights.collection
    names = sorted(o.name for o in group.all_objects) if group is not None else None
    return own * float(weights.all), kinds, names


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


def field_settings(obj: bpy.types.Object, scene: bpy.types.Scene) -> dict[str, Any]:
    """The core keywords of an object's field settings (plain Python values, JSON-able).

    ``vel_to_sec`` is the scene's frame rate, as Blender's rigid bodies and cloth evaluate fields
    (``pd_point_from_loc``): their strengths push with strength / fps, as in Blender. The scene's Speed is
    not in it, as in Blender (``pd_point_from_loc`` reads the frame rate only, and the rigid body world
    applies that force over its Speed / fps seconds per frame): at Speed 2 a Force field moves a body
    2.021 m in 24 frames here and 2.008 m in Blender's rigid body world (1 N on 1 kg for 2 s: 2.0 m;
    tests/blender/test_field_meanings.py)."""
    f = _field(obj)
    out: dict[str, Any] = {name: getattr(f, name) for name in FIELD_SETTINGS}
    out["seed"] = int(f.seed)
    out["enabled"] = bool(f.apply_to_location)  # Blender's "Affect Location"
    out["vel_to_sec"] = float(scene.render.fps) / float(scene.render.fps_base)
    if f.type != "DRAG":  # Blender's linear_drag is the strength (f_strength), maybe negative: unused
        del out["linear_drag"], out["quadratic_drag"]
    return out


def signature(scene: bpy.types.Scene) -> dict[str, Any]:
    """Every force field's kind and settings, and the pose of those not animated (moving a field by hand
    re-simulates; an animated one is read at every frame anyway), JSON-able."""
    out: dict[str, Any] = {}
    for obj in field_objects(scene):
        entry = {"kind": _field(obj).type, **field_settings(obj, scene)}
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
        settings = field_settings(source, scene)
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
                everything, kinds, names = weights_of(body_obj, scene)
                world.set_field_weight(entry.body, everything)
                for kind, weight in kinds.items():
                    world.set_field_weight(entry.body, weight, kind)
                world.set_field_sources(entry.body, names)
