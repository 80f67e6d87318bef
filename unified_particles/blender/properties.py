# SPDX-License-Identifier: GPL-3.0-or-later
"""Settings saved in the .blend: one PropertyGroup on Scene, one on Object.

``scene.unified_particles`` holds the particle radius, the solver settings (generated from their
declaration in ``core/settings.py`` by :mod:`.settings_ui`), the cache folder and memory cap, and
the live state flags; ``object.unified_particles`` holds the role of an object and the settings of
that role. Gravity is the scene's own (``scene.gravity``, ``scene.use_gravity``). The bake's groups
are in ``bake/properties.py``.

Changing a setting invalidates the live simulation's cache from the current frame on (update
callbacks below); role changes invalidate it from the start. The liquid surface settings of a fluid
only update its particle object's modifier (``fluids.apply_surface``). A base module: imports ``rna``,
``runtime``, ``settings_ui`` and ``fluids`` only.
"""

from __future__ import annotations

from typing import Any

import bpy
from bpy.props import (
    BoolProperty,
    EnumProperty,
    FloatProperty,
    FloatVectorProperty,
    IntProperty,
    PointerProperty,
    StringProperty,
)

from . import fluids, runtime
from .rna import register_classes, unregister_classes
from .settings_ui import panel_setting_names, solver_property
from .sizes import SIZE_MODES

ROLES = [
    ("NONE", "None", "Not simulated"),
    ("RIGID", "Rigid", "Rigid body made of particles"),
    ("CLOTH", "Cloth", "Cloth: one particle per vertex"),
    ("GRANULAR", "Granular", "Sand, gravel, snow: free particles with friction"),
    ("COLLIDER", "Collider", "Static or animated obstacle"),
    ("FLUID", "Fluid", "Liquid filling the mesh's volume (blender/fluids.py)"),
    ("INFLOW", "Inflow", "Pours liquid from its volume every frame between its start and end frames"),
    ("OUTFLOW", "Outflow", "Liquid inside it is removed every frame"),
    ("ROPE", "Rope", "Rope or chain along a curve or an edge-only mesh: particles one diameter apart"),
    # New roles go last: a file stores an enum by its position, so one inserted before would turn an
    # older file's Granular into it.
    ("SOFT", "Soft Body", "Jelly, rubber, flesh: particles inside the mesh held by overlapping clusters"),
    ("HAIR", "Hair", "Hair on a Curves object: every point a particle, roots riding on its surface mesh"),
]

FLOW_AXES = [
    ("NEG_Z", "-Z", "Along the object's local -Z axis: straight down for an unrotated object (a tap)"),
    ("POS_Z", "+Z", "Along the object's local +Z axis (a fountain)"),
    ("NEG_X", "-X", "Along the object's local -X axis"),
    ("POS_X", "+X", "Along the object's local +X axis"),
    ("NEG_Y", "-Y", "Along the object's local -Y axis"),
    ("POS_Y", "+Y", "Along the object's local +Y axis"),
]

FLUID_SURFACES = [
    ("MESH", "Mesh", "A smooth liquid surface around the particles (Points to Volume, Volume to Mesh)"),
    ("SPHERES", "Spheres", "One sphere per particle"),
]

# Bullet clamps a contact's friction at 10 (btManifoldResult.cpp, MAX_FRICTION); Blender lets a rigid body's
# Friction go that high (5 is common for dominoes that must not slide). The core takes any value >= 0.
MAX_FRICTION = 10.0

BENDING_MODELS = [
    (
        "RIGIDITY",
        "Rigidity",
        "A physical bending rigidity (uN m, isometric bending): the fabric drapes alike at any resolution",
    ),
    (
        "STIFFNESS",
        "Stiffness (Legacy)",
        "The Bend Stiffness factor of earlier versions (kept for their files): distance constraints across "
        "edges, which follow the mesh and the solver budget rather than the material",
    ),
]

