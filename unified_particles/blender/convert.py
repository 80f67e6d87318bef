# SPDX-License-Identifier: GPL-3.0-or-later
"""Convert Blender Physics: Blender's Cloth, Collision, Rigid Body and force fields as our roles.

``unified_particles.convert_blender_physics`` reads each object's Blender physics and makes it what the
Make buttons would (it runs them: the object ends up exactly as if the user had clicked Make ...), with
the settings Blender's mean: mass in kg, friction, pins with their weights, stiffness, damping; then it
switches Blender's own simulation of the object off. Every setting it reads is listed, with its mapping,
in docs/coming_from_blender.md; the report says per object what was mapped, approximated or not.

Switching off keeps the artist's settings (and Ctrl+Z gives everything back):
* a Cloth modifier is hidden in viewport and render (its settings stay; show it again to give the mesh
  back to Blender's cloth);
* an Active rigid body becomes Animated (Bullet's kinematic: Bullet then follows our motion instead of
  setting it; every Bullet setting stays; untick Animated to give it back to Bullet);
* Passive rigid bodies, Collision modifiers and force fields move nothing and stay as they are (force
  fields act on our bodies directly, ``fields.py``; Rigid Body Constraints are left for the joints);
* a Soft Body is not converted (no soft bodies yet) and stays on.

Units. Blender's cloth solver counts time in frames and scales gravity by 0.001 (a cloth falls at
0.001 fps^2 g: 0.58 g at 24 fps), so its springs (stiffness / mean edge length, per frame^2) are
converted to the compliance that stretches the same under gravity: alpha = 0.001 L / stiffness (m/N).
Bullet multiplies the two sides' friction and restitution; we average friction per contact and have
one restitution for the scene: see :func:`friction_of`.

A top module (an operator): imports ``operators``' registered Make operators through ``bpy.ops``,
``cost``, ``blender_physics``, ``materials``, ``scene_reader``, ``transforms`` and ``rna``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import bpy
import numpy as np
from bpy.props import EnumProperty

from ..core.fields import KINDS
from . import blender_physics, cost, mesh_io, scene_reader
from .materials import SOFT_PIN_HZ_MAX, SOFT_PIN_HZ_MIN
from .properties import MAX_FRICTION
from .rna import (
    OperatorResult,
    context_scene,
    mesh_of,
    object_settings,
    register_classes,
    scene_settings,
    unregister_classes,
)
from .transforms import ANIMATED_PATH, fcurves

TEXT_NAME = "Unified Particles conversion"
# Report lines shown in the operator's report itself; more go to the text block only, after a summary.
MAX_REPORT_LINES = 6
# Blender's cloth: gravity and forces are per frame^2 and gravity is scaled by this (cloth.cc).
CLOTH_FORCE_SCALE = 0.001
# Blender's cloth pins a vertex whose goal weight^4 reaches this (SOFTGOALSNAP); below it the pin is a spring.
SOFT_GOAL_SNAP = 0.999
# Blender's cloth friction on a Collision object is a percentage (collision.cc: cfrict * 0.01).
CLOTH_FRICTION_PERCENT = 0.01
# The stiffness factor of a compliance: the inverse of materials.stiffness_to_compliance's log scale.
_SOFT_EXPONENT, _STIFF_EXPONENT = -1.0, -8.0

MAPPED, APPROXIMATED, NOT_MAPPED = "mapped", "approximated", "not mapped"
# Animated properties of a Bullet body that decide whether Bullet moves it.
BULLET_SWITCHES = ("rigid_body.kinematic", "rigid_body.enabled")
MAKE_OPERATORS = {
    "RIGID": "make_rigid",
    "CLOTH": "make_cloth",
    "SOFT": "make_soft",
    "COLLIDER": "make_collider",
}
# A Blender soft body's edge springs (Pull/Push, 0-0.999) as our cluster frequency: SOFT_HZ_MIN at 0 to
# SOFT_HZ_MAX at 1 (linear). Blender's default 0.5 gives 31 Hz, a firm jelly; an approximation (its springs
# act along edges, ours on clusters), reported as such.
SOFT_HZ_MIN, SOFT_HZ_MAX = 2.0, 60.0


def _untyped(value: Any) -> Any:
    """``value`` for reading settings the stubs type as optional (or do not know) once they are checked."""
    return value


@dataclass
class Line:
    """One reported setting: the object (or "Scene"), mapped / approximated / not mapped, and what."""

    name: str
    status: str
    text: str

    def __str__(self) -> str:
        return f"{self.name}: {self.status}: {self.text}"


@dataclass
class Plan:
    """What Convert does with one object: the role to Make, our settings after, what to switch off."""

    obj: bpy.types.Object
    role: str = ""  # "" : no role (soft body, force field, constraint only)
    settings: dict[str, Any] = field(default_factory=dict)
    switch_off: str = ""  # "CLOTH" or "SOFT_BODY" (the modifier) or "RIGID_BODY"
    animated_keys: list[tuple[float, bool]] = field(default_factory=list)  # Bullet's keyed Animated
    lines: list[Line] = field(default_factory=list)
    damping_rate: float = 0.0  # 1/s, for the scene's Damping
    restitution: float | None = None  # Bullet's Bounciness of a rigid body

    def add(self, status: str, text: str) -> None:
        self.lines.append(Line(self.obj.name, status, text))


def has_blender_physics(obj: bpy.types.Object) -> bool:
    """Whether ``obj`` has any of Blender's physics Convert reads."""
    return bool(
        obj.rigid_body is not None
        or obj.rigid_body_constraint is not None
        or any(m.type in ("CLOTH", "SOFT_BODY", "COLLISION") for m in obj.modifiers)
        or (obj.field is not None and obj.field.type != "NONE")
    )


