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

# Most spacing of the fitted grid, in radii. Up to 2.5 r, nothing of the same size slips through a layer
# (the middle of four neighbours is at most 2.5 r / sqrt(2) = 1.77 r < 2 r from them) and a box holds
# about as many particles as before; denser (2 r) a 0.25 m box at r = 2.4 cm took 216 lighter particles
# instead of 125, and pushed through a tethered cloth that held the 125 (tests/core/test_tethers.py).
MAX_SPACING_RADII = 2.5
# A node this many radii less deep than r still counts as r deep: Blender's float32 vertices put a box's
# faces up to ~1e-7 of its size off, and a box of 1.6 x 0.3 x 3.4 m then had its faces' nodes "near" the
# surface and got a dense surface layer on every face (3762 particles instead of 1092).
_ON_GRID_RADII = 1e-3
# A projected surface particle counts as on the inset surface within this many radii (else it is in a part
# thinner than 2r and stays where the grid put it).
_ON_SURFACE_RADII = 0.02
# Surface particles closer than this many radii to an already kept particle are dropped (cost only: the
# particles of one body never collide with each other).
_DUPLICATE_RADII = 0.5
# A moved node counts as on a flat face when its moved neighbours' normals turn so little that the
# spheres between them leave dimples at most this many radii deep (see _flat_nodes): 0.5 mm at r = 5 cm,
# a fifth of a resting contact's overlap at the default step (tests/core/test_exact_shapes.py).
_FLAT_DIMPLE_RADII = 0.01
# ... and neighbours whose normals differ by more than this (45 deg) lie on another face across a sharp edge
# (a sheared box's; a 32-segment ball's faces turn by 11 deg and get the fine layer).
_SHARP_EDGE_COS = math.cos(math.radians(45.0))
# Particles per block in the search for tied faces.
_TIE_BLOCK = 256
# Meshes with at most this many triangles (boxes, prisms) get tied faces for every particle.
_LOW_POLY_TRIANGLES = 256


def fitted_axis(lo: float, hi: float, radius: float) -> tuple[float, float, int]:
    """First node, spacing and node count of one axis of the fitted grid (metres, metres, count).

    The outer nodes sit ``radius`` in from ``lo`` and ``hi`` and the nodes between are spread evenly at
    most ``MAX_SPACING_RADII`` r apart. A side thinner
    than 2r gets one layer at its middle (its spheres stick out by ``r - side / 2`` on each side: one
    radius cannot be thinner than that; a smaller per-body radius can).
    """
    inner = (hi - lo) - 2.0 * radius
    if inner <= 1e-9 * radius:
        return 0.5 * (lo + hi), 0.0, 1
    # The nearest whole number of diameters (a side of whole diameters keeps spheres touching, 2r apart),
    # unless that is more than MAX_SPACING_RADII r apart.
    gaps = max(round(inner / (2.0 * radius)), math.ceil(inner / (MAX_SPACING_RADII * radius) - 1e-9), 1)
    return lo + radius, inner / gaps, gaps + 1