COLLIDER_SHAPES = [
    ("MESH", "Mesh", "The evaluated mesh as a signed distance volume; follows the object's animation"),
    (
        "PLANE",
        "Infinite Plane",
        "A flat mesh's plane, static and unbounded, where the mesh is (its start pose), holding bodies on "
        "the side they start on. Where bodies could fall past the mesh's edge, the mesh is used instead",
    ),
]


def _invalidate(self: Any, context: bpy.types.Context) -> None:
    """Update callback of every simulation setting: re-simulate from the current frame on."""
    scene = context.scene if context is not None else None
    if scene is None:
        return
    runtime.invalidate(scene, scene.frame_current)


def _invalidate_all(self: Any, context: bpy.types.Context) -> None:
    """Update callback of settings that change which particles exist: rebuild from the start."""
    scene = context.scene if context is not None else None
    if scene is None:
        return
    runtime.invalidate(scene, None)


def _is_rigid(self: Any, obj: bpy.types.Object) -> bool:
    """Poll of Tie Start / Tie End: objects with the Rigid role."""
    return bool(obj.unified_particles.role == "RIGID")  # type: ignore[attr-defined]


def _update_surface(self: Any, context: bpy.types.Context) -> None:
    """Update callback of the liquid surface settings: only the particle object's modifier changes (they
    do not change the motion, so nothing re-simulates)."""
    source = self.id_data
    if isinstance(source, bpy.types.Object) and self.role in fluids.FLUID_ROLES:
        fluids.apply_surface(source)


def _update_smooth(self: Any, context: bpy.types.Context) -> None:
    """Update callback of Smooth Surface: the points written change (re-simulate from the current frame,
    which writes them) and so does the surface's offset (the modifier)."""
    _invalidate(self, context)
    _update_surface(self, context)


_BLEND_RELATIVE_PATH = {"PATH_SUPPORTS_BLEND_RELATIVE"} if bpy.app.version >= (4, 5, 0) else set()


class UNIFIED_PARTICLES_PG_scene(bpy.types.PropertyGroup):
    particle_radius: FloatProperty(  # type: ignore[valid-type]
        name="Particle Radius",
        description="Radius of every simulated particle; rigid and granular objects are filled with "
        "particles this size and cloth collides at this distance",
        default=0.05,
        min=1e-4,
        max=10.0,
        soft_min=0.005,
        soft_max=0.5,
        unit="LENGTH",
        subtype="DISTANCE",
        update=_invalidate_all,
    )
    # Blender's rigid body world Speed (time_scale): Bullet steps Speed / fps seconds per frame.
    time_scale: FloatProperty(  # type: ignore[valid-type]
        name="Speed",
        description="Simulated seconds per second of animation, as Blender's rigid body world Speed: each "
        "frame simulates Speed / frame rate seconds (2: the motion plays twice as fast)",
        default=1.0,
        min=0.01,
        max=100.0,
        soft_max=10.0,
        update=_invalidate_all,
    )
    cache_directory: StringProperty(  # type: ignore[valid-type]
        name="Cache Folder",
        description="Folder for bake caches, relative to the .blend file",
        default="//unified_particles_cache/",
        subtype="DIR_PATH",
        # Without this flag Blender 4.5+ warns that "//" (relative to the .blend) is not supported;
        # 4.2-4.4 do not know the flag and accept "//" anyway.
        options=_BLEND_RELATIVE_PATH,
    )
    cache_memory_limit: IntProperty(  # type: ignore[valid-type]
        name="Memory Limit",
        description="Memory the live frame cache may use (MiB); above it, frames in between are dropped "
        "and re-simulated from the nearest kept frame when shown again",
        default=1024,
        min=16,
        max=1 << 20,
        soft_max=16384,
    )
    # Set by the bake module: when True the live simulation does nothing (baked data animates itself).
    is_baked: BoolProperty(  # type: ignore[valid-type]
        name="Baked", description="The simulation is baked; live simulation is off", default=False
    )
    last_error: StringProperty(  # type: ignore[valid-type]
        name="Last Error", description="Last error of the live simulation", default=""
    )


