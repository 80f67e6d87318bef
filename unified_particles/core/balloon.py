# SPDX-License-Identifier: GPL-3.0-or-later
"""Balloons: a closed cloth held at a volume by one pressure constraint (Macklin et al. 2014, inflatables).

The constraint of balloon b is C(x) = V(x) - k_b V0_b = 0 with V the enclosed volume of its triangles,
V = 1/6 sum_t x_a . (x_b x x_c), V0 its rest volume and k_b its inflation ratio (keyframable:
``World.set_inflation``). Its gradient at a vertex is 1/6 sum over its triangles of the cross product of
the triangle's other two corners, and one XPBD projection per small step moves every vertex by
dx_i = -w_i grad_i C * C / (sum_j w_j |grad_j C|^2 + alpha / h^2). All balloons are solved together: the
sums are ``np.bincount`` over all triangles.

Held at its volume, a balloon of inextensible cloth inflated to k <= 1 is floppy below 1 and taut at 1
(no other shape of that area holds that volume); with a stretchable cloth (``stretch_compliance`` > 0),
k > 1 stretches it, and the stretched membrane carries a load with less squash (docs/physics.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .errors import SimulationInputError

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@dataclass
class Balloons:
    """Pressure constraints of all balloons (K balloons, T triangles).

    Attributes:
        tri: (T, 3) particle indices of each triangle, oriented outwards.
        balloon: (T,) balloon number of each triangle.
        rest_volume: (K,) enclosed volume at build time, m^3.
        compliance: (K,) XPBD compliance of the volume constraint, m^3/Pa (0: hard).
    """

    tri: IntArray
    balloon: IntArray
    rest_volume: FloatArray
    compliance: FloatArray

    @staticmethod
    def concatenate(parts: list[Balloons]) -> Balloons | None:
        """All balloons as one (balloon numbers shifted); None for none."""
        if not parts:
            return None
        offsets = np.cumsum([0] + [len(p.rest_volume) for p in parts])
        return Balloons(
            np.concatenate([p.tri for p in parts]),
            np.concatenate([p.balloon + o for p, o in zip(parts, offsets, strict=False)]),
            np.concatenate([p.rest_volume for p in parts]),
            np.concatenate([p.compliance for p in parts]),
        )

    def volumes(self, x: FloatArray) -> FloatArray:
        """(K,) enclosed volume of each balloon at positions ``x`` (N, 3), m^3."""
        a, b, c = x[self.tri[:, 0]], x[self.tri[:, 1]], x[self.tri[:, 2]]
        v6 = np.einsum("ij,ij->i", a, np.cross(b, c))
        return np.bincount(self.balloon, weights=v6, minlength=len(self.rest_volume)) / 6.0

    def __post_init__(self) -> None:
        # The balloons' vertices, each owned by one balloon, and the triangles on them (local numbers).
        self._verts, local = np.unique(self.tri.ravel(), return_inverse=True)
        self._local = local.reshape(-1, 3)
        self._owner = np.zeros(len(self._verts), np.int64)
        self._owner[self._local.ravel()] = np.repeat(self.balloon, 3)

    def solve(self, x: FloatArray, inflation: FloatArray, h: float, inv_mass: FloatArray) -> None:
        """One XPBD projection of every balloon's volume constraint on ``x`` (N, 3) in place; ``inflation``
        (K,) the target ratios, ``h`` the small step, s."""
        k, t, nv = len(self.rest_volume), self._local, len(self._verts)
        xv = x[self._verts]
        a, b, c = xv[t[:, 0]], xv[t[:, 1]], xv[t[:, 2]]
        # grad_a = (b x c) / 6 and cyclic; summed per vertex.
        grad = np.zeros((nv, 3))
        for corner, g in ((0, np.cross(b, c)), (1, np.cross(c, a)), (2, np.cross(a, b))):
            for axis in range(3):
                grad[:, axis] += np.bincount(t[:, corner], weights=g[:, axis], minlength=nv)
        grad /= 6.0
        v6 = np.einsum("ij,ij->i", a, np.cross(b, c))
        volume = np.bincount(self.balloon, weights=v6, minlength=k) / 6.0
        err = volume - inflation * self.rest_volume
        w = inv_mass[self._verts]
        denom = np.bincount(self._owner, weights=w * np.einsum("ij,ij->i", grad, grad), minlength=k)
        denom = denom + self.compliance / (h * h)
        lam = np.where(denom > 0.0, -err / np.maximum(denom, 1e-300), 0.0)
        x[self._verts] += (w * lam[self._owner])[:, None] * grad


def balloon_triangles(faces: IntArray, vertices: FloatArray) -> tuple[IntArray, float]:
    """``faces`` (F, 3) oriented outwards and their enclosed volume, m^3 (> 0).

    Raises:
        SimulationInputError: the mesh is not closed (an edge not shared by exactly two triangles) or
            encloses no volume.
    """
    f = np.asarray(faces, np.int64)
    edges = np.sort(np.concatenate([f[:, [0, 1]], f[:, [1, 2]], f[:, [2, 0]]]), axis=1)
    _, counts = np.unique(edges, axis=0, return_counts=True)
    if np.any(counts != 2):
        raise SimulationInputError(
            f"a balloon needs a closed mesh (every edge shared by two triangles); {int(np.sum(counts != 2))} "
            "edges are open or non-manifold: close the holes (Blender: Select > All by Trait > Non Manifold, "
            "then Fill)"
        )
    a, b, c = vertices[f[:, 0]], vertices[f[:, 1]], vertices[f[:, 2]]
    volume = float(np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0)
    if volume < 0.0:  # normals point inwards: flip every triangle
        f, volume = f[:, ::-1].copy(), -volume
    if volume <= 0.0:
        raise SimulationInputError("a balloon's mesh encloses no volume")
    return f, volume
