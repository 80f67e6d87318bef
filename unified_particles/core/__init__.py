# SPDX-License-Identifier: GPL-3.0-or-later
"""Pure-NumPy unified particle solver (Macklin et al. 2014): rigid and soft bodies, cloth, grains, fluids.

Everything is two-way coupled.

Never imports bpy. Start with :class:`World`; see ``world.py`` for a usage example.
"""

from __future__ import annotations

from .bodies import Body, Cloth, Fluid, Granular, RigidBody, SoftBody
from .colliders import MeshCollider, PlaneCollider
from .errors import SimulationDivergedError, SimulationInputError
from .fluid import FLUID_PRESETS, fill_mesh_with_fluid
from .geometry import fill_mesh_with_grains
from .hair import Hair
from .joints import Joint
from .rope import Rope
from .settings import SolverSettings
from .soft_build import SOFT_PRESETS
from .state import Snapshot
from .world import World

__all__ = [
    "FLUID_PRESETS",
    "SOFT_PRESETS",
    "Body",
    "Cloth",
    "Fluid",
    "Granular",
    "Hair",
    "Joint",
    "MeshCollider",
    "PlaneCollider",
    "RigidBody",
    "Rope",
    "SimulationDivergedError",
    "SimulationInputError",
    "Snapshot",
    "SoftBody",
    "SolverSettings",
    "World",
    "fill_mesh_with_fluid",
    "fill_mesh_with_grains",
]
