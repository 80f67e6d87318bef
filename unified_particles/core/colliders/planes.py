# SPDX-License-Identifier: GPL-3.0-or-later
"""Static infinite planes (``PlaneCollider``) and their contacts with every particle at once."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import SimulationInputError
from .contacts import ColliderContacts
from .poses import _as_point

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@dataclass
class PlaneCollider:
    """Static infinite plane; particles stay on the side the normal points to.

    Attributes:
        point: (3,) a point on the plane, metres.
        normal: (3,) unit normal pointing to the free side.
        friction: Coulomb coefficient of the plane's surface.
        name: optional label.
    """

    point: FloatArray
    normal: FloatArray
    friction: float = 0.5
    name: str | None = None

    @classmethod
    def create(cls, point: ArrayLike, normal: ArrayLike, friction: float, name: str | None) -> PlaneCollider:
        p = _as_point(point, "plane point")
        n = _as_point(normal, "plane normal")
        length = float(np.linalg.norm(n))
        if length < 1e-12:
            raise SimulationInputError("plane normal must not be zero")
        return cls(p, n / length, _check_friction(friction), name)


@dataclass(frozen=True)
class PlaneArrays:
    """The planes' data as arrays, made once when the set of planes changes (``ColliderSet.add_plane``):
    rebuilding them from the list cost 3 small ``np.array`` calls every contact pass.

    Attributes:
        normals: (P, 3) unit normals.
        offsets: (P,) n . p of each plane, metres.
        friction: (P,) Coulomb coefficients.
    """

    normals: FloatArray
    offsets: FloatArray
    friction: FloatArray

    @classmethod
    def of(cls, planes: list[PlaneCollider] | tuple[PlaneCollider, ...]) -> PlaneArrays:
        return cls(
            np.array([p.normal for p in planes]).reshape(-1, 3),
            np.array([p.normal @ p.point for p in planes]),
            np.array([p.friction for p in planes]),
        )


def plane_contacts(
    planes: list[PlaneCollider] | PlaneArrays,
    x: FloatArray,
    radius: float | FloatArray,
    tolerance: float | FloatArray = 0.0,
) -> ColliderContacts:
    """Contacts of all particles against all planes at once: (x - p) . n < r + tolerance.

    Near contacts (depth in (-tolerance, 0]) are reported too; they produce no correction. ``radius``
    and ``tolerance``: one float, or (N,) per particle. ``planes``: the colliders, or their arrays made
    once (:class:`PlaneArrays`).
    """
    arrays = planes if isinstance(planes, PlaneArrays) else PlaneArrays.of(planes)
    normals, offsets = arrays.normals, arrays.offsets
    # einsum, not `@`: a BLAS call for (N,3)x(3,P) is slow and spins threads on a busy machine.
    dist = np.einsum("ij,kj->ik", x, normals) - offsets
    reach = radius + tolerance
    hit_i, hit_p = np.nonzero(dist < (reach[:, None] if np.ndim(reach) else reach))  # type: ignore[index]
    depth = (radius[hit_i] if np.ndim(radius) else radius) - dist[hit_i, hit_p]  # type: ignore[index]
    friction = arrays.friction[hit_p]
    normal = normals[hit_p]
    return ColliderContacts(hit_i.astype(np.int64), normal, depth, np.zeros_like(normal), friction)


def _check_friction(friction: float) -> float:
    f = float(friction)
    if not np.isfinite(f) or f < 0.0:
        raise SimulationInputError(f"friction must be a finite number >= 0, got {friction!r}")
    return f
