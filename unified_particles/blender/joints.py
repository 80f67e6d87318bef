# SPDX-License-Identifier: GPL-3.0-or-later
"""Blender's Rigid Body Constraints as core joints (``World.add_joint``), read when the World is built.

A constraint (``obj.rigid_body_constraint``, usually on an Empty) whose two objects are rigid bodies of
ours becomes a joint between them; if one is ours and the other is a collider, not simulated by us or
missing, a joint to the world. Its pivot and axes are the constraint object's world matrix (scale
dropped): Blender's Hinge turns about the constraint's local Z, Slider and Piston move along X, Motor
drives X (Bullet's conventions in Blender's ``rigidbody.cc``). What the artist set is honoured:
Enabled, Disable Collisions, breaking, limits, springs and motors; what cannot be mapped is reported.

Units: Blender's Breaking Threshold and a motor's Max Impulse are impulses per Bullet step (Bullet
compares each row's applied impulse with the threshold at the end of its solve, ``btSequentialImpulse
ConstraintSolver::writeBackJoints``; the API calls it "Impulse threshold that must be reached for the
constraint to break"). Blender steps Bullet ``substeps_per_frame`` times per frame of ``time_scale /
fps`` seconds, so the force is the impulse divided by that step: F = impulse * fps * substeps / speed.

Imports the core and ``mesh_io``.
"""

from __future__ import annotations

from typing import Any

import bpy
import numpy as np

from ..core import SimulationInputError, World
from ..core.joints import KINDS
from .mesh_io import matrix_to_numpy

# Which limits each kind reads (Blender shows only these in its panel for that type).
_LIMITS = {
    "HINGE": ("ang_z",),
    "SLIDER": ("lin_x",),
    "PISTON": ("lin_x", "ang_x"),
    "GENERIC": ("lin_x", "lin_y", "lin_z", "ang_x", "ang_y", "ang_z"),
    "GENERIC_SPRING": ("lin_x", "lin_y", "lin_z", "ang_x", "ang_y", "ang_z"),
}
# Blender's Bullet defaults when the scene has no rigid body world.
_DEFAULT_SUBSTEPS = 10


def constraint_objects(scene: bpy.types.Scene) -> list[bpy.types.Object]:
    """The scene's objects that carry a rigid body constraint, by name."""
    found = [o for o in scene.objects if getattr(o, "rigid_body_constraint", None) is not None]
    return sorted(found, key=lambda o: o.name)


def bullet_step(scene: bpy.types.Scene) -> float:
    """Seconds of one Bullet step in this scene: time_scale / (fps * substeps_per_frame)."""
    rbw = scene.rigidbody_world
    substeps = int(rbw.substeps_per_frame) if rbw is not None else _DEFAULT_SUBSTEPS
    speed = float(rbw.time_scale) if rbw is not None else 1.0
    fps = float(scene.render.fps) / float(scene.render.fps_base)
    return speed / (fps * max(substeps, 1))


def _frame(obj: bpy.types.Object) -> tuple[np.ndarray, np.ndarray]:
    """The constraint object's pivot (3,) and axes (3, 3 columns X, Y, Z): its world matrix, scale and
    mirroring dropped (the nearest rotation)."""
    m = matrix_to_numpy(obj.matrix_world)
    u, _, vt = np.linalg.svd(m[:3, :3])
    rot = u @ vt
    if np.linalg.det(rot) < 0.0:
        u[:, 2] *= -1.0
        rot = u @ vt
    return m[:3, 3].copy(), rot