class UNIFIED_PARTICLES_PG_object(bpy.types.PropertyGroup):
    role: EnumProperty(  # type: ignore[valid-type]
        name="Role",
        description="How this object takes part in the simulation (set with the Make buttons)",
        items=ROLES,
        default="NONE",
        update=_invalidate_all,
    )
    density: FloatProperty(  # type: ignore[valid-type]
        name="Density",
        description="Mass per volume of the material, kg/m^3 (water: 1000)",
        default=1000.0,
        min=1.0,
        max=1e5,
        soft_max=20000.0,
        update=_invalidate,
    )
    # Blender's meaning of mass (Bullet's Mass, the cloth's vertex Mass x vertices): the body's total mass.
    mass_mode: EnumProperty(  # type: ignore[valid-type]
        name="Mass From",
        description="Whether the body's mass follows from its Density (or cloth Mass per Area) or is set "
        "directly in kg, as Blender's rigid body Mass",
        items=[
            (
                "DENSITY",
                "Density",
                "Mass = density x the volume the particles fill (cloth: mass per area x area)",
            ),
            ("MASS", "Mass", "The whole body weighs Mass (kg), whatever its size"),
        ],
        default="DENSITY",
        update=_invalidate,
    )
    mass: FloatProperty(  # type: ignore[valid-type]
        name="Mass",
        description="Total mass of the body, kg (used when Mass From is Mass)",
        default=1.0,
        min=1e-6,
        max=1e9,
        soft_max=1000.0,
        unit="MASS",
        update=_invalidate,
    )
    area_density: FloatProperty(  # type: ignore[valid-type]
        name="Mass per Area",
        description="Mass per square metre of cloth, kg/m^2 (cotton shirt: about 0.15)",
        default=0.15,
        min=1e-4,
        max=100.0,
        soft_max=5.0,
        update=_invalidate,
    )
    friction: FloatProperty(  # type: ignore[valid-type]
        name="Friction",
        description="Coulomb friction coefficient of the surface (contacts use the mean of both sides); "
        "up to 10, as Bullet allows",
        default=0.5,
        min=0.0,
        max=MAX_FRICTION,
        soft_max=1.0,
        update=_invalidate,
    )
    # Blender's collision shape "Mesh" is hollow in Bullet: a body nested inside it has room.
    fill: EnumProperty(  # type: ignore[valid-type]
        name="Fill",
        description="Which part of the mesh a rigid body's particles fill",
        items=[
            ("SOLID", "Solid", "Particles fill the whole inside of the mesh; it weighs density x its volume"),
            (
                "SHELL",
                "Shell",
                "Particles only in one layer under the surface (hollow, like Blender's Mesh shape): bodies "
                "placed inside it have room; it weighs density x its walls' volume",
            ),
        ],
        default="SOLID",
        update=_invalidate,
    )
    stretch_stiffness: FloatProperty(  # type: ignore[valid-type]
        name="Stretch Stiffness",
        description="Resistance to stretching and shearing: 0 very soft, 1 inextensible (log scale)",
        default=1.0,
        min=0.0,
        max=1.0,
        subtype="FACTOR",
        update=_invalidate,
    )
    bending_model: EnumProperty(  # type: ignore[valid-type]
        name="Bending",
        description="How the cloth resists bending",
        items=BENDING_MODELS,
        default="RIGIDITY",
        update=_invalidate,
    )
    bending_rigidity: FloatProperty(  # type: ignore[valid-type]
        name="Bending Rigidity",
        description=(
            "Bending rigidity B of the fabric, micro newton metres (uN m: moment per metre of width per unit "
            "curvature; a KES-F B of 1 gf cm^2/cm is 98 uN m). Silk about 3, cotton 15, denim 100, leather "
            "500. A material constant: the same fabric drapes alike at any mesh resolution"
        ),
        default=15.0,
        min=0.0,
        max=1e7,
        soft_max=2000.0,
        precision=1,
        update=_invalidate,
    )
    bend_stiffness: FloatProperty(  # type: ignore[valid-type]
        name="Bend Stiffness",
        description=(
            "Legacy bending (Bending: Stiffness, files made before Bending Rigidity): 0 very soft, 1 stiff "
            "as a board (log scale); follows the mesh resolution and the solver budget, not the material"
        ),
        default=2.0 / 7.0,
        min=0.0,
        max=1.0,
        subtype="FACTOR",
        update=_invalidate,
    )
    tear_strain: FloatProperty(  # type: ignore[valid-type]
        name="Tear Strain",
        description=(
            "Stretch at which the cloth tears, as a fraction of the rest length (0.2: an edge stretched 20% "
            "breaks and the mesh splits there); 0 never tears. A tearing cloth's mesh is split into "
            "triangles with their own vertices when simulated, so its bake replays the pieces without the "
            "add-on"
        ),
        default=0.0,
        min=0.0,
        soft_max=2.0,
        precision=3,
        subtype="FACTOR",
        update=_invalidate,
    )
    tear_group: StringProperty(  # type: ignore[valid-type]
        name="Tear Group",
        description="Vertex group where the cloth may tear (weight above 0.5); empty: anywhere",
        default="",
        update=_invalidate,
    )
    pin_group: StringProperty(  # type: ignore[valid-type]
        name="Pin Group",
        description="Vertex group whose vertices (weight above 0.5) stay where they are",
        default="",
        update=_invalidate,
    )
    pin_stiffness: FloatProperty(  # type: ignore[valid-type]
        name="Pin Stiffness",
        description=(
            "1: the Pin Group's vertices are held exactly. Below 1: every vertex of the group is held by a "
            "spring to where its object puts it, stiffer with its weight (a soft pin)"
        ),
        default=1.0,
        min=0.0,
        max=1.0,
        subtype="FACTOR",
        update=_invalidate,
    )
    pin_full_weight: BoolProperty(  # type: ignore[valid-type]
        name="Weight 1 Pins Hard",
        description="With Pin Stiffness below 1: vertices of weight 1 stay held exactly and only lower "
        "weights are springs, as Blender's cloth pins them (Convert Blender Physics turns it on)",
        default=False,
        update=_invalidate,
    )
    soft_stiffness: FloatProperty(  # type: ignore[valid-type]
        name="Stiffness",
        description="Soft body: how fast its clusters spring back, Hz (Jelly 20, Rubber 60); a 12 cm block "
        "wobbles at 0.75 times it, and a beam's sag falls 4 times per doubling up to about 60 Hz at the "
        "default budget",
        default=20.0,
        min=0.5,
        max=1000.0,
        update=_invalidate,
    )
    plastic_yield: FloatProperty(  # type: ignore[valid-type]
        name="Plastic Yield",
        description="Soft body: strain above which it keeps its deformation (a dent stays); 0 is elastic",
        default=0.0,
        min=0.0,
        max=1.0,
        subtype="FACTOR",
        update=_invalidate,
    )
    plastic_creep: FloatProperty(  # type: ignore[valid-type]
        name="Plastic Creep",
        description="Soft body: how fast a deformation past the yield becomes its new shape, 1/s",
        default=50.0,
        min=0.0,
        max=1000.0,
        update=_invalidate,
    )
    use_pressure: BoolProperty(  # type: ignore[valid-type]
        name="Pressure",
        description="Cloth: a balloon; the closed mesh is held at its volume times Inflation",
        default=False,
        update=_invalidate,
    )
    inflation: FloatProperty(  # type: ignore[valid-type]
        name="Inflation",
        description="Balloon: its volume over the mesh's (1 keeps it; below 1 it sags, above 1 a stretchy "
        "skin swells); keyframe it to inflate or deflate it over a shot",
        default=1.0,
        min=0.05,
        max=10.0,
        update=_invalidate,
    )
    glue_strength: FloatProperty(  # type: ignore[valid-type]
        name="Glue Strength",
        description="Rigid bodies touching at the start are glued where both have a Glue Strength > 0: a "
        "seam breaks when pulled with more than the weaker side's strength times its area (Pa: mortar 1e5 "
        "to 1e6). 0: not glued",
        default=0.0,
        min=0.0,
        max=1e9,
        soft_max=1e7,
        update=_invalidate,
    )
    rope_pins: EnumProperty(  # type: ignore[valid-type]
        name="Rope Pins",
        description="Ends of a rope held in place; they follow the object as it moves (keyframes, parents)",
        items=[
            ("NONE", "None", "The rope is free"),
            ("START", "Start", "The curve's first point is pinned"),
            ("END", "End", "The curve's last point is pinned"),
            ("BOTH", "Both", "Both ends are pinned (a rope bridge, a washing line)"),
        ],
        default="NONE",
        update=_invalidate,
    )
    # Rope ties: an end held at the point of a rigid body where it lies at the start (core rope_ties.py).
    rope_tie_start: PointerProperty(  # type: ignore[valid-type]
        name="Tie Start",
        description="Rigid body the rope's first point is tied to, at the point of the body where it lies "
        "at the start frame (a rope pulling a crate); may combine with a pin at the other end",
        type=bpy.types.Object,
        poll=_is_rigid,
        update=_invalidate_all,
    )
    rope_tie_end: PointerProperty(  # type: ignore[valid-type]
        name="Tie End",
        description="Rigid body the rope's last point is tied to, at the point of the body where it lies "
        "at the start frame; may combine with a pin at the other end",
        type=bpy.types.Object,
        poll=_is_rigid,
        update=_invalidate_all,
    )
    hair_stiffness: FloatProperty(  # type: ignore[valid-type]
        name="Hair Stiffness",
        description=(
            "How hair holds its combed shape against bending: 0 hangs like a chain, 1 nearly rigid strands "
            "(log scale)"
        ),
        default=0.5,
        min=0.0,
        max=1.0,
        subtype="FACTOR",
        update=_invalidate,
    )
    hair_damping: FloatProperty(  # type: ignore[valid-type]
        name="Hair Damping",
        description="How fast the hair's own motion dies out, 1/s: speeds decay as exp(-damping * time)",
        default=2.0,
        min=0.0,
        soft_max=20.0,
        update=_invalidate,
    )
    air_viscosity: FloatProperty(  # type: ignore[valid-type]
        name="Air Viscosity",
        description=(
            "How thick the air is that slows the cloth (drag and lift on every triangle, relative to the "
            "wind of Wind fields, which blow it as moving air): 1 is air at sea level (Blender's cloth "
            "default), 0 a vacuum, 2 twice as "
            "dense. A sheet of paper falls slower than one of steel, a flag settles"
        ),
        default=1.0,
        min=0.0,
        max=1000.0,
        soft_max=10.0,
        update=_invalidate,
    )
    self_collision: BoolProperty(  # type: ignore[valid-type]
        name="Self Collision",
        description="Let the cloth collide with itself (slower)",
        default=False,
        update=_invalidate,
    )
    cohesion: FloatProperty(  # type: ignore[valid-type]
        name="Cohesion",
        description="How much grains stick together: 0 dry, 1 very sticky",
        default=0.0,
        min=0.0,
        max=1.0,
        subtype="FACTOR",
        update=_invalidate,
    )
    # Grains' sliding friction and rolling resistance (core add_granular's kinetic_friction and
    # rolling_friction; docs/physics.md, "column collapse"): the granular presets set both.
    kinetic_friction: FloatProperty(  # type: ignore[valid-type]
        name="Sliding Friction",
        description=(
            "Kinetic (sliding) friction coefficient between grains; sticking grains hold by Friction. Grains "
            "do not spin, so this stands in for their rolling: lower lets flowing sand run out further. "
            "At most Friction (higher values act as Friction)"
        ),
        default=0.5,
        min=0.0,
        max=2.0,
        soft_max=1.0,
        update=_invalidate,
    )
    rolling_friction: FloatProperty(  # type: ignore[valid-type]
        name="Rolling Resistance",
        description=(
            "Rolling resistance coefficient between touching grains (stands in for their angular shape): "
            "higher makes piles steeper. 0: round grains"
        ),
        default=0.0,
        min=0.0,
        max=5.0,
        soft_max=2.0,
        update=_invalidate,
    )
    # Each object's particle size (issue 22; blender/sizes.py): the scene's, its own, or fitted to it.
    size_mode: EnumProperty(  # type: ignore[valid-type]
        name="Particle Size",
        description="Size of this object's particles (a cloth: its Thickness, the distance it collides at)",
        items=SIZE_MODES,
        default="SCENE",
        update=_invalidate_all,
    )
    particle_size: FloatProperty(  # type: ignore[valid-type]
        name="Size",
        description="Radius of this object's particles (a cloth: its Thickness), used when Particle Size is "
        "Value; contacts are at the sum of the two particles' radii",
        default=0.05,
        min=1e-4,
        max=10.0,
        soft_min=0.002,
        soft_max=0.5,
        unit="LENGTH",
        subtype="DISTANCE",
        update=_invalidate_all,
    )
    size_spread: FloatProperty(  # type: ignore[valid-type]
        name="Size Spread",
        description="Grains' radii vary by up to this fraction either way (uniform, seeded: the same grains "
        "every time); the fill leaves room for the largest, so the grains are (1 + spread)^3 times fewer",
        default=0.0,
        min=0.0,
        max=0.9,
        subtype="FACTOR",
        update=_invalidate_all,
    )
    collider_shape: EnumProperty(  # type: ignore[valid-type]
        name="Shape", items=COLLIDER_SHAPES, default="MESH", update=_invalidate_all
    )
    # Thrown and animated bodies (docs/user_guide.md, "Animated shots").
    initial_velocity: FloatVectorProperty(  # type: ignore[valid-type]
        name="Initial Velocity",
        description="Velocity at the start frame, world axes, m/s (rigid: of its centre of mass; cloth: of "
        "every vertex not pinned; granular: of every grain)",
        size=3,
        default=(0.0, 0.0, 0.0),
        subtype="VELOCITY",
        unit="VELOCITY",
        update=_invalidate_all,  # the start state changes: every frame after it
    )
    animated: BoolProperty(  # type: ignore[valid-type]
        name="Animated",
        description="Rigid: while on (keyframe it), the body follows its own animation (keyframes, parent, "
        "constraints) with infinite mass and pushes the others; when it turns off, it flies on with the "
        "velocity the animation had",
        default=False,
        update=_invalidate,
    )
    # Force fields (blender/fields.py): Blender's effector weight "All" for this object.
    field_weight: FloatProperty(  # type: ignore[valid-type]
        name="Field Weight",
        description="How strongly force field objects (Wind, Force, Vortex, Turbulence, Drag) act on this "
        "object: 0 not at all, 1 fully",
        default=1.0,
        min=0.0,
        max=100.0,
        soft_max=2.0,
        update=_invalidate,
    )
    # Fluid and Inflow (blender/fluids.py): the liquid's material, per object.
    viscosity: FloatProperty(  # type: ignore[valid-type]
        name="Viscosity",
        description="How thick the liquid is: XSPH viscosity per small step, taken implicitly so every "
        "value up to 1 is thicker than the one below (dimensionless, water 0.01, honey 1.0)",
        default=0.01,
        min=0.0,
        max=1.0,
        subtype="FACTOR",
        update=_invalidate,
    )
    fluid_cohesion: FloatProperty(  # type: ignore[valid-type]
        name="Cohesion",
        description="Surface tension: how strongly the liquid holds together in drops and thin streams "
        "(dimensionless, 0-1; water 0.02, slime 0.4)",
        default=0.02,
        min=0.0,
        max=1.0,
        subtype="FACTOR",
        update=_invalidate,
    )
    adhesion: FloatProperty(  # type: ignore[valid-type]
        name="Adhesion",
        description="How much the liquid sticks to solids (dimensionless, 0-1)",
        default=0.0,
        min=0.0,
        max=1.0,
        subtype="FACTOR",
        update=_invalidate,
    )
    vorticity: FloatProperty(  # type: ignore[valid-type]
        name="Vorticity",
        description="Vorticity confinement: keeps swirls alive that the solver would damp "
        "(dimensionless, 0-1)",
        default=0.1,
        min=0.0,
        max=1.0,
        subtype="FACTOR",
        update=_invalidate,
    )
    # Inflow: where, how fast and when it pours.
    flow_velocity: FloatProperty(  # type: ignore[valid-type]
        name="Flow Velocity",
        description="Speed of the liquid leaving the inflow along its Flow Axis, m/s; keyframe it to change "
        "the pour over time",
        default=1.0,
        min=0.001,
        max=1000.0,
        soft_max=20.0,
        unit="VELOCITY",
        update=_invalidate_all,  # changes how many particles are reserved
    )
    flow_axis: EnumProperty(  # type: ignore[valid-type]
        name="Flow Axis",
        description="Direction the inflow pours in, in the object's local axes (it turns with the object)",
        items=FLOW_AXES,
        default="NEG_Z",
        update=_invalidate_all,
    )
    flow_start: IntProperty(  # type: ignore[valid-type]
        name="Start Frame",
        description="First frame the inflow pours in (the scene's start frame shows no poured liquid yet)",
        default=1,
        update=_invalidate_all,
    )
    flow_end: IntProperty(  # type: ignore[valid-type]
        name="End Frame",
        description="Last frame the inflow pours in",
        default=250,
        update=_invalidate_all,
    )
    # Fluid and Inflow: how the particle object draws and renders (no effect on the motion).
    fluid_surface: EnumProperty(  # type: ignore[valid-type]
        name="Surface",
        description="How the liquid renders",
        items=FLUID_SURFACES,
        default="MESH",
        update=_update_surface,
    )
    surface_resolution: FloatProperty(  # type: ignore[valid-type]
        name="Resolution",
        description="Voxels per particle diameter of the liquid surface: higher is finer and slower",
        default=4.0,
        min=1.0,
        max=16.0,
        update=_update_surface,
    )
    surface_smoothing: IntProperty(  # type: ignore[valid-type]
        name="Smoothing",
        description="Smoothing passes over the liquid surface (0: none)",
        default=3,
        min=0,
        max=50,
        update=_update_surface,
    )
    surface_smooth: BoolProperty(  # type: ignore[valid-type]
        name="Smooth Surface",
        description="Mesh the liquid around smoothed particle centres (Yu and Turk 2013): still water "
        "renders flat and the particles' lumps are gone; the centres are written into the particle "
        "object (and its bake), so the surface needs no add-on to replay",
        default=True,
        update=_update_smooth,
    )
    whitewater: BoolProperty(  # type: ignore[valid-type]
        name="Whitewater",
        description="Spray, foam and bubbles made by the liquid's motion (Ihmsen et al. 2012), drawn by "
        "their own point object '<name> Whitewater' and baked with the liquid",
        default=False,
        update=_invalidate_all,
    )
    whitewater_capacity: IntProperty(  # type: ignore[valid-type]
        name="Max Whitewater",
        description="Most spray, foam and bubble particles alive at once (none are made while all are); "
        "the whitewater object holds three times this many points",
        default=20_000,
        min=100,
        max=1_000_000,
        update=_invalidate_all,
    )
    whitewater_object: PointerProperty(  # type: ignore[valid-type]
        name="Whitewater Object",
        description="Points object drawing this liquid's spray, foam and bubbles",
        type=bpy.types.Object,
    )
    source_display_type: StringProperty(  # type: ignore[valid-type]
        name="Source Display Type",
        description="Viewport display of an inflow or outflow before it was made one (given back by Clear)",
    )
    # Granular: the generated particle object (on the source) and its source (on the particle object).
    particle_object: PointerProperty(  # type: ignore[valid-type]
        name="Particle Object",
        description="Points object drawing the grains or the liquid of this object",
        type=bpy.types.Object,
    )
    source_object: PointerProperty(  # type: ignore[valid-type]
        name="Source Object",
        description="Granular, Fluid or Inflow object these particles were made from",
        type=bpy.types.Object,
    )
    source_hidden_render: BoolProperty(  # type: ignore[valid-type]
        name="Source Hidden in Render", description="Render visibility of the source before Make Granular"
    )
    # Rigid: the object's world matrix before the simulation moved it (restored by Reset and Clear).
    has_rest: BoolProperty(name="Has Rest Pose", default=False)  # type: ignore[valid-type]
    rest_matrix: FloatVectorProperty(  # type: ignore[valid-type]
        name="Rest Matrix", size=16, default=(1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1)
    )
    # Rigid: the transform values the user typed (location, rotation in rest_rotation_mode, scale), kept
    # with has_rest so Reset, Clear and the start frame give them back exactly (see writeback.py).
    rest_transform: FloatVectorProperty(name="Rest Transform", size=10)  # type: ignore[valid-type]
    rest_rotation_mode: StringProperty(name="Rest Rotation Mode")  # type: ignore[valid-type]