def compliance_to_stiffness(compliance: float) -> float:
    """Our stiffness factor (0-1) of an XPBD compliance (m/N): the inverse of ``stiffness_to_compliance``."""
    if compliance <= 0.0:
        return 1.0
    s = (_SOFT_EXPONENT - math.log10(compliance)) / (_SOFT_EXPONENT - _STIFF_EXPONENT)
    return float(min(max(s, 0.0), 1.0))


def friction_of(bullet_friction: float) -> float:
    """Our friction of a Bullet friction f: f^2, at most MAX_FRICTION.

    Bullet's contact friction is the product of the two sides' (f_a f_b, btManifoldResult); ours is
    their mean. With f^2 each, two surfaces of the same friction f get f^2 as in Bullet (two default
    0.5 bodies: 0.25); two different ones get (f_a^2 + f_b^2) / 2 >= f_a f_b (more grip, never less).
    """
    return float(min(max(bullet_friction, 0.0) ** 2, MAX_FRICTION))


def _mean_edge_length(obj: bpy.types.Object) -> float:
    mesh = mesh_of(obj)
    if len(mesh.edges) == 0:
        return 0.0
    points = mesh_io.transform_points(mesh_io.matrix_to_numpy(obj.matrix_world), mesh_io.read_positions(mesh))
    edges = np.empty(len(mesh.edges) * 2, dtype=np.int32)
    mesh.edges.foreach_get("vertices", edges)
    pairs = edges.reshape(-1, 2)
    return float(np.linalg.norm(points[pairs[:, 0]] - points[pairs[:, 1]], axis=1).mean())


