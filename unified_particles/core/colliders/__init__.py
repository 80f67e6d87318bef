# SPDX-License-Identifier: GPL-3.0-or-later
"""Static and animated colliders: infinite planes and triangle meshes.

Colliders have infinite mass: a contact moves only the particle. Each collider reports contacts as
(particle index, outward normal, penetration depth, surface velocity); :func:`collider_corrections`
turns them into position corrections with Coulomb friction relative to the moving surface, so an
animated collider drags what rests on it.

One module per concern, lowest first: ``contacts`` (the contacts and their corrections), ``poses``
(checked transforms, rotation log/exp), ``planes``, ``binning`` (hash grids of triangle boxes),
``features`` (pseudo-normals, the closest of candidate triangles), ``exact`` (``ExactSurface``, where
the volume cannot resolve a mesh), ``crossings`` (swept tests), ``deforming`` (``DeformingSurface``),
``volume`` (lookups in a mesh's ``geometry.SDFVolume``) and ``mesh`` (``MeshCollider``). Nothing in
``geometry`` imports this package.
"""

from __future__ import annotations

from ..rotations import polar
from .contacts import ColliderContacts, collider_corrections
from .crossings import SegmentHits, exact_surface_crossings
from .deforming import DeformingSurface, deforming_vertices, restore_deforming_vertices
from .exact import ExactSurface
from .mesh import MeshCollider
from .planes import PlaneArrays, PlaneCollider, plane_contacts
from .poses import POSE_CACHE_SIZE, as_transform, rotation_exp, rotation_log
from .volume import WEAK_SDF_GRADIENT

# The tunables of the mesh contacts. The modules read them from here when called
# (``colliders.SWEEP_MIN_RADII``), so a script or test that sets one here changes every use of it.

# Exact contacts (colliders the volume cannot resolve) find the closest triangle, and so the side, of
# particles up to this many radii inside a closed collider (a particle must move (1 + this) r in one
# small step to get deeper: 96 m/s at r = 5 cm, 24 fps, 16 small steps). Outside, contacts reach 1.1 r.
EXACT_DEPTH_RADII = 4.0
# Candidate (particle, triangle) pairs are reused while no particle moved more than this many radii.
EXACT_MARGIN_RADII = 1.0
# With exact contacts the volume only answers for particles deep inside a closed collider (beyond the
# band): this many cells per axis at most, so a big collider's volume builds in well under a second.
EXACT_VOLUME_CELLS = 32
# A volume cell may exceed the particle radius by this relative round-off before contacts go exact.
CELL_SLACK = 1e-9
# A deforming collider (no distance volume) finds the side of particles up to this many radii inside it.
# Deeper ones lose their contact; the swept contacts keep fast particles from getting that deep. Each
# radius more costs about (2 + this)^2 / (1 + this)^2 more (particle, triangle) pairs.
DEFORM_DEPTH_RADII = 1.5
# Its candidate pairs are searched with this margin and looked up again, particle by particle, for those
# that moved farther (and for all at each new frame): a thin margin keeps the pairs per small step few.
DEFORM_MARGIN_RADII = 0.5
# Particles that moved more than this many radii relative to a mesh collider in one small step have their
# path tested against its triangles (swept contacts): slower ones cannot cross a surface they were not
# already within half a radius of, which the ordinary contacts hold.
SWEEP_MIN_RADII = 0.5
# On a closed collider with no part thinner than the particle radius (``thinnest`` inf) a path must be this
# long to pass its surface by more than the radius; shorter crossings the ordinary contacts push back out
# through the side entered. (A falling cloth, 0.7 radii per small step, then costs no sweep.)
SWEEP_CLOSED_MIN_RADII = 1.0
# ... and of those only the ones that end in contact with it, or moved this many radii (enough to start one
# radius out, cross a part r thick and end one radius beyond, out of contact).
SWEEP_THROUGH_RADII = 3.0

__all__ = [
    "CELL_SLACK",
    "DEFORM_DEPTH_RADII",
    "DEFORM_MARGIN_RADII",
    "EXACT_DEPTH_RADII",
    "EXACT_MARGIN_RADII",
    "EXACT_VOLUME_CELLS",
    "POSE_CACHE_SIZE",
    "SWEEP_CLOSED_MIN_RADII",
    "SWEEP_MIN_RADII",
    "SWEEP_THROUGH_RADII",
    "WEAK_SDF_GRADIENT",
    "ColliderContacts",
    "DeformingSurface",
    "ExactSurface",
    "MeshCollider",
    "PlaneArrays",
    "PlaneCollider",
    "SegmentHits",
    "as_transform",
    "collider_corrections",
    "deforming_vertices",
    "exact_surface_crossings",
    "plane_contacts",
    "polar",
    "restore_deforming_vertices",
    "rotation_exp",
    "rotation_log",
]
