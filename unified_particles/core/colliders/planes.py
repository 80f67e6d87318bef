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
        axes: (P,) the axis each normal lies along when every one does (a ground, a box of walls), else
            None: n . x is then that coordinate times the normal's +-1 (the other terms are exact zeros).
    """

    normals: FloatArray
    offsets: FloatArray
    friction: FloatArray
    axes: IntArray | None = None

    @classmethod
    def of(cls, planes: list[PlaneCollider] | tuple[PlaneCollider, ...]) -> PlaneArrays:
        normals = np.array([p.normal for p in planes]).reshape(-1, 3)
        along = (np.count_nonzero(normals, axis=1) == 1) & (np.abs(normals).max(axis=1, initial=0.0) == 1.0)
        axes = np.argmax(np.abs(normals), axis=1) if len(normals) and along.all() else None
        return cls(
            normals,
            np.array([p.normal @ p.point for p in planes]),
            np.array([p.friction for p in planes]),
            axes,
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
    if arrays.axes is not None:  # axis-aligned planes: n . x is +-x_axis (1 us against einsum's 10 for S2)
        dist = x[:, arrays.axes] * normals[np.arange(len(normals)), arrays.axes] - offsets
    else:  # einsum, not `@`: a BLAS call for (N,3)x(3,P) is slow and spins threads on a busy machine.
        dist = np.einsum("ij,kj->ik", x, normals) - offsets
    reach = radius + tolerance
    if dist.shape[1] == 1:  # one plane (a ground): 1-D index arithmetic, 2-D nonzero costs twice as much
        column = dist[:, 0]
        hit_i = np.flatnonzero(column < reach)
        hit_p = np.zeros(len(hit_i), np.int64)
        depth = (radius[hit_i] if np.ndim(radius) else radius) - column[hit_i]  # type: ignore[index]
    else:
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