def _plan_cloth(plan: Plan, mod: Any, scene: bpy.types.Scene) -> None:
    obj, st = plan.obj, mod.settings
    plan.role, plan.switch_off = "CLOTH", "CLOTH"
    count = len(mesh_of(obj).vertices)
    total = float(st.mass) * count
    plan.settings.update(mass_mode="MASS", mass=max(total, 1e-6))
    plan.add(MAPPED, f"Cloth -> Cloth; Vertex Mass {st.mass:g} kg x {count} vertices = Mass {total:.4g} kg")
    length = max(_mean_edge_length(obj), 1e-6)
    for ours, theirs, label in (
        ("stretch_stiffness", float(st.tension_stiffness), "Tension"),
        ("bend_stiffness", float(st.bending_stiffness), "Bending"),
    ):
        compliance = CLOTH_FORCE_SCALE * length / max(theirs, 1e-9)
        plan.settings[ours] = compliance_to_stiffness(compliance)
        plan.add(
            APPROXIMATED,
            f"{label} stiffness {theirs:g} -> {ours.replace('_', ' ').title()} {plan.settings[ours]:.3f} "
            f"(compliance 0.001 x mean edge {length:.3g} m / {theirs:g} = {compliance:.3g} m/N)",
        )
    plan.add(NOT_MAPPED, "Compression, Shear and the damping of springs: stretch stiffness covers them")
    _plan_pins(plan, st, count, length)
    cs = mod.collision_settings
    plan.settings["self_collision"] = bool(cs.use_self_collision)
    plan.add(MAPPED, f"Self Collision {'on' if cs.use_self_collision else 'off'}")
    friction = getattr(cs, "friction", 5.0)
    plan.settings["friction"] = min(CLOTH_FRICTION_PERCENT * float(friction), MAX_FRICTION)
    plan.add(
        APPROXIMATED, f"collision Friction {friction:g} -> Friction {plan.settings['friction']:.3g} (/100)"
    )
    # Blender's cloth keeps its vertices distance_min from colliders (plus their Thickness Outer): our
    # cloth's Thickness, the radius of its vertex particles (contacts at the sum of the two radii).
    thickness = min(max(float(cs.distance_min), 1e-4), 10.0)
    plan.settings.update(size_mode="VALUE", particle_size=thickness)
    plan.add(MAPPED, f"collision Distance {cs.distance_min:g} m -> Thickness {thickness:g} m")
    # Blender's air drag is a force -0.01 Cvi v per vertex, v in m per frame (implicit_blender.cc,
    # SIM_mass_spring_force_drag): a decay of fps 0.01 Cvi / vertex mass per second. Ours is the air's
    # drag and lift on each triangle (core/air.py), Cvi its density in sea-level air: the same default 1.
    fps = scene.render.fps / scene.render.fps_base
    plan.settings["air_viscosity"] = max(float(st.air_damping), 0.0)
    plan.add(
        APPROXIMATED,
        f"Air Viscosity {st.air_damping:g} -> Air Viscosity {plan.settings['air_viscosity']:g} "
        "(drag and lift of air that dense on the triangles; Blender's is a damping of fps x 0.01 x "
        "viscosity / vertex mass per second)",
    )
    plan.add(
        NOT_MAPPED,
        f"Quality {st.quality} steps: ours is the scene's Substeps x Iterations; Blender's cloth feels "
        f"0.001 fps^2 of gravity ({CLOTH_FORCE_SCALE * fps**2:.2f} g at {fps:g} fps), ours all of it",
    )
    weights = st.effector_weights
    # Read from the (hidden) Cloth modifier at every build, with the per-type weights and the effector
    # collection (fields.weights_of), so Field Weight stays 1: copying All too would apply it twice.
    plan.add(
        MAPPED, f"field weights (All {weights.all:g}, per type, collection): read from the Cloth settings"
    )
    if abs(weights.gravity - 1.0) > 1e-6:
        plan.add(NOT_MAPPED, f"field weight Gravity {weights.gravity:g}: ours uses the scene's gravity")
    if st.use_pressure:
        plan.settings.update(use_pressure=True, inflation=1.0)
        plan.add(
            APPROXIMATED,
            f"Pressure {st.uniform_pressure_force:g} -> a balloon held at its mesh's volume (Inflation 1; "
            "Blender's pressure force, target volume and pressure scale are not read: set Inflation)",
        )
    if st.use_internal_springs:
        plan.add(NOT_MAPPED, "Internal Springs")


