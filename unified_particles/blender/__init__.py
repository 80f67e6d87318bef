# SPDX-License-Identifier: GPL-3.0-or-later
"""The thin bpy layer: properties, operators, panels, handlers, bake, mesh I/O.

Nothing here does physics; it reads Blender data, drives ``unified_particles.core``
and writes results back.
"""
