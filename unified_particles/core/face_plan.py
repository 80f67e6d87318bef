# SPDX-License-Identifier: GPL-3.0-or-later
"""The coarse-face pairs of one candidate list, indexed once while the list holds (issue 22, item 6).

``contacts.coarse_faces`` finds, among a list's pairs, those of a coarse rigid surface particle and a
particle at most 1 / ``COARSE_FACE_RATIO`` its size, and the face that meets them. Which pairs those are,
which side is rigid, and which rigid particles they share depend on the list and the model only, yet it
found them again every call (a flag gather over the list, a sort for the unique rigid particles), and it
turned each pair's offset into its body's frame, so every pair gathered its body's rotation (9 rows): on
bench S9's 13,000 rock-sand pairs ~14 ms a call, a fifth of a small step with its two calls. A
:class:`FacePlan` keeps the index arrays of its list and, each call, turns the (at most four) outward
directions of each distinct rigid particle to world space once (~100 rigid particles on S9, not 13,000
pairs), so a pair only gathers its two positions and its particle's directions.

The same pairs, normals and gaps as ``contacts.coarse_faces``: only the order of the rounding in a face's
height differs ((R f) . e here, f . (R^T e) there; a few ulp, ``tests/core/test_face_plan.py``).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from .contacts import COARSE_FACE_LATERAL, CoarseFn, FacesFn, coarse_pairs, coarse_surface_of
from .parallel import pair_chunks

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]


class FacePlan:
    """Coarse-face pairs of a candidate list (:meth:`faces`), indexed once per list: a new list (another
    array object for ``i``, ``j``, the radii or the depths) is indexed again. The arrays passed must not
    be changed in place while they are used (the solver's candidate lists and model arrays are not)."""

    def __init__(self) -> None:
        self._key: tuple[object, ...] = ()
        self._pairs = np.zeros(0, np.int64)  # (S,) into the list: pairs with a coarse side
        self._rig = np.zeros(0, np.int64)  # (S,) its rigid particle
        self._small = np.zeros(0, np.int64)  # (S,) the small one
        self._uniq = np.zeros(0, np.int64)  # (U,) distinct rigid particles
        self._back = np.zeros(0, np.int64)  # (S,) each pair's row in _uniq
        self._on_j = np.zeros(0, dtype=bool)  # (S,) the rigid side is j
        self._r_big = np.zeros(0)  # (S,) radii, metres
        self._r_small = np.zeros(0)

    def _index(self, i: IntArray, j: IntArray, radius: FloatArray, depth: FloatArray) -> None:
        """The plan of list (i, j): the pairs ``contacts.coarse_faces`` considers, as it picks them."""
        coarse = coarse_surface_of(depth, radius)
        cand = np.flatnonzero(coarse[i] | coarse[j])
        sub, on_j = coarse_pairs(coarse, radius, i[cand], j[cand])
        pairs = cand[sub]
        pi, pj = i[pairs], j[pairs]
        self._pairs, self._on_j = pairs, on_j
        self._rig = np.where(on_j, pj, pi)
        self._small = np.where(on_j, pi, pj)
        self._uniq, self._back = np.unique(self._rig, return_inverse=True)
        self._back = self._back.reshape(-1)  # NumPy 2.0 and 2.1 kept the input's shape
        self._r_big, self._r_small = radius[self._rig], radius[self._small]
        self._key = (i, j, radius, depth)

    def faces(
        self,
        xt: FloatArray,
        i: IntArray,
        j: IntArray,
        radius: FloatArray,
        depth: FloatArray,
        sdf_normal: Callable[[IntArray], FloatArray],
        sdf_faces: FacesFn,
    ) -> tuple[IntArray, FloatArray, FloatArray] | None:
        """``contacts.coarse_faces`` of the pairs (i, j) at positions ``xt`` (3, N), metres,
        coordinate-major: (pairs (F,) into i, j; normals (3, F) from j to i; gaps (F,), metres), or None.
        ``radius``, ``depth`` (N,): particle radii and SDF depths; the functions as there."""
        key = self._key
        if not key or key[0] is not i or key[1] is not j or key[2] is not radius or key[3] is not depth:
            self._index(i, j, radius, depth)
        m = len(self._pairs)
        if not m:
            return None
        uniq, back = self._uniq, self._back
        e = np.take(xt, self._small, axis=1)
        e -= np.take(xt, self._rig, axis=1)  # (3, S) rigid particle -> small one
        local, rot = sdf_faces(uniq)  # (3F, U) build frame, (9, U)
        n_faces = len(local) // 3
        rot3 = rot.reshape(3, 3, -1)
        # The faces' world directions R f, per distinct rigid particle, then the SDF normal: (3F + 3, U).
        world = np.einsum("abu,fbu->fau", rot3, local.reshape(n_faces, 3, -1)).reshape(3 * n_faces, -1)
        dirs = np.take(np.concatenate([world, sdf_normal(uniq)]), back, axis=1)  # (3F + 3, S)
        # The face pointing most towards the small particle (the first of equals, as argmax), then the
        # normal where it points as much or more.
        direction = dirs[0:3]
        h = _dot3(direction, e)
        for f in range(1, n_faces + 1):
            d_f = dirs[3 * f : 3 * f + 3]
            h_f = _dot3(d_f, e)
            better = (h_f >= h) if f == n_faces else (h_f > h)
            h = np.where(better, h_f, h)
            direction = np.where(better, d_f, direction)
        lateral2 = _dot3(e, e) - h * h
        face = np.flatnonzero(lateral2 <= (COARSE_FACE_LATERAL * self._r_big) ** 2)
        if not face.size:
            return None
        gap = h[face] - self._r_big[face] - self._r_small[face]
        n = np.where(self._on_j[face], direction[:, face], -direction[:, face])
        return self._pairs[face], n, gap


class ChunkFacePlans:
    """A :class:`FacePlan` per chunk of the contact pass's candidate list (``parallel.pair_chunks``), so
    ``contacts.particle_contacts`` finds its coarse faces as the body support pass does. The chunks are
    views of the list made once per list: a plan keys on its chunk's arrays, which
    ``parallel.pair_chunks_map`` would otherwise slice afresh at every pass."""

    def __init__(self) -> None:
        self._key: tuple[IntArray, IntArray] | None = None
        self._views: list[tuple[IntArray, IntArray]] = []
        self._plans: dict[int, FacePlan] = {}  # id of a chunk's i (held in _views) -> its plan

    def chunks(self, i: IntArray, j: IntArray) -> list[tuple[IntArray, IntArray]]:
        """The chunks (i, j) of the list (i, j) as ``parallel.pair_chunks`` cuts them, the same objects
        while the list is."""
        if self._key is None or self._key[0] is not i or self._key[1] is not j:
            bounds = pair_chunks(len(i))
            self._views = [(i, j)] if len(bounds) == 1 else [(i[a:b], j[a:b]) for a, b in bounds]
            self._plans = {id(ci): FacePlan() for ci, _ in self._views}
            self._key = (i, j)
        return self._views

    def coarse_fn(
        self,
        chunk_i: IntArray,
        radius: FloatArray,
        depth: FloatArray,
        sdf_normal: Callable[[IntArray], FloatArray],
        sdf_faces: FacesFn,
    ) -> CoarseFn:
        """The plan of the chunk whose i is ``chunk_i`` (one of :meth:`chunks`), its
        :meth:`FacePlan.faces` with the radii and SDF bound as ``particle_contacts`` calls it:
        (xt (3, N), i, j) -> the chunk's coarse-face pairs."""
        plan = self._plans[id(chunk_i)]
        return lambda xt, i, j: plan.faces(xt, i, j, radius, depth, sdf_normal, sdf_faces)


def _dot3(a: FloatArray, b: FloatArray) -> FloatArray:
    """Column-wise dot products of (3, K) arrays, (K,)."""
    out: FloatArray = a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
    return out