def _plan_pins(plan: Plan, st: Any, count: int, length: float) -> None:
    """Blender's pin group with its weights: pinned where weight^4 >= 0.999, a goal spring below.

    Blender's goal spring is k = weight^4 Pin Stiffness / mean edge (per frame^2, gravity x 0.001): it
    holds a vertex of mass m at the natural frequency f = sqrt(k / (0.001 m)) / (2 pi) against true
    gravity. Ours: Pin Stiffness s makes every vertex of the group a spring of SOFT_PIN_HZ_MIN x
    (SOFT_PIN_HZ_MAX / SOFT_PIN_HZ_MIN)^(s weight) Hz; s is chosen to match Blender's frequency at the
    median soft weight (weights 1 then get a spring near SOFT_PIN_HZ_MAX, holding them within a mm).
    """
    group_name = st.vertex_group_mass
    if not group_name:
        return
    obj = plan.obj
    if obj.vertex_groups.get(group_name) is None:
        plan.add(NOT_MAPPED, f"Pin Group {group_name!r} does not exist")
        return
    plan.settings["pin_group"] = group_name
    plan.settings["pin_full_weight"] = True  # weight 1: pinned exactly, as Blender's SOFTGOALSNAP
    weights = mesh_io.vertex_group_weights(obj, group_name)
    pinned = weights[weights > 0.0]
    soft = pinned[pinned**4 < SOFT_GOAL_SNAP]
    if soft.size == 0:
        plan.settings["pin_stiffness"] = 1.0
        plan.add(MAPPED, f"Pin Group {group_name!r}: {pinned.size} vertices pinned (weight 1)")
        return
    w = float(np.median(soft))
    k = w**4 * float(st.pin_stiffness) / length
    hz = math.sqrt(k / (CLOTH_FORCE_SCALE * max(float(st.mass), 1e-9))) / (2.0 * math.pi)
    exponent = math.log(max(hz, SOFT_PIN_HZ_MIN) / SOFT_PIN_HZ_MIN) / math.log(
        SOFT_PIN_HZ_MAX / SOFT_PIN_HZ_MIN
    )
    plan.settings["pin_stiffness"] = float(min(max(exponent / w, 0.0), 0.999))
    plan.add(
        APPROXIMATED,
        f"Pin Group {group_name!r}, {soft.size} of {pinned.size} weights below 1 (soft): Pin "
        f"Stiffness {st.pin_stiffness:g} -> {plan.settings['pin_stiffness']:.3f} (a {hz:.2g} Hz spring at "
        f"weight {w:.2g}, as Blender's goal spring)",
    )