def _solver_property(name: str) -> Any:
    return solver_property(name, _invalidate)


# The solver settings: one property per setting shown in a panel, named as in core.SolverSettings.
# As string annotations, which Blender evaluates in this module when the class registers, so each
# property is made then. Blender 4.2 crashes at exit when a property with an update callback made
# before registration is still referenced (the class's annotations would keep it; seen 2026-11-23).
UNIFIED_PARTICLES_PG_scene.__annotations__.update(
    {name: f"_solver_property({name!r})" for name in panel_setting_names()}
)

classes = (UNIFIED_PARTICLES_PG_scene, UNIFIED_PARTICLES_PG_object)


def _unmarked_cloth() -> list[Any]:
    """Settings of the local cloth objects whose ``bending_model`` is not stored in the file."""
    found = []
    for obj in bpy.data.objects:
        settings: Any = getattr(obj, "unified_particles", None)
        local_cloth = obj.library is None and settings is not None and settings.role == "CLOTH"
        if local_cloth and settings.get("bending_model") is None:  # an ID property once set or saved
            found.append(settings)
    return found


def mark_legacy_bending() -> None:
    """After a file loads: cloth saved before ``bending_model`` existed keeps the bending it was made
    with (STIFFNESS, the legacy bend compliance), not the newer default. Written as a raw ID property,
    so no update callback invalidates anything."""
    for settings in _unmarked_cloth():
        settings["bending_model"] = 1  # STIFFNESS (BENDING_MODELS' second item)


def stamp_bending_model() -> None:
    """Before a save: store every cloth's ``bending_model`` (a default is not written to the file), so
    :func:`mark_legacy_bending` tells this file's cloth from that of a file made before the setting."""
    for settings in _unmarked_cloth():
        settings["bending_model"] = 0  # RIGIDITY, the default it reads now


# The stubs cannot know properties added at register time; rna.py gives typed access to them.
def register() -> None:
    register_classes(classes)
    bpy.types.Scene.unified_particles = PointerProperty(type=UNIFIED_PARTICLES_PG_scene)  # type: ignore[attr-defined,func-returns-value]
    bpy.types.Object.unified_particles = PointerProperty(type=UNIFIED_PARTICLES_PG_object)  # type: ignore[attr-defined,func-returns-value]


def unregister() -> None:
    del bpy.types.Object.unified_particles  # type: ignore[attr-defined]
    del bpy.types.Scene.unified_particles  # type: ignore[attr-defined]
    unregister_classes(classes)
