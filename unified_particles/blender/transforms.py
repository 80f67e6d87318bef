# SPDX-License-Identifier: GPL-3.0-or-later
"""A rigid object's pose in Blender's terms: its typed transform, the matrices it makes, its rest pose and
its animation.

Blender places an object by the values the user types (location, rotation in the object's rotation
mode, scale) with its delta transforms, its parent and its constraints. The simulation reads a rigid
body's rest pose from those typed values (:func:`rigid_rest_matrix`), and a kinematic body's pose of
the current frame from its animation (:func:`animation_matrix`: keyframes and drivers of its own
transform, constraints; ``Animated``, the keyframable switch, is :func:`uses_animated`); write-back
turns a simulated matrix into typed values again (:func:`basis_values`, :func:`set_transform_values`),
keeping the user's sign pattern of the scale and the Euler angles closest to the last ones.

Used by the reader (stage 1), write-back (stage 3), the bake and the operators; only write-back calls
:func:`set_transform_values`. Imports ``bake_marks`` (a keyframe bake keeps the object's own action
aside: its F-curves are read from there), ``mesh_io`` and ``rna``.
"""

from __future__ import annotations

from typing import Any

import bpy
import numpy as np
from mathutils import Euler, Matrix, Quaternion, Vector

from . import mesh_io
from .bake_marks import restore_info
from .mesh_io import FloatArray
from .rna import object_bake, object_settings

# ------------------------------------------------------------------------- animated rigid bodies
ANIMATED_PATH = "unified_particles.animated"
# Where each transform channel sits in transform_values' list (location 3, rotation 4, scale 3).
_CHANNEL_OFFSET = {
    "location": 0,
    "rotation_quaternion": 3,
    "rotation_euler": 3,
    "rotation_axis_angle": 3,
    "scale": 7,
}


def _kept_action(obj: bpy.types.Object) -> tuple[Any, str] | None:
    """The object's own action and slot name while a keyframe bake has put the baked one in its place."""
    if object_bake(obj).baked_output != "KEYFRAMES":
        return None
    info = restore_info(obj)
    name = info.get("user_action")
    action = bpy.data.actions.get(name) if name else None
    return None if action is None else (action, str(info.get("user_action_slot", "")))


def fcurves(obj: bpy.types.Object) -> list[Any]:
    """The F-curves of the object's own action (for its slot in Blender 4.4+) and its drivers.

    While a keyframe bake replaces the action, the object's own one (which the bake keeps) is read, so
    the change detector sees the same settings before and after baking."""
    anim = obj.animation_data
    if anim is None:
        return []
    curves: list[Any] = list(anim.drivers)
    action, slot = anim.action, getattr(anim, "action_slot", None)
    kept = _kept_action(obj)
    if kept is not None:
        action = kept[0]
        slots = getattr(action, "slots", None)
        slot = next((x for x in slots if x.identifier == kept[1]), None) if slots is not None else None
    if action is None:
        return curves
    legacy = getattr(action, "fcurves", None)  # Blender < 5.0
    if legacy is not None:
        return curves + list(legacy)
    for layer in action.layers:
        strip: Any  # an ActionKeyframeStrip (the stubs' ActionStrip lacks channelbag)
        for strip in layer.strips:
            bag = strip.channelbag(slot) if slot is not None else None
            if bag is not None:
                curves += list(bag.fcurves)
    return curves


def uses_animated(obj: bpy.types.Object) -> bool:
    """A rigid object whose Animated is on, keyframed or driven: it may follow its animation."""
    return bool(object_settings(obj).animated) or any(c.data_path == ANIMATED_PATH for c in fcurves(obj))


def animated_signature(obj: bpy.types.Object) -> Any:
    """Animated for the change detector: its keys (frame, value) if animated, else its value. Its value at
    the current frame would change with the frame, which is not a change of the settings."""
    keys = [
        [[float(k.co[0]), float(k.co[1])] for k in c.keyframe_points] or "driven"
        for c in fcurves(obj)
        if c.data_path == ANIMATED_PATH
    ]
    return keys if keys else bool(object_settings(obj).animated)


def own_animation(obj: bpy.types.Object) -> bool:
    """The object's own transform is animated (keyframed or driven channels, or constraints)."""
    return len(obj.constraints) > 0 or any(c.data_path in _CHANNEL_OFFSET for c in fcurves(obj))


def animation_values(
    obj: bpy.types.Object, rest_values: tuple[str, list[float]] | None = None
) -> tuple[str, list[float]]:
    """The typed transform the animation gives now: animated channels as Blender just evaluated them, the
    others as at rest (``rest_values``, default the stored rest transform or the typed one): write-back
    may have put the simulated pose there since."""
    mode, values = rest_values if rest_values is not None else rest_transform_values(obj)
    values = list(values)
    _, now = transform_values(obj)
    for curve in fcurves(obj):
        offset = _CHANNEL_OFFSET.get(curve.data_path)
        if offset is not None:
            i = offset + int(curve.array_index)
            values[i] = now[i]
    return mode, values