def _plan_rigid(plan: Plan, scene: bpy.types.Scene) -> None:
    obj, rb = plan.obj, _untyped(plan.obj.rigid_body)
    if not blender_physics.in_rigid_body_world(obj, scene):
        plan.add(NOT_MAPPED, "Rigid Body not in the scene's rigid body world (Bullet ignores it too)")
        return
    friction = friction_of(float(rb.friction))
    plan.settings["friction"] = friction
    clamped = " (clamped: Bullet clamps at 10 too)" if rb.friction**2 > MAX_FRICTION else ""
    plan.add(
        APPROXIMATED,
        f"Friction {rb.friction:g} -> {friction:.4g} (f^2: Bullet multiplies, ours averages){clamped}",
    )
    shape = rb.collision_shape
    if rb.type == "PASSIVE":
        plan.role = "COLLIDER"
        how = "Animated: follows its animation" if rb.kinematic else "static"
        plan.add(MAPPED, f"Passive rigid body -> Collider ({how}; the mesh's surface, whatever the shape)")
        plan.add(NOT_MAPPED, f"Bounciness {rb.restitution:g}: one scene Restitution (see Scene)")
        plan.restitution = float(rb.restitution)
        return
    plan.role, plan.switch_off = "RIGID", "RIGID_BODY"
    plan.settings.update(mass_mode="MASS", mass=float(rb.mass))
    weights = _untyped(scene.rigidbody_world).effector_weights  # Bullet's field weights are the world's
    # Read from the rigid body world at every build (fields.weights_of; the object keeps its Blender rigid
    # body, set to Animated), so Field Weight stays 1: copying All too would apply it twice.
    plan.add(
        MAPPED, f"rigid body world field weights (All {weights.all:g}, per type, collection): read as is"
    )
    animated = bool(rb.kinematic or not rb.enabled)
    plan.settings["animated"] = animated
    kind = "Animated rigid (follows its animation)" if animated else "Rigid"
    plan.add(MAPPED, f"Active rigid body -> {kind}; Mass {rb.mass:g} kg")
    keyed = [c for c in fcurves(obj) if c.data_path == "rigid_body.kinematic"]
    for curve in keyed:
        plan.animated_keys += [(float(k.co[0]), bool(k.co[1] > 0.5)) for k in curve.keyframe_points]
    if plan.animated_keys:
        plan.add(MAPPED, f"keyed Animated ({len(plan.animated_keys)} keys) -> our Animated, same keys")
    if any(c.data_path == "rigid_body.enabled" for c in fcurves(obj)):
        plan.add(NOT_MAPPED, "keyed Dynamic: key our Animated instead (on while it should follow)")
    plan.restitution = float(rb.restitution)
    plan.add(APPROXIMATED, f"Bounciness {rb.restitution:g}: one scene Restitution (see Scene)")
    if shape == "MESH":  # hollow in Bullet: bodies nested inside it have room
        plan.settings["fill"] = "SHELL"
        plan.add(MAPPED, "Shape Mesh (hollow in Bullet) -> Fill Shell: particles only under its surface")
    else:
        plan.settings["fill"] = "SOLID"
        plan.add(APPROXIMATED, f"{shape.title()} shape: ours fills the mesh itself (Fill Solid)")
    margin = rb.collision_margin if rb.use_margin or shape in ("CONVEX_HULL", "MESH") else 0.04
    plan.add(NOT_MAPPED, f"Collision Margin {margin:g} m: contacts are at the particles' surface")
    # Bullet's damping keeps (1 - d)^dt of the velocity per second: a rate of -ln(1 - d) per second.
    plan.damping_rate = -math.log(max(1.0 - float(rb.linear_damping), 1e-9))
    plan.add(
        APPROXIMATED,
        f"Damping Translation {rb.linear_damping:g} -> scene Damping {plan.damping_rate:.3g}/s (-ln(1 - d)); "
        f"Rotation {rb.angular_damping:g} not mapped",
    )
    if rb.use_deactivation:
        plan.add(NOT_MAPPED, "Deactivation: ours sleeps with the scene's Rigid Sleep Threshold")


def _plan_soft(plan: Plan, sb: Any) -> None:
    """Blender's Soft Body as ours: mass, goal group as pins, edge springs as stiffness, plasticity."""
    obj = plan.obj
    plan.role, plan.switch_off = "SOFT", "SOFT_BODY"
    count = len(mesh_of(obj).vertices)
    plan.settings.update(mass_mode="MASS", mass=max(float(sb.mass) * count, 1e-6))
    plan.add(
        MAPPED,
        f"Soft Body -> Soft Body; Mass {sb.mass:g} kg a vertex x {count} -> {plan.settings['mass']:.3g} kg",
    )
    if sb.use_goal and sb.vertex_group_goal:
        plan.settings["pin_group"] = str(sb.vertex_group_goal)
        plan.add(
            APPROXIMATED,
            f"Goal group {sb.vertex_group_goal!r} -> Pin Group: vertices of weight above 0.5 are held "
            f"exactly (Blender's goal springs, stiffness {sb.goal_spring:g}, are not)",
        )
    elif sb.use_goal:
        plan.add(NOT_MAPPED, f"Goal without a vertex group (Default {sb.goal_default:g}): nothing is pinned")
    if sb.use_edges:
        pull = max(float(sb.pull), float(sb.push))
        hz = SOFT_HZ_MIN + (SOFT_HZ_MAX - SOFT_HZ_MIN) * min(max(pull, 0.0), 1.0)
        plan.settings["soft_stiffness"] = hz
        plan.add(APPROXIMATED, f"Edges Pull {sb.pull:g} / Push {sb.push:g} -> Stiffness {hz:.3g} Hz")
        if sb.plastic > 0:
            plan.settings.update(plastic_yield=0.05, plastic_creep=float(sb.plastic))
            plan.add(APPROXIMATED, f"Plasticity {sb.plastic} -> Plastic Yield 0.05, Creep {sb.plastic} /s")
        plan.add(NOT_MAPPED, f"Bending {sb.bend:g}, Damping {sb.damping:g}: the clusters set both")
    else:
        plan.add(
            NOT_MAPPED, "no Edges: Blender's soft body is goal springs only; ours gets the default Stiffness"
        )
    plan.add(
        NOT_MAPPED,
        "Self Collision, Aero, Ball size: our soft body collides with itself through its particles",
    )


