# SPDX-License-Identifier: GPL-3.0-or-later
"""One persistent frame-change handler that only dispatches."""

from __future__ import annotations

import bpy
from bpy.app.handlers import persistent


@persistent
def on_frame_change_post(scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph | None = None) -> None:
    """Dispatch to the simulation runner (live simulation lands with the Blender-layer issue)."""


def register() -> None:
    if on_frame_change_post not in bpy.app.handlers.frame_change_post:
        bpy.app.handlers.frame_change_post.append(on_frame_change_post)


def unregister() -> None:
    # Remove by name too: after a reload Blender may hold a different function object.
    for handler in list(bpy.app.handlers.frame_change_post):
        if getattr(handler, "__name__", "") == on_frame_change_post.__name__ and getattr(
            handler, "__module__", ""
        ).startswith(__package__ or ""):
            bpy.app.handlers.frame_change_post.remove(handler)
