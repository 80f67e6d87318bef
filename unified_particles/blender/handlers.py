# SPDX-License-Identifier: GPL-3.0-or-later
"""Persistent handlers that only dispatch: frame change -> simulation runner; file load -> forget runners."""

from __future__ import annotations

from typing import Any

import bpy
from bpy.app.handlers import persistent


@persistent
def on_frame_change_post(scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph | None = None) -> None:
    """Show the live simulation at the new frame (post: animated colliders are already at that frame)."""
    from . import simulation

    simulation.on_frame_change(scene, depsgraph)


@persistent
def on_load_pre(*_args: Any) -> None:
    """A file is about to replace the current one: in-memory simulations belong to the old one."""
    from . import simulation

    simulation.free_all()


_HANDLERS = (
    ("frame_change_post", on_frame_change_post),
    ("load_pre", on_load_pre),
)


def register() -> None:
    for attr, func in _HANDLERS:
        handlers = getattr(bpy.app.handlers, attr)
        if func not in handlers:
            handlers.append(func)


def unregister() -> None:
    # Remove by name too: after a reload Blender may hold a different function object.
    for attr, func in _HANDLERS:
        handlers = getattr(bpy.app.handlers, attr)
        for handler in list(handlers):
            if getattr(handler, "__name__", "") == func.__name__ and getattr(
                handler, "__module__", ""
            ).startswith(__package__ or ""):
                handlers.remove(handler)
    from . import simulation

    simulation.free_all()