def plan_object(obj: bpy.types.Object, scene: bpy.types.Scene) -> Plan:
    """What Convert makes of ``obj`` (nothing is changed)."""
    plan = Plan(obj)
    cloth = next((m for m in obj.modifiers if m.type == "CLOTH"), None)
    soft = next((m for m in obj.modifiers if m.type == "SOFT_BODY"), None)
    mesh = obj.type == "MESH"
    if cloth is not None and mesh:
        _plan_cloth(plan, cloth, scene)
    elif obj.rigid_body is not None and mesh:
        _plan_rigid(plan, scene)
    elif obj.rigid_body is not None or cloth is not None:
        plan.add(NOT_MAPPED, f"a {obj.type.lower()} object: only meshes can be simulated")
    if soft is not None and mesh and not plan.role:
        _plan_soft(plan, obj.soft_body)
    elif soft is not None:
        plan.add(NOT_MAPPED, "Soft Body (as well as another role or not a mesh): Blender's stays on")
    if obj.collision is not None and any(m.type == "COLLISION" for m in obj.modifiers):
        c = obj.collision
        if not plan.role and mesh and obj.collision.use:
            plan.role = "COLLIDER"
            plan.settings["friction"] = CLOTH_FRICTION_PERCENT * float(c.cloth_friction)
            plan.add(
                MAPPED,
                f"Collision -> Collider; Friction {c.cloth_friction:g} -> "
                f"{plan.settings['friction']:.3g} (/100)",
            )
        elif plan.role:
            plan.add(NOT_MAPPED, f"Collision (as well as {plan.role.title()}): its settings are not used")
        plan.add(NOT_MAPPED, f"Thickness Outer {c.thickness_outer:g} m: contacts are at the Particle Radius")
        plan.add(
            NOT_MAPPED, f"Damping {c.damping:g}: Blender's cloth does not bounce either (soft bodies do)"
        )
    if obj.field is not None and obj.field.type != "NONE":
        kind = obj.field.type
        if kind in KINDS:
            plan.add(
                MAPPED,
                f"{kind.title()} field: read every frame by the simulation (strength {obj.field.strength:g}, "
                f"flow {obj.field.flow:g}, {obj.field.falloff_type.lower()} falloff); strength units as in "
                "docs/physics.md, Force fields",
            )
        else:
            plan.add(NOT_MAPPED, f"{kind.title()} field: not a field type the simulation has")
    if obj.rigid_body_constraint is not None:
        plan.add(NOT_MAPPED, f"{obj.rigid_body_constraint.type.title()} constraint: left in place for joints")
    return plan