def keyed_point_velocities(
    obj: bpy.types.Object, frame: int, dt: float, points: FloatArray, depsgraph: bpy.types.Depsgraph | None
) -> FloatArray:
    """(P, 3) m/s, the velocity of world ``points`` carried by the object's keyframed transform over the
    frame before ``frame``: v = (p - M(f - 1) M(f)^-1 p) / dt, M(f) = parent @ basis of the keys at f
    (rotation and scale included). Zero without keyframes of its own transform, with constraints or
    drivers (evaluated by Blender, not at other frames here); a moving parent's motion is not included.
    Read from the F-curves at both frames, so it does not depend on the frame Blender is at."""
    out = np.zeros((len(points), 3))
    m_now = keyed_matrix(obj, frame, depsgraph)
    if m_now is None or not len(points) or dt <= 0.0:
        return out
    m_before = keyed_matrix(obj, frame - 1, depsgraph)
    assert m_before is not None
    back = m_before @ np.linalg.inv(m_now)
    earlier = points @ back[:3, :3].T + back[:3, 3]
    return np.asarray((points - earlier) / dt, dtype=np.float64)


def keyed_matrix(
    obj: bpy.types.Object, frame: float, depsgraph: bpy.types.Depsgraph | None
) -> FloatArray | None:
    """(4, 4) the object's world matrix at ``frame`` from the keyframes of its own transform (the other
    channels as typed, its parent as now), read from its F-curves: so it does not depend on the frame
    Blender is at, and holds for an object outside every scene, which Blender no longer evaluates (a
    deleted inflow whose liquid stays). None without keyframes of its own transform, or with
    constraints (drivers are not followed)."""
    anim = obj.animation_data
    drivers = set() if anim is None else {id(d) for d in anim.drivers}
    keyed = [c for c in fcurves(obj) if c.data_path in _CHANNEL_OFFSET and id(c) not in drivers]
    if not keyed or len(obj.constraints):
        return None
    mode, typed = transform_values(obj)
    values = list(typed)
    for curve in keyed:
        values[_CHANNEL_OFFSET[curve.data_path] + int(curve.array_index)] = float(curve.evaluate(frame))
    return parent_frame(obj, depsgraph) @ basis_matrix(obj, mode, values)


def animation_matrix(
    obj: bpy.types.Object,
    depsgraph: bpy.types.Depsgraph | None,
    rest_values: tuple[str, list[float]] | None = None,
) -> FloatArray:
    """A rigid object's world matrix as its animation places it at the current frame: keyframes and
    drivers of its own transform, its parents, its constraints.

    ``rest_values``: the typed transform at the start frame, for the channels that are not animated
    (default: the stored rest transform, or the typed one). A constrained object is Blender's own
    evaluation of its typed transform, which must be the animation's then (write-back puts the
    simulated pose there: ``writeback.show_animation_poses`` puts the animation's back before this read).
    """
    if not own_animation(obj):
        return rigid_rest_matrix(obj, depsgraph)  # moved only by its parent
    if len(obj.constraints):
        return mesh_io.evaluated_matrix_world(obj, depsgraph)
    mode, values = animation_values(obj, rest_values)
    return parent_frame(obj, depsgraph) @ basis_matrix(obj, mode, values)


# ------------------------------------------------------------------------- rigid transforms
# A rigid object's rest pose is read from the transform values the user typed (location, rotation,
# scale, kept in ``rest_transform`` while the simulation moves the object) placed by its parent at the
# start frame (the frame the simulation is built at), never from what write-back wrote: so the start
# pose does not depend on the current frame, and replaying does not drift.
def transform_values(obj: bpy.types.Object) -> tuple[str, list[float]]:
    """The object's typed transform: its rotation mode and location (3), rotation (4), scale (3)."""
    mode = obj.rotation_mode
    if mode == "QUATERNION":
        rotation = [float(v) for v in obj.rotation_quaternion[:]]
    elif mode == "AXIS_ANGLE":
        rotation = [float(v) for v in obj.rotation_axis_angle[:]]
    else:
        rotation = [*obj.rotation_euler[:], 0.0]
    return mode, [*obj.location[:], *rotation, *obj.scale[:]]


def rest_transform_values(obj: bpy.types.Object) -> tuple[str, list[float]]:
    """The typed transform before the simulation moved the object (the current one if not moved)."""
    s = object_settings(obj)
    if s.has_rest and s.rest_rotation_mode:
        return s.rest_rotation_mode, list(s.rest_transform)
    return transform_values(obj)


def _rotation(mode: str, values: list[float]) -> Matrix:
    if mode == "QUATERNION":
        q = Quaternion(values[:4])
        return q.normalized().to_matrix() if q.magnitude > 0.0 else Matrix.Identity(3)
    if mode == "AXIS_ANGLE":
        axis = Vector(values[1:4])
        return Matrix.Rotation(values[0], 3, axis.normalized()) if axis.length > 0.0 else Matrix.Identity(3)
    return Euler(values[:3], mode).to_matrix()


