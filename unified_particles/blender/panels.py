# SPDX-License-Identifier: GPL-3.0-or-later
"""Panels of the sidebar tab (filled in by the Blender-layer issue)."""

from __future__ import annotations

import bpy

classes: tuple[type, ...] = ()
_register_classes, _unregister_classes = bpy.utils.register_classes_factory(classes)


def register() -> None:
    _register_classes()


def unregister() -> None:
    _unregister_classes()