def _scene_lines(scene: bpy.types.Scene, plans: list[Plan]) -> tuple[list[Line], dict[str, float]]:
    """Scene-wide settings: gravity, the rigid body world, frame range, restitution, damping."""
    lines = [
        Line(
            "Scene",
            MAPPED,
            f"Gravity {tuple(round(float(g), 3) for g in scene.gravity[:])}: the same setting",
        )
    ]
    values: dict[str, float] = {}
    world = _untyped(scene.rigidbody_world)
    if world is not None and any(p.switch_off == "RIGID_BODY" for p in plans):
        if abs(world.time_scale - 1.0) > 1e-6:
            values["time_scale"] = min(max(float(world.time_scale), 0.01), 100.0)
            lines.append(Line("Scene", MAPPED, f"rigid body Speed {world.time_scale:g}: the scene's Speed"))
        lines.append(
            Line(
                "Scene",
                NOT_MAPPED,
                f"Bullet's {world.substeps_per_frame} substeps x {world.solver_iterations} iterations: "
                "ours are the scene's Substeps and Iterations",
            )
        )
        cache = world.point_cache
        if (cache.frame_start, cache.frame_end) != (scene.frame_start, scene.frame_end):
            lines.append(
                Line(
                    "Scene",
                    APPROXIMATED,
                    f"Bullet's cache frames {cache.frame_start}-{cache.frame_end}: ours simulates the "
                    f"scene's {scene.frame_start}-{scene.frame_end}",
                )
            )
        if abs(world.effector_weights.gravity - 1.0) > 1e-6:
            lines.append(
                Line("Scene", NOT_MAPPED, f"rigid body Gravity weight {world.effector_weights.gravity:g}")
            )
    bounce = sorted((p.restitution for p in plans if p.restitution is not None), reverse=True)
    if len(bounce) >= 2:
        # Bullet's contact bounciness is the product of the two sides'; ours is one value for the scene.
        values["restitution"] = min(bounce[0] * bounce[1], 1.0)
        lines.append(
            Line(
                "Scene",
                APPROXIMATED,
                f"Restitution {values['restitution']:.3g}: the two bounciest bodies' product",
            )
        )
    rates = [p.damping_rate for p in plans if p.role == "RIGID"]  # cloth: its own Air Viscosity
    if rates:
        values["damping"] = float(min(max(rates), 100.0))
        lines.append(Line("Scene", APPROXIMATED, f"Damping {values['damping']:.3g}/s: the largest body's"))
    return lines, values


def _make(context: bpy.types.Context, role: str, obj: bpy.types.Object) -> str | None:
    """Run the Make operator of ``role`` on ``obj`` alone, as a click would; why it refused, or None."""
    operator = getattr(_untyped(bpy.ops).unified_particles, MAKE_OPERATORS[role])
    with context.temp_override(selected_objects=[obj], active_object=obj, object=obj):
        try:
            result = operator(report_cost=False)
        except RuntimeError as exc:  # the operator reported an error
            return str(exc).replace("Error: ", "").strip()
    return None if "FINISHED" in result else f"Make {role.title()} did not finish"


def _apply(plan: Plan) -> None:
    obj = plan.obj
    settings = object_settings(obj)
    for name, value in plan.settings.items():
        setattr(settings, name, value)
    for frame, on in plan.animated_keys:
        settings.animated = on
        obj.keyframe_insert(ANIMATED_PATH, frame=frame)
    if plan.animated_keys:  # the value at the current frame, until the next frame change evaluates the keys
        settings.animated = bool(plan.settings["animated"])
    if plan.switch_off in ("CLOTH", "SOFT_BODY"):
        for mod in obj.modifiers:
            if mod.type == plan.switch_off:
                mod.show_viewport = mod.show_render = False
        what = "Cloth" if plan.switch_off == "CLOTH" else "Soft Body"
        plan.add(MAPPED, f"Blender's {what} modifier hidden (viewport and render; its settings kept)")
    elif plan.switch_off == "RIGID_BODY" and obj.rigid_body is not None:
        # Keys on Animated or Dynamic would hand the body back to Bullet: muted (kept), our Animated has them.
        muted = [c for c in fcurves(obj) if c.data_path in BULLET_SWITCHES and not c.mute]
        for curve in muted:
            curve.mute = True
        obj.rigid_body.kinematic = True  # Bullet now follows the object instead of moving it
        keys = f"; its keys on {', '.join(sorted({c.data_path for c in muted}))} muted" if muted else ""
        plan.add(MAPPED, f"Blender's rigid body set to Animated (Bullet follows ours; settings kept{keys})")


