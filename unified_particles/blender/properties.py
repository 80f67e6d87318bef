# SPDX-License-Identifier: GPL-3.0-or-later
"""Settings saved in the .blend: one PropertyGroup on Scene, one on Object."""

from __future__ import annotations

import bpy
from bpy.props import EnumProperty, FloatProperty, IntProperty, PointerProperty, StringProperty

ROLES = [
    ("NONE", "None", "Not simulated"),
    ("RIGID", "Rigid", "Rigid body made of particles"),
    ("CLOTH", "Cloth", "Cloth: one particle per vertex"),
    ("GRANULAR", "Granular", "Sand, gravel, snow: free particles with friction"),
    ("COLLIDER", "Collider", "Static or animated obstacle"),
]


class UNIFIED_PARTICLES_PG_scene(bpy.types.PropertyGroup):
    particle_radius: FloatProperty(  # type: ignore[valid-type]
        name="Particle Radius",
        description="Radius of every simulated particle",
        default=0.05,
        min=1e-4,
        soft_min=0.005,
        soft_max=0.5,
        unit="LENGTH",
        subtype="DISTANCE",
    )
    substeps: IntProperty(  # type: ignore[valid-type]
        name="Substeps", description="Solver steps per frame", default=4, min=1, max=64
    )
    iterations: IntProperty(  # type: ignore[valid-type]
        name="Iterations", description="Constraint iterations per substep", default=4, min=1, max=64
    )
    cache_directory: StringProperty(  # type: ignore[valid-type]
        name="Cache Folder",
        description="Folder for bake caches, relative to the .blend file",
        default="//unified_particles_cache/",
        subtype="DIR_PATH",
    )


class UNIFIED_PARTICLES_PG_object(bpy.types.PropertyGroup):
    role: EnumProperty(  # type: ignore[valid-type]
        name="Role", description="How this object takes part in the simulation", items=ROLES, default="NONE"
    )


classes = (UNIFIED_PARTICLES_PG_scene, UNIFIED_PARTICLES_PG_object)
_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register() -> None:
    _register_classes()
    bpy.types.Scene.unified_particles = PointerProperty(type=UNIFIED_PARTICLES_PG_scene)
    bpy.types.Object.unified_particles = PointerProperty(type=UNIFIED_PARTICLES_PG_object)


def unregister() -> None:
    del bpy.types.Object.unified_particles
    del bpy.types.Scene.unified_particles
    _unregister_classes()
