# SPDX-License-Identifier: GPL-3.0-or-later
"""What a bake leaves on an object, and taking it off again.

A bake writes its outputs into objects (``bake.outputs``): a Mesh Cache modifier named
``MODIFIER_NAME``, shape keys named ``SHAPE_KEY_PREFIX ...`` driven by an action, or keyframes in an
action named ``ACTION_PREFIX ...`` (the object's own action set aside meanwhile), and records in
``object.unified_particles_bake.restore`` (JSON, :func:`restore_info`) what it changed. This module owns
those names and that record, and the two ways of taking a bake off an object:

* :func:`free_object`: Free Bake of one object: remove what the bake added and put back exactly what it
  changed (its typed transform, its own action), as the record says;
* :func:`free_copy`: a copy carries outputs that are its original's (``identity`` finds it): take them off
  and leave the copy where it is shown, since its original's record does not describe it.

The files are never touched here (``bake.outputs.free_bake`` deletes a scene's). Imports ``rna``.
"""

from __future__ import annotations

import json
from typing import Any

import bpy

from .rna import mesh_of, object_bake

# Names the bake gives what it adds to an object.
MODIFIER_NAME = "Unified Particles Bake"
ACTION_PREFIX = "UP Bake "
SHAPE_KEY_PREFIX = "UP "
# The typed transform a keyframe bake records and Free Bake puts back.
TRANSFORM_PROPS = ("location", "rotation_quaternion", "rotation_euler", "rotation_axis_angle", "scale")


def restore_info(obj: bpy.types.Object) -> dict[str, Any]:
    """What the bake of ``obj`` changed (its JSON record; {} if there is none or it is unreadable)."""
    text = object_bake(obj).restore
    if not text:
        return {}
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def set_restore_info(obj: bpy.types.Object, data: dict[str, Any]) -> None:
    object_bake(obj).restore = json.dumps(data, sort_keys=True) if data else ""


def set_aside_user_action(obj: bpy.types.Object, info: dict[str, Any]) -> None:
    """Unassign the object's own action, keeping it alive (fake user) and its name in ``info``."""
    anim = obj.animation_data
    action = anim.action if anim is not None else None
    if anim is None or action is None:
        return
    slot = getattr(anim, "action_slot", None)  # Blender 4.4+
    info["user_action"] = action.name
    info["user_action_fake_user"] = bool(action.use_fake_user)
    info["user_action_slot"] = str(slot.identifier) if slot is not None else ""
    action.use_fake_user = True
    anim.action = None


def put_back_user_action(obj: bpy.types.Object, info: dict[str, Any]) -> None:
    """Give the object back the action :func:`set_aside_user_action` took off it."""
    action = bpy.data.actions.get(info.get("user_action", "")) if info.get("user_action") else None
    if action is None:
        return
    anim = obj.animation_data_create()
    anim.action = action
    identifier = info.get("user_action_slot", "")
    slots = getattr(action, "slots", None)
    if identifier and slots is not None and getattr(anim, "action_slot", None) is None:
        slot = next((s for s in slots if s.identifier == identifier), None)
        if slot is not None:
            anim.action_slot = slot
    action.use_fake_user = bool(info.get("user_action_fake_user", False))


def _remove_if_unused(action: bpy.types.Action | None) -> None:
    if action is not None and action.users == 0 and action.name.startswith(ACTION_PREFIX):
        bpy.data.actions.remove(action)


def _remove_action(id_data: Any, action_name: str, created_anim: bool) -> None:
    """Unassign the bake's action ``action_name`` from ``id_data``, delete it once unused, and drop the
    animation data the bake created (unless drivers or NLA tracks use it since)."""
    anim = id_data.animation_data
    action = bpy.data.actions.get(action_name) if action_name else None
    if anim is not None and (action is None or anim.action == action):
        anim.action = None
    _remove_if_unused(action)
    if created_anim and id_data.animation_data is not None:
        anim = id_data.animation_data
        if not len(anim.drivers) and not len(anim.nla_tracks):
            id_data.animation_data_clear()


def _remove_shape_keys(obj: bpy.types.Object, action_name: str, created_anim: bool) -> None:
    """Remove a shape-key bake: its action (see :func:`_remove_action`), then the keys."""
    key = mesh_of(obj).shape_keys if obj.type == "MESH" else None
    if key is not None:
        _remove_action(key, action_name, created_anim)
        obj.shape_key_clear()


def _action_name(id_data: Any) -> str:
    anim = id_data.animation_data if id_data is not None else None
    return str(anim.action.name) if anim is not None and anim.action is not None else ""


def free_object(obj: bpy.types.Object) -> None:
    """Remove what the bake added to ``obj`` and put back what it changed (files are left alone)."""
    settings = object_bake(obj)
    output, info = settings.baked_output, restore_info(obj)
    if not output:
        return
    name = info.get("modifier")
    if name:
        modifier = obj.modifiers.get(name)
        if modifier is not None and modifier.type == "MESH_CACHE":
            obj.modifiers.remove(modifier)
    if output == "SHAPE_KEYS":
        _remove_shape_keys(obj, info.get("action", ""), bool(info.get("created_anim")))
    elif output == "KEYFRAMES":
        _remove_action(obj, info.get("action", ""), bool(info.get("created_anim")))
        put_back_user_action(obj, info)
        obj.rotation_mode = info.get("rotation_mode", obj.rotation_mode)
        for prop in TRANSFORM_PROPS:
            if prop in info:
                setattr(obj, prop, info[prop])
    settings.baked_output = ""
    settings.bake_id = ""
    set_restore_info(obj, {})


def free_copy(obj: bpy.types.Object) -> None:
    """Take the bake outputs a copy carries off it, leaving it where it is shown now.

    The record is its original's (the copy's duplicated action has another name, and putting the typed
    transform back would move the copy to where the original was), so the outputs are found by the
    bake's names instead, and nothing is put back."""
    settings = object_bake(obj)
    output = settings.baked_output
    shown = obj.matrix_world.copy()
    for modifier in [m for m in obj.modifiers if m.type == "MESH_CACHE" and m.name.startswith(MODIFIER_NAME)]:
        obj.modifiers.remove(modifier)
    if output == "SHAPE_KEYS":
        key = mesh_of(obj).shape_keys if obj.type == "MESH" else None
        _remove_shape_keys(obj, _action_name(key), False)
    elif output == "KEYFRAMES":
        action = _action_name(obj)
        if action.startswith(ACTION_PREFIX):
            _remove_action(obj, action, False)
            obj.matrix_world = shown
    settings.baked_output = ""
    settings.restore = ""