def joint_options(c: Any, step: float) -> tuple[dict[str, Any], list[str]]:
    """``World.add_joint`` keywords for the constraint settings ``c`` (limits, springs, motors, breaking,
    collisions), with A = object1 and B = object2, and notes on what was approximated."""
    notes: list[str] = []
    limits: dict[str, tuple[float, float]] = {}
    for dof in _LIMITS.get(c.type, ()):
        if getattr(c, f"use_limit_{dof}"):
            lower, upper = float(getattr(c, f"limit_{dof}_lower")), float(getattr(c, f"limit_{dof}_upper"))
            if lower <= upper:  # Bullet: lower above upper leaves the axis free
                # Blender's angles turn object1 relative to object2, the core's object2 relative to
                # object1 (measured with Bullet: a hinge limited to [-0.2, 1.0] rad stops a door falling
                # the core's negative way at 1.0); its offsets are object2's relative to object1 in both.
                limits[dof] = (-upper, -lower) if dof.startswith("ang") else (lower, upper)
    springs: dict[str, tuple[float, float]] = {}
    if c.type == "GENERIC_SPRING":
        for axis in "xyz":
            for dof, tag in ((f"lin_{axis}", axis), (f"ang_{axis}", f"ang_{axis}")):
                if getattr(c, f"use_spring_{tag}"):
                    stiffness = float(getattr(c, f"spring_stiffness_{tag}"))
                    springs[dof] = (stiffness, float(getattr(c, f"spring_damping_{tag}")))
        if springs and c.spring_type == "SPRING1":
            notes.append("Blender 2.7 springs (damping as a factor) approximated as Blender 2.8 springs")
    motors: dict[str, tuple[float, float]] = {}
    if c.type == "MOTOR":
        if c.use_motor_ang:
            # Bullet drives object1's spin relative to object2 (as the angles above): reversed here.
            motors["ang_x"] = (-float(c.motor_ang_target_velocity), float(c.motor_ang_max_impulse) / step)
        if c.use_motor_lin:
            motors["lin_x"] = (float(c.motor_lin_target_velocity), float(c.motor_lin_max_impulse) / step)
    options: dict[str, Any] = {"limits": limits, "springs": springs, "motors": motors}
    options["disable_collisions"] = bool(c.disable_collisions)
    if c.use_breaking:
        options["break_force"] = max(float(c.breaking_threshold), 1e-12) / step
    if c.use_override_solver_iterations:
        notes.append("its own solver iterations are not used (joints converge per small step)")
    return options, notes


def _flipped(options: dict[str, Any]) -> dict[str, Any]:
    """The options with A and B swapped: limits mirrored, motors reversed (the world is always side A in the
    core; in Blender it may be object2)."""
    out = dict(options)
    out["limits"] = {d: (-hi, -lo) for d, (lo, hi) in options["limits"].items()}
    out["motors"] = {d: (-v, f) for d, (v, f) in options["motors"].items()}
    return out


def add_joints(
    world: World, entries: list[Any], scene: bpy.types.Scene
) -> tuple[dict[str, str], dict[str, str]]:
    """A joint per enabled constraint of the scene that joins at least one of our rigid bodies; returns
    ({constraint object name: why it was not mapped}, {name: what was approximated})."""
    bodies = {e.name: e.body for e in entries if e.kind == "RIGID"}
    notes: dict[str, str] = {}
    approximated: dict[str, str] = {}
    step = bullet_step(scene)
    for obj in constraint_objects(scene):
        c: Any = obj.rigid_body_constraint
        if not c.enabled:
            continue
        ends = [c.object1, c.object2]
        a, b = (bodies.get(o.name) if o is not None else None for o in ends)
        first: Any
        second: Any
        if a is None and b is None:
            names = " and ".join(o.name for o in ends if o is not None) or "no objects"
            notes[obj.name] = (
                f"rigid body constraint {obj.name!r} joins {names}, none of them a rigid body of ours: "
                "not simulated (make one of them Rigid)"
            )
            continue
        if c.type not in KINDS:
            notes[obj.name] = f"rigid body constraint {obj.name!r}: type {c.type} is not supported"
            continue
        options, approximations = joint_options(c, step)
        pivot, frame = _frame(obj)
        if a is None:  # object1 is the world: the core's side A already
            first, second = b, None
        elif b is None:
            first, second, options = a, None, _flipped(options)
        else:
            first, second = a, b
        try:
            world.add_joint(first, second, c.type, pivot=pivot, frame=frame, name=obj.name, **options)
        except SimulationInputError as exc:
            notes[obj.name] = f"rigid body constraint {obj.name!r}: {exc}"
            continue
        if approximations:
            approximated[obj.name] = f"rigid body constraint {obj.name!r}: " + "; ".join(approximations)
    return notes, approximated


def signature(scene: bpy.types.Scene) -> dict[str, Any]:
    """Every constraint's settings, objects and pose, JSON-able: a change rebuilds the simulation."""
    out: dict[str, Any] = {}
    for obj in constraint_objects(scene):
        c: Any = obj.rigid_body_constraint
        values: dict[str, Any] = {}
        for prop in c.bl_rna.properties:
            name = prop.identifier
            if name == "rna_type":
                continue
            value = getattr(c, name)
            values[name] = value.name if isinstance(value, bpy.types.ID) else value
        values["matrix"] = [round(float(x), 7) for x in matrix_to_numpy(obj.matrix_world).ravel()]
        out[obj.name] = values
    return out