def sample_rigid(vertices: npt.ArrayLike, faces: npt.ArrayLike, radius: float) -> InteriorSamples:
    """Particle centres of a rigid body whose outer spheres (radius ``radius``) touch its mesh.

    Steps, in the mesh's principal frame (:func:`~.sampling._principal_frame`, so a rotated box is a box):

    1. A grid fitted per axis to the bounding box inset by r (:func:`fitted_axis`): for a box every outer
       node is exactly r inside its faces, at any size.
    2. Nodes whose signed distance is <= -r (sphere inside the mesh) are kept as they are.
    3. Nodes nearer the surface than r (beside curved or slanted faces) that cannot be moved onto the
       inset surface (signed distance -r) lie in a part thinner than 2r: those inside the mesh stay, so a
       thin body keeps one layer at its middle.
    4. The surface layer: around the other nodes of step 3, the nodes of a grid of half the spacing
       that are nearer the surface than r, moved along the signed-distance gradient onto the inset
       surface (a ball's outer particles lie on the sphere R - r), at most one per cube of
       ``_DUPLICATE_RADII`` r and none in a cube holding a node of step 2.

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
    keep = sdf <= -r * (1.0 - _ON_GRID_RADII)
    moving = np.flatnonzero(~keep & (sdf <= _reach(fit) + 1e-12))
    # Nodes that cannot reach the inset surface lie in a part thinner than 2r: those inside the mesh stay
    # where they are (one layer at a thin body's middle).
    on_surface, lifted, (lsdf, lgrad) = _onto_inset(local, nodes[moving], sdf[moving], grad[moving], r)
    thin = moving[~on_surface & (sdf[moving] < 0.0)]
    points = [nodes[keep], nodes[thin]]
    dists = [sdf[keep], sdf[thin]]
    grads = [grad[keep], grad[thin]]
    # Beside a flat face (a slanted or sheared box's) the moved nodes themselves are the surface layer:
    # their spheres leave no dimples there, and the fine layer below made a sheared 1.6 x 0.3 x 3.4 m
    # domino 5,032 particles instead of a box's 1,632.
    shape = tuple(f[2] for f in fit)
    flat = _flat_nodes(shape, moving[on_surface], lgrad[on_surface], max(h for _, h, _ in fit), r)
    flat_pts = lifted[on_surface][flat]
    shell = _drop_duplicates(np.concatenate(points), flat_pts, _DUPLICATE_RADII * r)
    points.append(flat_pts[shell])
    dists.append(lsdf[on_surface][flat][shell])
    grads.append(lgrad[on_surface][flat][shell])
    # Elsewhere the surface layer comes from a grid of half the spacing around the nodes that moved: on a
    # curved face the particles' spheres leave dimples as deep as a^2 / (2 R) between centres a apart (R
    # the face's radius of curvature), and a ball rests on three of them; half the spacing, a quarter the
    # depth. A box has no such nodes (its grid spans the inset box exactly) and keeps its coarse faces.
    curved = np.concatenate([moving[~on_surface], moving[on_surface][~flat]])
    fine_fit = [(start, 0.5 * step, 2 * count - 1) for start, step, count in fit]
    fine = _fine_nodes(fine_fit, np.stack(np.unravel_index(curved, shape), axis=1))
    fsdf, fgrad = _signed(local, fine)
    fmove = ~(fsdf <= -r * (1.0 - _ON_GRID_RADII)) & (fsdf <= _reach(fine_fit) + 1e-12)
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
    faces_local = _tied_faces(local, pts, d_all, g_all, r, hi - lo)
    g_all = faces_local[:, 0]
    return InteriorSamples(pts @ axes.T + centre, d_all, g_all @ axes.T, faces_local @ axes.T)


def _flat_nodes(
    shape: tuple[int, ...], nodes: IntArray, normal: FloatArray, step: float, r: float
) -> npt.NDArray[np.bool_]:
    """Which of the grid ``nodes`` (k,) flat indices into ``shape``, moved onto the inset surface with
    outward ``normal`` (k, 3), lie on a flat part of it: the normal of every moved node among their 26
    neighbours is within t of theirs, where centres ``step`` (metres, the grid's largest spacing) apart on
    a face turning by t radians leave a dimple step t / 2 deep, at most ``_FLAT_DIMPLE_RADII`` r (or it
    turns by more than 45 degrees: another face, across a sharp edge)."""
    flat = np.ones(len(nodes), dtype=bool)
    if not len(nodes):
        return flat
    grid = np.full((int(np.prod(shape)), 3), np.nan)
    grid[nodes] = normal
    ijk = np.stack(np.unravel_index(nodes, shape), axis=1)
    limit = np.array(shape)
    cos_max = math.cos(min(2.0 * _FLAT_DIMPLE_RADII * r / max(step, 1e-300), 1.0))
    for offset in np.stack(np.meshgrid(*[np.arange(-1, 2)] * 3, indexing="ij"), axis=-1).reshape(-1, 3):
        if not offset.any():
            continue  # a loop over the 26 neighbour offsets, not over nodes
        other = ijk + offset
        inside = ((other >= 0) & (other < limit)).all(axis=1)
        n = np.full((len(nodes), 3), np.nan)
        n[inside] = grid[np.ravel_multi_index(other[inside].T, shape)]
        dot = np.einsum("ij,ij->i", n, normal)
        # NaN (no moved neighbour there) compares False: no objection; nor from a neighbour on another
        # face across a sharp edge (a box's: its spheres are not a curved face's dimples).
        flat &= ~((dot < cos_max) & (dot > _SHARP_EDGE_COS))
    return flat


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


def _tied_faces(
    tri: FloatArray, pts: FloatArray, sdf: FloatArray, grad: FloatArray, r: float, extent: FloatArray
) -> FloatArray:
    """The directions of the faces nearest each particle (P, MAX_TIED_FACES, 3): row 0 its gradient, then
    the other faces within ``TIE_TOLERANCE_SPACINGS`` * 2r of the nearest (a box's edge and corner
    particles lie on two and three faces; see ``sampling._tied_directions`` for why contacts need them).
    Only particles within about one radius of the surface layer are looked at, in blocks of neighbours
    against the triangles near each block, in windows of ``_PAIR_BUDGET`` pairs."""
    out = np.zeros((len(pts), MAX_TIED_FACES, 3))
    out[:, 0] = grad
    # Deeper particles of a low-poly body too (a box's middle is as far from two or three faces): their
    # gradient is the one taken when bodies overlap deeply, and among tied faces it is the one across the
    # body's shortest side (the short way out), not whichever the closest-point search met first.
    low_poly = len(tri) <= _LOW_POLY_TRIANGLES
    near = np.flatnonzero((-sdf <= 2.02 * r) | low_poly)
    if not near.size:
        return out
    tol = TIE_TOLERANCE_SPACINGS * 2.0 * r
    # Blocks of nearby particles (sorted by cells of 4r) against the triangles whose bounding boxes come
    # within their reach: a high-poly mesh costs pairs near each block, not every (particle, triangle).
    cell = np.floor(pts[near] / (4.0 * r)).astype(np.int64)
    near = near[np.lexsort(cell.T[::-1])]
    tlo, thi = tri.min(axis=1), tri.max(axis=1)
    normal = np.cross(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0])
    normal /= np.maximum(np.linalg.norm(normal, axis=1, keepdims=True), 1e-300)
    rows: list[IntArray] = []
    dirs: list[FloatArray] = []
    for s0 in range(0, near.size, _TIE_BLOCK):
        block = near[s0 : s0 + _TIE_BLOCK]
        pad = float(np.abs(sdf[block]).max()) + tol
        lo, hi = pts[block].min(axis=0) - pad, pts[block].max(axis=0) + pad
        cand = np.flatnonzero(((thi >= lo) & (tlo <= hi)).all(axis=1))
        step = max(1, _PAIR_BUDGET // max(cand.size, 1))
        for b0 in range(0, block.size, step):
            which = block[b0 : b0 + step]
            p = np.repeat(pts[which], cand.size, axis=0)
            t = np.tile(tri[cand], (len(which), 1, 1))
            diff = _closest_on_triangles(p, t[:, 0], t[:, 1], t[:, 2]) - p
            dt = np.sqrt(np.einsum("ij,ij->i", diff, diff))
            own = np.repeat(which, cand.size)
            tie = np.flatnonzero((dt <= np.abs(sdf[own]) + tol) & (dt > 0.0))
            rows.append(own[tie])
            # The tied triangle's outward normal, not the direction to its closest point: that leans
            # where the closest point falls on the diagonal of a quad (within the tolerance of the face
            # itself) and made a skewed extra "face".
            dirs.append(normal[np.tile(cand, len(which))[tie]])
    row = np.concatenate(rows)
    u = np.concatenate(dirs)
    key = np.column_stack([row, np.round(u / 1e-6).astype(np.int64)])
    _, first = np.unique(key, axis=0, return_index=True)
    first.sort()
    row, u = row[first], u[first]
    # Per particle, the gradient first: among tied faces the one across the body's shortest side (in
    # this principal frame, the axis of the smallest extent), then the next shortest, +axis before -axis.
    rank = np.argsort(np.argsort(extent, kind="stable"), kind="stable")
    weight = 4.0 ** (2 - rank)
    score = np.abs(u) @ weight + 1e-3 * u @ weight
    best = np.full(len(pts), -np.inf)
    np.maximum.at(best, row, score)
    first_face = score >= best[row] - 1e-9
    lead = np.zeros((len(pts), 3))
    lead[row[first_face]] = u[first_face]
    has = np.zeros(len(pts), dtype=bool)
    # Only where the body has one shortest side; a cube's tied faces keep the closest-point search's.
    ext = np.sort(extent)
    if ext[1] - ext[0] > 1e-6 * ext[2]:
        has[row] = True
    grad = np.where(has[:, None], lead, grad)
    out[:, 0] = grad
    # Then the opposite face (a layer in a body thinner than 2r touches both), then the sides.
    dots = np.abs(np.einsum("ij,ij->i", u, grad[row]))
    order = np.lexsort((-dots, row))
    row, u = row[order], u[order]
    count = np.bincount(row, minlength=len(pts))
    slot = np.arange(row.size) - (np.cumsum(count) - count)[row]
    # Faces rows only within about one radius of the surface layer (as sampling does).
    shallow = -sdf <= 2.02 * r
    # One face: row 0 stays the gradient. More than MAX_TIED_FACES (the corner of a layer in a thin
    # body): the first MAX_TIED_FACES in that order.
    sel = (count[row] >= 2) & (slot < MAX_TIED_FACES) & shallow[row]
    out[row[sel], slot[sel]] = u[sel]
    return out


# A shell keeps the particles whose centres are at most this many radii inside the mesh: the surface layer
# (centres r deep) and, beside curved faces, the grid nodes kept between r and 2r deep that fill the gaps
# of the moved layer. The next layer of the fitted grid is at least 2r deeper than the surface layer
# (3r, MAX_SPACING_RADII keeps it at most 3.5r), so a box keeps exactly its outer layer.
SHELL_DEPTH_RADII = 2.0


def shell_of(samples: InteriorSamples, radius: float) -> tuple[InteriorSamples, float]:
    """The particles of ``samples`` (from :func:`sample_rigid` at ``radius``, metres) under the surface:
    centres at most ``SHELL_DEPTH_RADII`` r deep, like Blender's "Mesh" collision shape (hollow in Bullet).
    A nested body inside then has room: a ball in a hollow box rests on its inner faces.

    One layer of particles (at most ``MAX_SPACING_RADII`` r apart) lets nothing of the same size through
    (see ``MAX_SPACING_RADII``). A body thinner than two layers is all wall: every particle is kept.

    Returns
    -------
    The kept samples and the fraction of the particles kept (the walls' share of the mesh's volume: each
    particle stands for an equal share, as ``World.add_rigid`` weighs a solid body).
    """
    depth = -np.asarray(samples.sdf, dtype=np.float64)
    # Measured from the shallowest particle: a body thinner than 2r has its one layer at its middle,
    # less than r deep, and a coarse body (an open mesh) its outer layer deeper than r.
    keep = depth <= depth.min(initial=0.0) + (SHELL_DEPTH_RADII - 1.0) * float(radius) * (1.0 + 1e-6)
    faces = samples.faces()
    kept = InteriorSamples(samples.points[keep], samples.sdf[keep], samples.sdf_gradient[keep], faces[keep])
    return kept, float(keep.sum()) / max(len(keep), 1)
