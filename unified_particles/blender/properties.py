# SPDX-License-Identifier: GPL-3.0-or-later
"""Settings saved in the .blend: one PropertyGroup on Scene, one on Object, and the material presets.

``scene.unified_particles`` holds the solver settings (particle radius, substeps, iterations, the
Advanced group, the cache folder and memory cap) and ``object.unified_particles`` the role of an
object and the settings of that role. Gravity is the scene's own (``scene.gravity``,
``scene.use_gravity``).

Changing a setting invalidates the live simulation's cache from the current frame on (update
callbacks below); role changes invalidate it from the start.

Cloth stiffness is shown as a factor from 0 (very soft) to 1 (inextensible) and mapped to XPBD
compliance on a log scale by :func:`stiffness_to_compliance`.
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

from ..core.world import SolverSettings
from .rna import register_classes, unregister_classes

# The solver's own defaults, so the sidebar and the Python API cannot drift apart.
_DEFAULTS = SolverSettings()

ROLES = [
    ("NONE", "None", "Not simulated"),
    ("RIGID", "Rigid", "Rigid body made of particles"),
    ("CLOTH", "Cloth", "Cloth: one particle per vertex"),
    ("GRANULAR", "Granular", "Sand, gravel, snow: free particles with friction"),
    ("COLLIDER", "Collider", "Static or animated obstacle"),
]

COLLIDER_SHAPES = [
    ("MESH", "Mesh", "The evaluated mesh as a signed distance volume; follows the object's animation"),
    ("PLANE", "Infinite Plane", "A static infinite plane through the object origin along its local Z axis"),
]

# Name of the mesh attribute that keeps the original (rest) vertex positions of a cloth mesh while the
# simulation writes into the mesh, so Reset and Clear can restore them (also after reopening the file).
REST_ATTRIBUTE = "unified_particles_rest"

# Compliance range of the stiffness factor: 0 -> 1e-1 m/N (very soft), 1 -> 0 (inextensible).
_COMPLIANCE_SOFT_EXPONENT = -1.0
_COMPLIANCE_STIFF_EXPONENT = -8.0


def stiffness_to_compliance(stiffness: float) -> float:
    """XPBD compliance (m/N) of a user stiffness factor in [0, 1]; logarithmic, 1 gives 0 (rigid)."""
    s = min(max(float(stiffness), 0.0), 1.0)
    if s >= 1.0:
        return 0.0
    exponent = _COMPLIANCE_SOFT_EXPONENT + s * (_COMPLIANCE_STIFF_EXPONENT - _COMPLIANCE_SOFT_EXPONENT)
    return float(10.0**exponent)


def tether_give(stretch_stiffness: float) -> float:
    """How far pinned cloth may stretch away from its pins (fraction of its rest length).

    The core's long-range attachments keep heavy loads from stretching pinned cloth beyond this
    (see ``World.add_cloth``). Stiff cloth (1.0: denim, leather) gets 2%, softer cloth more, up to
    52% at stiffness 0, so a rubber sheet (0.6) still stretches about 22% under a heavy load.
    """
    s = min(max(float(stretch_stiffness), 0.0), 1.0)
    return 0.02 + 0.5 * (1.0 - s)


# Presets: (identifier, label, role, values). Densities in kg/m^3, cloth mass per area in kg/m^2.
PRESETS: list[tuple[str, str, str, dict[str, Any]]] = [
    (
        "COTTON",
        "Cotton",
        "CLOTH",
        {"area_density": 0.15, "friction": 0.5, "stretch_stiffness": 0.95, "bend_stiffness": 0.35},
    ),
    (
        "SILK",
        "Silk",
        "CLOTH",
        {"area_density": 0.06, "friction": 0.25, "stretch_stiffness": 0.9, "bend_stiffness": 0.1},
    ),
    (
        "DENIM",
        "Denim",
        "CLOTH",
        {"area_density": 0.40, "friction": 0.6, "stretch_stiffness": 1.0, "bend_stiffness": 0.55},
    ),
    (
        "LEATHER",
        "Leather",
        "CLOTH",
        {"area_density": 0.80, "friction": 0.7, "stretch_stiffness": 1.0, "bend_stiffness": 0.75},
    ),
    (
        "RUBBER_SHEET",
        "Rubber Sheet",
        "CLOTH",
        {"area_density": 1.20, "friction": 0.9, "stretch_stiffness": 0.6, "bend_stiffness": 0.3},
    ),
    ("DRY_SAND", "Dry Sand", "GRANULAR", {"density": 1600.0, "friction": 0.6, "cohesion": 0.0}),
    ("WET_SAND", "Wet Sand", "GRANULAR", {"density": 1900.0, "friction": 0.8, "cohesion": 0.3}),
    ("GRAVEL", "Gravel", "GRANULAR", {"density": 1800.0, "friction": 0.7, "cohesion": 0.0}),
    ("SNOW", "Snow", "GRANULAR", {"density": 300.0, "friction": 0.5, "cohesion": 0.4}),
    ("WOOD", "Wood", "RIGID", {"density": 700.0, "friction": 0.5}),
    ("STEEL", "Steel", "RIGID", {"density": 7850.0, "friction": 0.4}),
    ("RUBBER", "Rubber", "RIGID", {"density": 1100.0, "friction": 0.9}),
]
PRESET_ITEMS = [(ident, label, f"{role.title()} preset: {label}") for ident, label, role, _ in PRESETS]


def presets_for_role(role: str) -> list[tuple[str, str]]:
    """(identifier, label) of the presets that apply to ``role``."""
    return [(ident, label) for ident, label, preset_role, _ in PRESETS if preset_role == role]


def apply_preset(settings: Any, preset: str) -> bool:
    """Set ``settings`` (an object's PropertyGroup) to ``preset``; False if it does not fit its role."""
    for ident, _label, role, values in PRESETS:
        if ident == preset:
            if settings.role != role:
                return False
            for name, value in values.items():
                setattr(settings, name, value)
            return True
    raise KeyError(preset)


def _invalidate(self: Any, context: bpy.types.Context) -> None:
    """Update callback of every simulation setting: re-simulate from the current frame on."""
    from . import simulation

    scene = context.scene if context is not None else None
    if scene is None:
        return
    simulation.invalidate(scene, scene.frame_current)


def _invalidate_all(self: Any, context: bpy.types.Context) -> None:
    """Update callback of settings that change which particles exist: rebuild from the start."""
    from . import simulation

    scene = context.scene if context is not None else None
    if scene is None:
        return
    simulation.invalidate(scene, None)


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
    substeps: IntProperty(  # type: ignore[valid-type]
        name="Substeps",
        description="Solver steps per frame; more makes stiff cloth and fast objects more accurate",
        default=4,
        min=1,
        max=64,
        update=_invalidate,
    )
    iterations: IntProperty(  # type: ignore[valid-type]
        name="Iterations",
        description="Constraint iterations per substep",
        default=4,
        min=1,
        max=64,
        update=_invalidate,
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
    # Advanced solver settings.
    show_advanced: BoolProperty(  # type: ignore[valid-type]
        name="Advanced", description="Show advanced solver settings", default=False
    )
    stabilization_iterations: IntProperty(  # type: ignore[valid-type]
        name="Stabilization Iterations",
        description="Contact-only iterations per step that remove initial overlap without adding energy",
        default=_DEFAULTS.stabilization_iterations,
        min=0,
        max=32,
        update=_invalidate,
    )
    relaxation: FloatProperty(  # type: ignore[valid-type]
        name="Relaxation",
        description="Over-relaxation factor of the averaged (Jacobi) constraint corrections",
        default=_DEFAULTS.relaxation,
        min=0.1,
        max=2.0,
        update=_invalidate,
    )
    shock_propagation: FloatProperty(  # type: ignore[valid-type]
        name="Shock Propagation",
        description="Mass scaling with height in contacts (1/m); helps tall stacks rest, 0 turns it off",
        default=_DEFAULTS.shock_propagation,
        min=0.0,
        max=100.0,
        soft_max=10.0,
        update=_invalidate,
    )
    sleep_threshold: FloatProperty(  # type: ignore[valid-type]
        name="Sleep Threshold",
        description="Particles touching something and slower than this stop (m/s); 0 turns sleeping off",
        default=_DEFAULTS.sleep_threshold,
        min=0.0,
        max=10.0,
        unit="VELOCITY",
        update=_invalidate,
    )
    max_speed: FloatProperty(  # type: ignore[valid-type]
        name="Max Speed",
        description="Particle speeds are clamped to this (m/s)",
        default=100.0,
        min=0.01,
        max=1e4,
        unit="VELOCITY",
        update=_invalidate,
    )
    damping: FloatProperty(  # type: ignore[valid-type]
        name="Damping",
        description="Velocity damping rate (air drag), 1/s: speeds decay as exp(-damping * time); 0 is none",
        default=_DEFAULTS.damping,
        min=0.0,
        max=100.0,
        soft_max=10.0,
        update=_invalidate,
    )
    restitution: FloatProperty(  # type: ignore[valid-type]
        name="Restitution",
        description="Bounciness of contacts with colliders: 0 no bounce, 1 perfectly elastic",
        default=_DEFAULTS.restitution,
        min=0.0,
        max=1.0,
        subtype="FACTOR",
        update=_invalidate,
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
        description="Coulomb friction coefficient of the surface (contacts use the mean of both sides)",
        default=0.5,
        min=0.0,
        max=2.0,
        soft_max=1.0,
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
    bend_stiffness: FloatProperty(  # type: ignore[valid-type]
        name="Bend Stiffness",
        description="Resistance to bending: 0 very soft, 1 stiff as a board (log scale)",
        default=2.0 / 7.0,
        min=0.0,
        max=1.0,
        subtype="FACTOR",
        update=_invalidate,
    )
    pin_group: StringProperty(  # type: ignore[valid-type]
        name="Pin Group",
        description="Vertex group whose vertices (weight above 0.5) stay where they are",
        default="",
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
    collider_shape: EnumProperty(  # type: ignore[valid-type]
        name="Shape", items=COLLIDER_SHAPES, default="MESH", update=_invalidate_all
    )
    # Granular: the generated particle object (on the source) and its source (on the particle object).
    particle_object: PointerProperty(  # type: ignore[valid-type]
        name="Particle Object",
        description="Points object drawing the grains of this object",
        type=bpy.types.Object,
    )
    source_object: PointerProperty(  # type: ignore[valid-type]
        name="Source Object", description="Granular object these grains were made from", type=bpy.types.Object
    )
    source_hidden_render: BoolProperty(  # type: ignore[valid-type]
        name="Source Hidden in Render", description="Render visibility of the source before Make Granular"
    )
    # Rigid: the object's world matrix before the simulation moved it (restored by Reset and Clear).
    has_rest: BoolProperty(name="Has Rest Pose", default=False)  # type: ignore[valid-type]
    rest_matrix: FloatVectorProperty(  # type: ignore[valid-type]
        name="Rest Matrix", size=16, default=(1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1)
    )


classes = (UNIFIED_PARTICLES_PG_scene, UNIFIED_PARTICLES_PG_object)


# The stubs cannot know properties added at register time; rna.py gives typed access to them.
def register() -> None:
    register_classes(classes)
    bpy.types.Scene.unified_particles = PointerProperty(type=UNIFIED_PARTICLES_PG_scene)  # type: ignore[attr-defined,func-returns-value]
    bpy.types.Object.unified_particles = PointerProperty(type=UNIFIED_PARTICLES_PG_object)  # type: ignore[attr-defined,func-returns-value]


def unregister() -> None:
    del bpy.types.Object.unified_particles  # type: ignore[attr-defined]
    del bpy.types.Scene.unified_particles  # type: ignore[attr-defined]
    unregister_classes(classes)