def _delta_rotation(obj: bpy.types.Object, mode: str) -> Matrix:
    if mode == "QUATERNION":
        return _rotation(mode, [float(v) for v in obj.delta_rotation_quaternion[:]])
    if mode == "AXIS_ANGLE":
        return Matrix.Identity(3)
    return Euler(obj.delta_rotation_euler[:], mode).to_matrix()


def basis_matrix(obj: bpy.types.Object, mode: str, values: list[float]) -> FloatArray:
    """The local (basis) matrix of typed transform values, with the object's delta transforms, as Blender
    composes it: location + delta, delta rotation @ rotation, scale * delta scale."""
    rotation = np.array(_delta_rotation(obj, mode) @ _rotation(mode, values[3:7]), dtype=np.float64)
    size = np.asarray(values[7:10], dtype=np.float64) * np.asarray(obj.delta_scale[:], dtype=np.float64)
    matrix = np.eye(4)
    matrix[:3, :3] = rotation * size[None, :]
    matrix[:3, 3] = np.asarray(values[:3], dtype=np.float64) + np.asarray(
        obj.delta_location[:], dtype=np.float64
    )
    return matrix


def basis_values(obj: bpy.types.Object, basis: FloatArray, mode: str, like: list[float]) -> list[float]:
    """Typed transform values (location, rotation in ``mode``, scale) of a basis matrix, keeping the sign
    pattern of the scale in ``like`` (typed values) and, for Euler angles, the angles closest to them."""
    delta_scale = np.asarray(obj.delta_scale[:], dtype=np.float64)
    signs = np.where(np.asarray(like[7:10]) * delta_scale < 0.0, -1.0, 1.0)
    m = np.asarray(basis, dtype=np.float64)[:3, :3]
    size = signs * np.linalg.norm(m, axis=0)
    if np.any(size == 0.0) or np.linalg.det(m) * np.prod(signs) < 0.0:
        signs = np.ones(3)  # the sign pattern cannot describe this matrix: Blender's own choice
        size = np.linalg.norm(m, axis=0) * (1.0 if np.linalg.det(m) >= 0.0 else -1.0)
    safe = np.where(size == 0.0, 1.0, size)
    rotation = _delta_rotation(obj, mode).transposed() @ Matrix((m / safe[None, :]).tolist())
    scale = size / np.where(delta_scale == 0.0, 1.0, delta_scale)
    location = np.asarray(basis)[:3, 3] - np.asarray(obj.delta_location[:], dtype=np.float64)
    if mode == "QUATERNION":
        q = rotation.to_quaternion()
        if Quaternion(like[3:7]).dot(q) < 0.0:
            q.negate()
        rot = [float(v) for v in q[:]]
    elif mode == "AXIS_ANGLE":
        axis, angle = rotation.to_quaternion().to_axis_angle()
        rot = [angle, *axis[:]]
    else:
        rot = [*rotation.to_euler(mode, Euler(like[3:6], mode))[:], 0.0]
    return [*location.tolist(), *rot, *scale.tolist()]


def set_transform_values(obj: bpy.types.Object, mode: str, values: list[float]) -> None:
    """Write typed transform values (in ``mode``, the object's rotation mode) into the object."""
    obj.location = values[0:3]
    if mode == "QUATERNION":
        obj.rotation_quaternion = values[3:7]
    elif mode == "AXIS_ANGLE":
        obj.rotation_axis_angle = values[3:7]
    else:
        obj.rotation_euler = values[3:6]
    obj.scale = values[7:10]


def parent_frame(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph | None = None) -> FloatArray:
    """Where an object's basis sits in the world now: parent @ parent inverse (identity without one)."""
    if obj.parent is None:
        return np.eye(4)
    if obj.parent_type == "OBJECT":
        parent = mesh_io.evaluated_matrix_world(obj.parent, depsgraph)
        return parent @ mesh_io.matrix_to_numpy(obj.matrix_parent_inverse)
    source = obj.evaluated_get(depsgraph) if depsgraph is not None else obj
    world = mesh_io.matrix_to_numpy(source.matrix_world)
    return world @ np.linalg.pinv(mesh_io.matrix_to_numpy(source.matrix_basis))


def rigid_rest_matrix(obj: bpy.types.Object, depsgraph: bpy.types.Depsgraph | None = None) -> FloatArray:
    """A rigid object's world matrix at rest: its typed transform (before the simulation moved it) placed
    by its parent as evaluated now (the simulation evaluates it at the start frame)."""
    s = object_settings(obj)
    if s.has_rest and not s.rest_rotation_mode:  # rest data of an older version: a world matrix
        return np.asarray(s.rest_matrix, dtype=np.float64).reshape(4, 4)
    if not s.has_rest and len(obj.constraints):  # constraints place it too: Blender's own evaluation
        return mesh_io.evaluated_matrix_world(obj, depsgraph)
    mode, values = rest_transform_values(obj)
    return parent_frame(obj, depsgraph) @ basis_matrix(obj, mode, values)
