# SPDX-License-Identifier: GPL-3.0-or-later
"""Triangle mesh colliders (``MeshCollider``): a distance volume, exact or deforming surface in the collider's
frame, its pose interpolated across a frame's small steps, and swept contacts for fast particles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .. import colliders
from ..errors import SimulationInputError
from ..fastops import rotate_translate
from ..geometry import SDFVolume, as_vertices
from ..pair_cache import PairCache
from ..rotations import polar
from . import sweeps
from .contacts import ColliderContacts
from .deforming import DeformingSurface
from .exact import ExactSurface, plan_contacts, soup_faces, volume_cell
from .poses import FrameMotion, as_transform, scale_changed
from .volume import VolumeContacts

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@dataclass
class MeshCollider:
    """A triangle mesh collider (closed, or open if the SDF builder copes), possibly animated.

    The mesh is turned once into a signed distance volume in its own frame (``SDFVolume``).
    Where that volume cannot resolve the mesh (its cells, capped at ``SDF_MAX_CELLS`` per axis, are
    larger than the particle radius, or the mesh has parts thinner than two cells), contacts near the
    surface are exact instead: closest points on the triangles themselves (:class:`ExactSurface`),
    signed by the closest feature's pseudo-normal, for particles within a band of the surface only.
    ``set_transform(M)`` moves it between steps; during a step the solver interpolates the rigid part
    of the motion over the substeps and gives the surface the velocity of that motion, which drags
    particles resting on it through friction. A change of scale rebuilds the volume.

    ``set_vertices(V)`` deforms it (same faces): from then on it is a deforming collider, whose contacts
    are always exact (:class:`DeformingSurface`, rebinned each frame; no volume is built) on the
    vertices interpolated linearly across the frame's small steps, with the surface velocity of the
    vertices' motion (barycentric at the closest point) added to the rigid motion's.

    Swept contacts (``sweeps``): a particle that moved more than ``SWEEP_MIN_RADII`` radii relative to
    the collider in a small step and crossed its surface is held on the side it came from.

    Use :meth:`World.add_collider_mesh` to create one.

    Attributes set when the collider is built (and rebuilt on a change of scale):
        exact_contacts: True when contacts come from the triangles, not the volume.
        thinnest: estimated thickness, metres, of the mesh's thinnest part where it is thinner than
            the particle radius (exact contacts only; 0 for an open mesh), else inf. Such colliders
            have every fast path swept against them.
    """

    vertices: FloatArray
    faces: IntArray
    friction: float
    radius: float
    cell_size: float | None = None
    name: str | None = None
    _transform: FloatArray = field(default_factory=lambda: np.eye(4))
    _frame_start: FloatArray = field(default_factory=lambda: np.eye(4))
    _scale: FloatArray = field(default_factory=lambda: np.eye(3))
    _volume: VolumeContacts | None = field(default=None, init=False, repr=False)
    _exact: ExactSurface | None = field(default=None, init=False, repr=False)
    _probe: ExactSurface | None = field(default=None, init=False, repr=False)
    _deform: DeformingSurface | None = field(default=None, init=False, repr=False)
    _vertices_start: FloatArray | None = field(default=None, init=False, repr=False)
    _rest_vertices: FloatArray | None = field(default=None, init=False, repr=False)
    _deform_dirty: bool = field(default=False, init=False, repr=False)
    _deform_frame: int = field(default=0, init=False, repr=False)
    # Pair lists reused while particles stay near where they were searched (see the methods that use them).
    _near_cache: PairCache = field(default_factory=PairCache, init=False, repr=False)
    _pair_cache: PairCache = field(default_factory=PairCache, init=False, repr=False)
    _deform_pairs: PairCache = field(default_factory=PairCache, init=False, repr=False)
    start_deforming: bool = field(default=False, repr=False)
    _poses: FrameMotion = field(default_factory=FrameMotion, init=False, repr=False)  # poses.py
    exact_contacts: bool = field(default=False, init=False)
    thinnest: float = field(default=math.inf, init=False)

    def __post_init__(self) -> None:
        self._frame_start = self._transform.copy()
        if self.start_deforming:  # no volume: it deforms from the first frame on
            _, self._scale = polar(self._transform[:3, :3])
            self._poses.clear()
            self.set_vertices(self.vertices)
            return
        self._build(self._transform)

    def fit_radius(self, radius: float) -> None:
        """Reach at least ``radius`` m (the largest of several particle sizes, ``collider_set``): the
        volume rebuilt once, or a deforming surface's band grown (rebinned at the next contacts)."""
        if radius > self.radius:
            self.radius = float(radius)
            band = (colliders.DEFORM_DEPTH_RADII + colliders.DEFORM_MARGIN_RADII) * self.radius
            if self._deform is None:
                self._build(self._transform)
            else:
                self._deform.band, self._deform_dirty = band, True

    def _build(self, m: FloatArray) -> None:
        _, s = polar(m[:3, :3])
        if self._deform is not None:
            # A deforming collider has no volume: its surface takes the new scale at the next contacts.
            self._scale = s
            self._deform_dirty = True
            return
        shape_vertices = self.vertices @ s.T
        faces = self.faces if np.linalg.det(s) > 0 else self.faces[:, ::-1].copy()
        lo = shape_vertices.min(axis=0)
        hi = shape_vertices.max(axis=0)
        extent = float(np.max(hi - lo))
        cell = volume_cell(self.cell_size, self.radius, extent)
        plan = plan_contacts(shape_vertices, faces, self.radius, cell, extent)
        self._exact = plan.surface
        self._probe = plan.probe
        self.exact_contacts = plan.surface is not None
        self.thinnest = plan.thinnest
        if self.exact_contacts:
            # The volume then only answers for particles deep inside: a coarse one does.
            cell = max(cell, extent / colliders.EXACT_VOLUME_CELLS)
        vol = SDFVolume.from_mesh(shape_vertices, faces, cell, 2.0 * self.radius + 2.0 * cell)
        self._poses.clear()
        self._near_cache.reset()
        self._pair_cache.reset()
        self._scale = s
        pad = 2.0 * self.radius
        self._volume = VolumeContacts(vol, lo - pad, hi + pad, self.radius)

    @property
    def _sdf(self) -> SDFVolume | None:
        """The distance volume in the collider's frame (None for a deforming collider)."""
        return None if self._volume is None else self._volume.sdf

    @property
    def transform(self) -> FloatArray:
        """(4, 4) current object-to-world matrix (a copy)."""
        return self._transform.copy()

    def set_transform(self, matrix: ArrayLike) -> None:
        """Move the collider to ``matrix`` (4x4, object to world) by the end of the next step."""
        m = as_transform(matrix, "collider transform")
        _, s = polar(m[:3, :3])
        if scale_changed(s, self._scale):
            self._build(m)
        self._transform = m

    @property
    def deforming(self) -> bool:
        """True once :meth:`set_vertices` was called: contacts follow the changing mesh."""
        return self._deform is not None

    def set_vertices(self, vertices: ArrayLike) -> None:
        """Deform the collider: ``vertices`` (V, 3), in its own frame like the constructor's (same count,
        same faces), by the end of the next step.

        Across the step's small steps the vertices move linearly from the frame's start (the previous
        call's vertices, or the constructor's) to these, and the surface's velocity is that motion over
        the frame, so friction carries what rests on it. The first call turns the collider into a
        deforming one (exact contacts, no distance volume; ``exact_contacts`` becomes True).
        """
        v = as_vertices(vertices)
        if v.shape != self.vertices.shape:
            raise SimulationInputError(
                f"set_vertices needs {self.vertices.shape[0]} vertices (the collider's, same faces), "
                f"got {v.shape[0]}; for a new topology add a new collider"
            )
        if self._deform is None:
            band = (colliders.DEFORM_DEPTH_RADII + colliders.DEFORM_MARGIN_RADII) * self.radius
            self._deform = DeformingSurface(self.vertices @ self._scale.T, self.faces, band)
            self._vertices_start = self.vertices
            self._rest_vertices = self.vertices
            self._exact = None
            self.exact_contacts = True
            self.thinnest = math.inf if self._deform.closed else 0.0
            self._volume = None
            self._pair_cache.reset()
            self._near_cache.reset()
        self.vertices = v.copy()
        self._deform_dirty = True

    def _update_deform(self) -> DeformingSurface:
        surface = self._deform
        assert surface is not None
        assert self._vertices_start is not None
        if self._deform_dirty:
            s = self._scale
            surface.set_frame(self._vertices_start @ s.T, self.vertices @ s.T)
            self._deform_dirty = False
            self._deform_frame += 1
            self._pair_cache.reset()
        return surface

    def _motion(self) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray, bool]:
        """The frame's poses and whether it moves (``poses.FrameMotion.motion``)."""
        return self._poses.motion(self._frame_start, self._transform)

    def _pose_at(self, alpha: float) -> tuple[FloatArray, FloatArray]:
        """Rotation and translation at fraction ``alpha`` of the frame's rigid motion."""
        return self._poses.at(self._frame_start, self._transform, alpha)

    def _surface_velocity(self, ql: FloatArray, dt_frame: float) -> FloatArray:
        """(K, 3) world velocity of the rigid motion at local points ``ql`` (zero at rest)."""
        return self._poses.surface_velocity(self._frame_start, self._transform, ql, dt_frame)

    def contacts(
        self,
        x: FloatArray,
        alpha: float,
        dt_frame: float,
        tolerance: float = 0.0,
        x_prev: FloatArray | None = None,
        h: float = 0.0,
    ) -> ColliderContacts:
        """Contacts at fraction ``alpha`` (0..1] of the frame's motion from frame start to target.

        Points closer than r + tolerance are reported (depth may be down to -tolerance). With
        ``x_prev`` (positions at the start of the small step of length ``h``) fast particles also get
        swept contacts (see the class).
        """
        moving = self._motion()[4]
        r, t = self._pose_at(alpha)
        q = rotate_translate(x, r, -(t @ r))  # (x - t) R: world to local
        reach = self.radius + tolerance
        deform_velocity: FloatArray | None = None
        if self._deform is not None:
            surface = self._update_deform()
            idx, depth, normal_local, deform_velocity = self._deforming_contacts(
                surface, q, alpha, reach, dt_frame, cacheable=not moving
            )
        elif self._exact is not None:
            idx, depth, normal_local = self._exact_contacts(self._exact, q, reach, cacheable=not moving)
        else:
            assert self._volume is not None
            near = self._volume.near_points(q, reach, self._near_cache, not moving)  # superset, sorted
            idx, depth, normal_local = self._volume.contacts(q, near, reach)
        normal = normal_local @ r.T
        velocity = self._surface_velocity(q[idx], dt_frame)
        if deform_velocity is not None:
            velocity += deform_velocity @ r.T
        friction = np.full(idx.shape, self.friction)
        found = ColliderContacts(idx, normal, depth, velocity, friction)
        if x_prev is None or h <= 0.0 or dt_frame <= 0.0:
            return found
        return self._swept(found, x_prev, q, alpha, max(alpha - h / dt_frame, 0.0), dt_frame)

    def _swept(
        self,
        found: ColliderContacts,
        x_prev: FloatArray,
        q: FloatArray,
        alpha: float,
        alpha_prev: float,
        dt: float,
    ) -> ColliderContacts:
        """Replace the contacts of particles whose path this small step crossed the surface (``sweeps``)."""
        rp, tp = self._pose_at(alpha_prev)
        q_prev = rotate_translate(x_prev, rp, -(tp @ rp))
        deform = self._update_deform() if self._deform is not None else None
        hits = sweeps.crossed_paths(
            found.idx, q_prev, q, self.radius, self.thinnest, deform, self._probe, alpha_prev, alpha
        )
        if hits is None or hits.idx.size == 0:
            return found
        r, _ = self._pose_at(alpha)
        velocity = self._surface_velocity(hits.point, dt)
        if deform is not None and dt > 0.0:
            velocity += deform.velocity(hits.tri, hits.bary, dt) @ r.T
        return sweeps.hold_crossed(found, hits, q, r, velocity, self.radius, self.friction)

    def _deforming_contacts(
        self,
        surface: DeformingSurface,
        q: FloatArray,
        alpha: float,
        reach: float,
        dt_frame: float,
        cacheable: bool,
    ) -> tuple[IntArray, FloatArray, FloatArray, FloatArray]:
        """Exact contacts on the deforming surface at ``alpha`` (local frame).

        Returns (idx, depth, local normal, local surface velocity of the deformation). Candidate pairs
        come from the frame's swept triangle boxes within ``limit`` plus a margin (``limit`` as in
        ``_exact_contacts``) and are reused within the frame while no particle moved more than the
        margin, so every triangle that comes within ``limit`` of a particle during the frame is among
        its pairs.
        """
        r = self.radius
        margin = colliders.DEFORM_MARGIN_RADII * r
        limit = max(reach, colliders.DEFORM_DEPTH_RADII * r) if surface.closed else reach
        limit = min(limit, surface.band - margin)
        pairs = surface.cached_candidates(q, limit, margin, self._deform_pairs, self._deform_frame, cacheable)
        # This small step's pairs: those whose triangle may be within `limit` now (most of the margin's
        # shell drops out before the closest points are computed).
        pp, pt = surface.near_pairs(q, pairs[0], pairs[1], limit, alpha)
        ids, signed, normal, tri, bary = surface.nearest(q, alpha, pp, pt)
        hit = (np.abs(signed) <= limit) & (signed < reach)
        if dt_frame > 0.0:
            velocity = surface.velocity(tri[hit], bary[hit], dt_frame)
        else:
            velocity = np.zeros((int(hit.sum()), 3))
        return ids[hit], r - signed[hit], normal[hit], velocity

    def _exact_contacts(
        self, surface: ExactSurface, q: FloatArray, reach: float, cacheable: bool
    ) -> tuple[IntArray, FloatArray, FloatArray]:
        """Contacts from the closest points on the triangles (local frame): (idx, depth, local normal).

        Candidate (particle, triangle) pairs are searched within ``limit`` plus a margin, where ``limit``
        is ``reach`` outside and ``EXACT_DEPTH_RADII`` radii inside a closed mesh, and reused like the
        volume's near points while no particle moved more than the margin: every triangle within ``limit`` of
        a particle is then among its pairs, so a closest point found within ``limit`` is exact (and its
        side with it). Particles deeper inside a closed collider still get the volume's answer where it
        is unambiguous: a trilinear distance below -(reach + 2 sqrt(3) cells) is inside whatever the
        volume's error.
        """
        r = self.radius
        limit = max(reach, colliders.EXACT_DEPTH_RADII * r) if surface.closed else reach
        margin = colliders.EXACT_MARGIN_RADII * r
        if limit + margin > surface.band:
            band = limit + margin
            self._exact = surface = ExactSurface(surface.tri.reshape(-1, 3), soup_faces(surface.tri), band)
        pairs = surface.cached_candidates(q, limit, margin, self._pair_cache, cacheable)
        ids, signed, normal = surface.nearest(q, *pairs)
        trusted = np.abs(signed) <= limit
        hit = trusted & (signed < reach)
        idx, depth, normal = ids[hit], r - signed[hit], normal[hit]
        volume = self._volume
        assert volume is not None
        deep_reach = -(reach + 2.0 * 1.7321 * float(volume.sdf.cell_size))
        if surface.closed and float(volume.dist_flat.min()) < deep_reach:
            near = volume.near_points(q, reach, self._near_cache, cacheable)
            d_idx, d_depth, d_normal = volume.contacts(q, near, deep_reach)
            new = ~np.isin(d_idx, ids[trusted])
            if new.any():
                idx = np.concatenate([idx, d_idx[new]])
                depth = np.concatenate([depth, d_depth[new]])
                normal = np.concatenate([normal, d_normal[new]])
        return idx, depth, normal

    @property
    def frame_start(self) -> FloatArray:
        """(4, 4) object-to-world matrix at the start of the current frame (a copy)."""
        return self._frame_start.copy()

    def end_frame(self) -> None:
        """The frame is over: the next one starts where this one's target pose left the collider."""
        self._frame_start = self._transform.copy()
        if self._deform is not None:
            self._vertices_start, self._deform_dirty = self.vertices, True

    @property
    def frame_start_vertices(self) -> FloatArray:
        """(V, 3) the vertices at the start of the current frame (a deforming collider's; a copy)."""
        start = self._vertices_start if self._vertices_start is not None else self.vertices
        return start.copy()

    @property
    def rest_vertices(self) -> FloatArray:
        """(V, 3) the vertices the collider was built with (a copy)."""
        rest = self._rest_vertices if self._rest_vertices is not None else self.vertices
        return rest.copy()

    def restore_vertices(self, frame_start: FloatArray, current: FloatArray) -> None:
        """Put a deforming collider's vertices back to a snapshot's (``World.set_state``)."""
        self._vertices_start = np.array(frame_start, dtype=np.float64, copy=True)
        self.vertices, self._deform_dirty = np.array(current, dtype=np.float64, copy=True), True

    def restore_pose(self, transform: FloatArray, frame_start: FloatArray) -> None:
        """Put the collider back to a snapshot's pose (``World.set_state``)."""
        self.set_transform(transform)
        self._frame_start = np.array(frame_start, dtype=np.float64, copy=True)
