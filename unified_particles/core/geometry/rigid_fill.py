# SPDX-License-Identifier: GPL-3.0-or-later
"""Rigid bodies' particles on their mesh: outer particle spheres touch the surface (issue 22, item 3).

A particle of radius r whose centre lies r inside a face has its sphere touching that face. Contacts act
between spheres, so a body is as big as the envelope of its particles' spheres; putting the outer centres
on the inset surface (signed distance -r) makes that envelope the mesh: stacked boxes touch at their faces,
a ball rests at its mesh radius, a domino stands on its bottom face.

The grid of :func:`~.sampling.sample_interior` (spacing 2r, a half spacing in from the bounding box) puts
the outer layer 0..2r inside the faces when a side is not a whole number of diameters: a 0.25 m box at
r = 5 cm had its outer centres 7.5 cm inside (sphere envelope 2.5 cm short: stacked boxes overlapped 5 cm)
or, floor-rounded the other way, outside.
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from .. import geometry
from ..errors import SimulationInputError
from .closest import _signed
from .mesh import _check_spacing, _flat_error, _outward, _signed_volume, _soup_is_closed, _triangle_soup
from .sampling import MAX_TIED_FACES, TIE_TOLERANCE_SPACINGS, InteriorSamples, _check_solid, _principal_box
from .triangles import _PAIR_BUDGET, _closest_on_triangles
from .winding import _winding_fast

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

# A projected surface particle counts as on the inset surface within this many radii (else it is in a part
# thinner than 2r and stays where the grid put it).
_ON_SURFACE_RADII = 0.02
# Surface particles closer than this many radii to an already kept particle are dropped (cost only: the
# particles of one body never collide with each other).
_DUPLICATE_RADII = 0.5


def fitted_axis(lo: float, hi: float, radius: float) -> tuple[float, float, int]:
    """First node, spacing and node count of one axis of the fitted grid (metres, metres, count).

    The outer nodes sit ``radius`` in from ``lo`` and ``hi`` and the nodes between are spread evenly at
    most 2r apart (so neighbouring spheres touch or overlap: nothing slips between them). A side thinner
    than 2r gets one layer at its middle (its spheres stick out by ``r - side / 2`` on each side: one
    radius cannot be thinner than that; a smaller per-body radius can).
    """
    inner = (hi - lo) - 2.0 * radius
    if inner <= 1e-9 * radius:
        return 0.5 * (lo + hi), 0.0, 1
    gaps = max(math.ceil(inner / (2.0 * radius) - 1e-9), 1)
    return lo + radius, inner / gaps, gaps + 1


def sample_rigid(vertices: npt.ArrayLike, faces: npt.ArrayLike, radius: float) -> InteriorSamples:
    """Particle centres of a rigid body whose outer spheres (radius ``radius``) touch its mesh.

    Steps, in the mesh's principal frame (:func:`~.sampling._principal_frame`, so a rotated box is a box):

    1. A grid fitted per axis to the bounding box inset by r (:func:`fitted_axis`): for a box every outer
       node is exactly r inside its faces, at any size.
    2. Nodes whose signed distance is <= -r (sphere inside the mesh) are kept as they are.
    3. Other nodes (near curved or slanted faces) are moved along the signed-distance gradient onto the
       inset surface (signed distance -r), so a ball's outer particles lie on a sphere of radius R - r.
       Where that surface does not exist (a part thinner than 2r) a node inside the mesh stays put, so a
       thin body keeps one layer at its middle.
    4. Moved particles within ``_DUPLICATE_RADII`` r of another are dropped.

    Parameters
    ----------
    vertices : (n, 3) metres. faces : (m, 3) vertex indices.
    radius : particle radius r, metres (the body's own radius where bodies have their own sizes).

    Returns
    -------
    InteriorSamples with ``points`` (P, 3) in the mesh frame, ``sdf`` (P,) (-r on the surface layer),
    ``sdf_gradient`` (P, 3) and the tied face directions ``sdf_faces`` (P, MAX_TIED_FACES, 3).

    Raises
    ------
    SimulationInputError
        Invalid or flat mesh, or a grid larger than ``MAX_SAMPLE_GRID_NODES``.
    """
    r = 0.5 * _check_spacing(2.0 * float(radius))
    tri = _outward(_triangle_soup(vertices, faces))
    centre, axes, local, lo, hi = _principal_box(tri)
    _check_solid(hi - lo)
    fit = [fitted_axis(float(lo[k]), float(hi[k]), r) for k in range(3)]
    n_nodes = fit[0][2] * fit[1][2] * fit[2][2]
    if n_nodes > geometry.MAX_SAMPLE_GRID_NODES:
        raise SimulationInputError(
            f"filling this mesh at radius {r:.3g} m needs a grid of {n_nodes:,} candidate particles "
            f"(limit {geometry.MAX_SAMPLE_GRID_NODES:,}); use a larger particle radius or a smaller mesh"
        )
    coords = [start + step * np.arange(count, dtype=np.float64) for start, step, count in fit]
    nodes = np.stack(np.meshgrid(*coords, indexing="ij"), axis=-1).reshape(-1, 3)
    sdf, grad = _signed(local, nodes)
    if not _soup_is_closed(local) and float(_winding_fast(local, nodes).max(initial=0.0)) < 0.75:
        # As in sample_interior: an open sheet (terrain) has no inside.
        raise _flat_error()
    keep = sdf <= -r * (1.0 - 1e-9)
    moving = np.flatnonzero(~keep & (sdf <= _reach(fit) + 1e-12))
    # Nodes that cannot reach the inset surface lie in a part thinner than 2r: those inside the mesh stay
    # where they are (one layer at a thin body's middle).
    on_surface, _, _ = _onto_inset(local, nodes[moving], sdf[moving], grad[moving], r)
    thin = moving[~on_surface & (sdf[moving] < 0.0)]
    points = [nodes[keep], nodes[thin]]
    dists = [sdf[keep], sdf[thin]]
    grads = [grad[keep], grad[thin]]
    # The surface layer comes from a grid of half the spacing around the nodes that moved: on a curved
    # face the particles' spheres leave dimples as deep as a^2 / (2 R) between centres a apart (R the
    # face's radius of curvature), and a ball rests on three of them; half the spacing, a quarter the
    # depth. A box has no such nodes (its grid spans the inset box exactly) and keeps its coarse faces.
    fine_fit = [(start, 0.5 * step, 2 * count - 1) for start, step, count in fit]
    fine = _fine_nodes(fine_fit, np.stack(np.unravel_index(moving, [f[2] for f in fit]), axis=1))
    fsdf, fgrad = _signed(local, fine)
    fmove = ~(fsdf <= -r * (1.0 - 1e-9)) & (fsdf <= _reach(fine_fit) + 1e-12)
    ok, moved, (msdf, mgrad) = _onto_inset(local, fine[fmove], fsdf[fmove], fgrad[fmove], r)
    shell = _drop_duplicates(np.concatenate(points), moved[ok], _DUPLICATE_RADII * r)
    points.append(moved[ok][shell])
    dists.append(msdf[ok][shell])
    grads.append(mgrad[ok][shell])
    pts = np.concatenate(points)
    if not len(pts):
        # Nothing inside (a body far thinner than the grid's reach): one particle at the volume centroid.
        volume, centroid = _signed_volume(local, np.zeros(3))
        if abs(volume) <= 1e-9 * float(np.prod(hi - lo)):
            raise _flat_error()
        pts = centroid[None, :]
        d, g = _signed(local, pts)
        dists, grads = [d], [g]
    d_all = np.concatenate(dists)
    g_all = np.concatenate(grads)
    faces_local = _tied_faces(local, pts, d_all, g_all, r)
    return InteriorSamples(pts @ axes.T + centre, d_all, g_all @ axes.T, faces_local @ axes.T)


def _reach(fit: list[tuple[float, float, int]]) -> float:
    """Half the diagonal of a grid cell (metres): every point of the inset surface is this close to a node."""
    return 0.5 * math.sqrt(sum(step * step for _, step, _ in fit))


def _onto_inset(
    tri: FloatArray, nodes: FloatArray, sdf: FloatArray, grad: FloatArray, r: float
) -> tuple[npt.NDArray[np.bool_], FloatArray, tuple[FloatArray, FloatArray]]:
    """Move ``nodes`` (k, 3) along their gradients to signed distance -r. Returns which landed there
    (within ``_ON_SURFACE_RADII`` r), the moved points and their (signed distance, gradient)."""
    moved = nodes - (sdf + r)[:, None] * grad
    msdf, mgrad = _signed(tri, moved) if len(moved) else (np.zeros(0), np.zeros((0, 3)))
    return np.abs(msdf + r) <= _ON_SURFACE_RADII * r, moved, (msdf, mgrad)


def _fine_nodes(fine_fit: list[tuple[float, float, int]], coarse: IntArray) -> FloatArray:
    """The nodes (k, 3) of the half-spacing grid ``fine_fit`` within one fine step of the ``coarse``
    node indices (k, 3) (coarse node i is fine node 2i)."""
    if not len(coarse):
        return np.zeros((0, 3))
    offsets = np.stack(np.meshgrid(*[np.arange(-1, 2)] * 3, indexing="ij"), axis=-1).reshape(-1, 3)
    counts = np.array([c for _, _, c in fine_fit])
    idx = (2 * coarse[:, None, :] + offsets[None, :, :]).reshape(-1, 3)
    idx = np.unique(idx[((idx >= 0) & (idx < counts)).all(axis=1)], axis=0)
    start = np.array([s for s, _, _ in fine_fit])
    step = np.array([h for _, h, _ in fine_fit])
    out: FloatArray = start + step * idx
    return out


def _drop_duplicates(kept: FloatArray, new: FloatArray, cell: float) -> npt.NDArray[np.bool_]:
    """Mask of the ``new`` points (k, 3) to keep: one per cube of side ``cell`` (the first in input
    order), none in a cube that holds a ``kept`` point. Bounds the surface layer's density (cost only)."""
    if not len(new):
        return np.ones(0, dtype=bool)
    allp = np.concatenate([kept, new])
    _, first, label = np.unique(
        np.floor(allp / cell).astype(np.int64), axis=0, return_index=True, return_inverse=True
    )
    owner = first[label.reshape(-1)]
    out: npt.NDArray[np.bool_] = owner[len(kept) :] == np.arange(len(kept), len(allp))
    return out


def _tied_faces(tri: FloatArray, pts: FloatArray, sdf: FloatArray, grad: FloatArray, r: float) -> FloatArray:
    """The directions of the faces nearest each particle (P, MAX_TIED_FACES, 3): row 0 its gradient, then
    the other faces within ``TIE_TOLERANCE_SPACINGS`` * 2r of the nearest (a box's edge and corner
    particles lie on two and three faces; see ``sampling._tied_directions`` for why contacts need them).
    Only particles within about one radius of the surface layer are looked at; their (point, triangle)
    pairs run in windows of ``_PAIR_BUDGET``."""
    out = np.zeros((len(pts), MAX_TIED_FACES, 3))
    out[:, 0] = grad
    near = np.flatnonzero(-sdf <= 2.02 * r)
    if not near.size:
        return out
    tol = TIE_TOLERANCE_SPACINGS * 2.0 * r
    n_tri = len(tri)
    step = max(1, _PAIR_BUDGET // max(n_tri, 1))
    rows: list[IntArray] = []
    dirs: list[FloatArray] = []
    for s0 in range(0, near.size, step):
        which = near[s0 : s0 + step]
        p = np.repeat(pts[which], n_tri, axis=0)
        t = np.tile(tri, (len(which), 1, 1))
        diff = _closest_on_triangles(p, t[:, 0], t[:, 1], t[:, 2]) - p
        dt = np.sqrt(np.einsum("ij,ij->i", diff, diff))
        own = np.repeat(which, n_tri)
        tie = np.flatnonzero((dt <= np.abs(sdf[own]) + tol) & (dt > 0.0))
        rows.append(own[tie])
        # From inside, the direction to the closest point is outward.
        dirs.append(diff[tie] / dt[tie, None])
    row = np.concatenate(rows)
    u = np.concatenate(dirs)
    key = np.column_stack([row, np.round(u / 1e-6).astype(np.int64)])
    _, first = np.unique(key, axis=0, return_index=True)
    first.sort()
    row, u = row[first], u[first]
    # Per particle, the face of its gradient first (contacts try the gradient first, as in sampling),
    # then the opposite face (a layer in a body thinner than 2r touches both), then the sides.
    dots = np.abs(np.einsum("ij,ij->i", u, grad[row]))
    order = np.lexsort((-dots, row))
    row, u = row[order], u[order]
    count = np.bincount(row, minlength=len(pts))
    slot = np.arange(row.size) - (np.cumsum(count) - count)[row]
    # One face: row 0 stays the gradient. More than MAX_TIED_FACES (the corner of a layer in a thin
    # body): the first MAX_TIED_FACES in that order.
    sel = (count[row] >= 2) & (slot < MAX_TIED_FACES)
    out[row[sel], slot[sel]] = u[sel]
    return out
