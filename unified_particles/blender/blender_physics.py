# SPDX-License-Identifier: GPL-3.0-or-later
"""Blender's own physics on an object: what of it would still move the object (issue 23, item 2).

Left on, Blender's cloth or soft body modifier deforms the mesh after ours, and a Bullet rigid body
that Bullet moves (Active, Dynamic, not Animated, in an enabled rigid body world) overwrites the pose we
write: the two fight, or Bullet silently wins. :func:`active_physics` names what is on; :func:`warnings`
is the panel's and the status's list for the simulated objects; ``convert.py`` switches it off.

A base module: imports bpy only.
"""

from __future__ import annotations

import bpy

# Modifiers that simulate the mesh themselves.
SIMULATING_MODIFIERS = {"CLOTH": "Cloth", "SOFT_BODY": "Soft Body"}


def in_rigid_body_world(obj: bpy.types.Object, scene: bpy.types.Scene) -> bool:
    """Whether ``obj`` is one of the scene's Bullet rigid bodies (a member of the world's collection)."""
    world = scene.rigidbody_world
    return (
        obj.rigid_body is not None
        and world is not None
        and world.collection is not None
        and obj.name in world.collection.objects
    )


def bullet_moves(obj: bpy.types.Object, scene: bpy.types.Scene) -> bool:
    """Whether Bullet sets ``obj``'s pose: Active, Dynamic, not Animated, in an enabled world."""
    rb = obj.rigid_body
    world = scene.rigidbody_world
    return bool(
        in_rigid_body_world(obj, scene)
        and world is not None
        and world.enabled
        and rb is not None
        and rb.type == "ACTIVE"
        and rb.enabled
        and not rb.kinematic
    )


def active_physics(obj: bpy.types.Object, scene: bpy.types.Scene) -> list[str]:
    """What of Blender's own physics still moves ``obj`` ("Cloth modifier 'Cloth'", "Bullet rigid body")."""
    found = [
        f"{SIMULATING_MODIFIERS[m.type]} modifier {m.name!r}"
        for m in obj.modifiers
        if m.type in SIMULATING_MODIFIERS and (m.show_viewport or m.show_render)
    ]
    if bullet_moves(obj, scene):
        found.append("Bullet rigid body")
    return found


def warnings(scene: bpy.types.Scene, objects: list[bpy.types.Object]) -> list[str]:
    """One line per simulated object (``objects``) that Blender's own physics still moves."""
    lines = []
    for obj in objects:
        found = active_physics(obj, scene)
        if found:
            lines.append(
                f"{obj.name}: Blender's {' and '.join(found)} is still on and fights this simulation "
                "(Convert Blender Physics turns it off)"
            )
    return lines