def write_text(lines: list[Line], summary: str) -> bpy.types.Text:
    """The full report in the text datablock TEXT_NAME (replaced on every conversion)."""
    text = bpy.data.texts.get(TEXT_NAME) or bpy.data.texts.new(TEXT_NAME)
    text.clear()
    text.write(summary + "\n\n" + "\n".join(str(line) for line in lines) + "\n")
    return text


class UNIFIED_PARTICLES_OT_convert_blender_physics(bpy.types.Operator):
    """Simulate objects set up for Blender's physics with the same settings, and switch Blender's off"""

    bl_idname = "unified_particles.convert_blender_physics"
    bl_label = "Convert Blender Physics"
    bl_options = {"REGISTER", "UNDO"}

    scope: EnumProperty(  # type: ignore[valid-type]
        name="Objects",
        description="Which objects to convert",
        items=[
            ("SELECTED", "Selected", "The selected objects"),
            ("SCENE", "Whole Scene", "Every object of the view layer with Blender physics"),
        ],
        default="SELECTED",
    )

    @classmethod
    def poll(cls, context: bpy.types.Context) -> bool:
        if context.scene is None or context.mode != "OBJECT":
            cls.poll_message_set("Switch to Object Mode first")  # type: ignore[attr-defined]
            return False
        return True

    def execute(self, context: bpy.types.Context) -> OperatorResult:
        scene = context_scene(context)
        pool = context.selected_objects if self.scope == "SELECTED" else _untyped(context.view_layer).objects
        objects = sorted((o for o in pool if has_blender_physics(o)), key=lambda o: o.name)
        if not objects:
            where = "selected" if self.scope == "SELECTED" else "in the scene"
            self.report(
                {"ERROR"}, f"No object {where} has Blender physics (Cloth, Rigid Body, Collision, fields)"
            )
            return {"CANCELLED"}
        plans = [plan_object(obj, scene) for obj in objects]
        # Colliders first, so the bodies' Make checks see the scene they will be in.
        order = {"COLLIDER": 0, "RIGID": 1, "CLOTH": 2, "SOFT": 2}
        made = 0
        for plan in sorted(plans, key=lambda p: order.get(p.role, 3)):
            if not plan.role:
                continue
            problem = _make(context, plan.role, plan.obj)
            if problem:
                plan.add(
                    NOT_MAPPED, f"could not be made {plan.role.title()}: {problem}; Blender's physics left on"
                )
                continue
            _apply(plan)
            made += 1
        scene_lines, values = _scene_lines(scene, [p for p in plans if p.role])
        for name, value in values.items():
            setattr(scene_settings(scene), name, value)
        lines = [line for plan in plans for line in plan.lines] + scene_lines
        simulated = scene_reader.simulated_objects(scene)
        estimate = cost.estimate(scene, simulated, context.evaluated_depsgraph_get())
        approx = sum(line.status == APPROXIMATED for line in lines)
        missed = sum(line.status == NOT_MAPPED for line in lines)
        summary = (
            f"Converted {made} of {len(objects)} objects ({approx} settings approximated, {missed} not "
            f"mapped: see the text {TEXT_NAME!r}). Scene: {estimate.summary()}"
        )
        write_text(lines, summary)
        self.report({"INFO"}, summary)
        shown = [line for line in lines if line.status != MAPPED]
        for line in shown[:MAX_REPORT_LINES]:
            self.report({"INFO"}, str(line))
        return {"FINISHED"}


def menu_func(self: Any, context: bpy.types.Context) -> None:
    """Object menu entry."""
    self.layout.separator()
    self.layout.operator(UNIFIED_PARTICLES_OT_convert_blender_physics.bl_idname, icon="PHYSICS")


classes: tuple[type, ...] = (UNIFIED_PARTICLES_OT_convert_blender_physics,)


def register() -> None:
    register_classes(classes)
    bpy.types.VIEW3D_MT_object.append(menu_func)


def unregister() -> None:
    bpy.types.VIEW3D_MT_object.remove(menu_func)
    unregister_classes(classes)
