# SPDX-License-Identifier: GPL-3.0-or-later
"""Static and animated colliders: infinite planes and triangle meshes as signed distance volumes.

Colliders have infinite mass: a contact moves only the particle. Each collider reports contacts as
(particle index, outward normal, penetration depth, surface velocity); :func:`collider_corrections`
turns them into position corrections with Coulomb friction relative to the moving surface, so an
animated collider drags what rests on it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .errors import SimulationInputError
from .fastops import rotate_translate, rows_all
from .geometry import (
    SDF_MAX_CELLS,
    DeformingSurface,
    ExactSurface,
    SDFVolume,
    SegmentHits,
    as_vertices,
    exact_surface_crossings,
)

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

# The 8 corners of a grid cell, (a, b, c) in {0, 1}^3 in the order 4a + 2b + c.
# Poses (rotation, translation) kept per mesh collider, keyed by matrix: a frame needs two (its start
# and its target); beyond this many the cache is cleared (a bound, not a tuned value).
POSE_CACHE_SIZE = 4
# The interpolated SDF gradient has unit length away from the surface's medial ridges; where the
# trilinear blend of opposing gradients leaves it shorter than this, the normal is queried exactly.
WEAK_SDF_GRADIENT = 1e-3
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
_CORNERS = np.array([[a, b, c] for a in (0, 1) for b in (0, 1) for c in (0, 1)], dtype=np.int64)


@dataclass
class ColliderContacts:
    """Contacts of particles against colliders found in one solver step.

    Attributes:
        idx: (K,) particle indices (a particle may appear once per collider it touches).
        normal: (K, 3) unit outward surface normals, world frame.
        depth: (K,) penetration depth of the particle sphere, metres (> 0).
        velocity: (K, 3) velocity of the collider surface at the contact, m/s.
        friction: (K,) Coulomb friction coefficient of the collider side.
    """

    idx: IntArray
    normal: FloatArray
    depth: FloatArray
    velocity: FloatArray
    friction: FloatArray

    @staticmethod
    def concatenate(parts: list[ColliderContacts]) -> ColliderContacts:
        if not parts:
            z = np.zeros((0, 3))
            return ColliderContacts(np.zeros(0, np.int64), z, np.zeros(0), z.copy(), np.zeros(0))
        if len(parts) == 1:
            return parts[0]
        return ColliderContacts(
            np.concatenate([p.idx for p in parts]),
            np.concatenate([p.normal for p in parts]),
            np.concatenate([p.depth for p in parts]),
            np.concatenate([p.velocity for p in parts]),
            np.concatenate([p.friction for p in parts]),
        )


def collider_corrections(
    x_pred: FloatArray,
    x_prev: FloatArray | None,
    contacts: ColliderContacts,
    mu_static_scale: float,
    mu_kinetic_scale: float,
    particle_friction: FloatArray,
    h: float,
) -> FloatArray:
    """(K, 3) corrections for collider contacts: push out by the depth, then Coulomb friction.

    Non-penetration: dx = depth * n. Friction (paper Eq. 24-26 with an infinite-mass partner): the
    particle's tangential displacement relative to the surface, (x* - x) - v_surface h, is removed
    when it is below mu_s * depth (static) and otherwise shortened by mu_k * depth (kinetic). The
    pair coefficient is the mean of the particle's and the collider's friction.
    """
    n = contacts.normal
    # Near contacts (depth <= 0) get no push and, with zero depth, no friction either.
    dx = np.maximum(contacts.depth, 0.0)[:, None] * n
    if x_prev is None:
        return dx
    idx = contacts.idx
    mu = 0.5 * (particle_friction[idx] + contacts.friction)
    rel = (x_pred[idx] - x_prev[idx]) - contacts.velocity * h
    t = rel - np.einsum("ij,ij->i", rel, n)[:, None] * n
    tl = np.sqrt(np.einsum("ij,ij->i", t, t))
    pen = np.maximum(contacts.depth, 0.0)
    factor = np.where(
        (tl < mu_static_scale * mu * pen) & (pen > 0.0),
        1.0,
        np.minimum(mu_kinetic_scale * mu * pen / np.maximum(tl, 1e-300), 1.0),
    )
    return dx - t * factor[:, None]


def _as_point(value: ArrayLike, what: str) -> FloatArray:
    arr = np.asarray(value, dtype=np.float64)
    if arr.shape != (3,) or not np.all(np.isfinite(arr)):
        raise SimulationInputError(f"{what} must be 3 finite numbers, got {value!r}")
    return arr


def as_transform(matrix: ArrayLike, what: str = "transform") -> FloatArray:
    """Validate a 4x4 affine matrix (finite, invertible, last row 0 0 0 1)."""
    m = np.asarray(matrix, dtype=np.float64)
    if m.shape != (4, 4) or not np.all(np.isfinite(m)):
        raise SimulationInputError(f"{what} must be a finite 4x4 matrix, got shape {m.shape}")
    if not np.allclose(m[3], [0.0, 0.0, 0.0, 1.0]):
        raise SimulationInputError(f"{what} must be affine (last row 0 0 0 1), got {m[3]}")
    if abs(np.linalg.det(m[:3, :3])) < 1e-12:
        raise SimulationInputError(f"{what} is singular (zero scale on some axis)")
    return m.copy()


def polar(a: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Polar decomposition A = R S of a 3x3 matrix: R proper rotation, S symmetric (may mirror)."""
    u, _s, vt = np.linalg.svd(a)
    d = np.sign(np.linalg.det(u @ vt)) or 1.0
    fix = np.diag([1.0, 1.0, d])
    r = u @ fix @ vt
    return r, r.T @ a


def rotation_log(r: FloatArray) -> FloatArray:
    """Rotation vector (axis * angle, radians) of a 3x3 rotation matrix."""
    cos = np.clip((np.trace(r) - 1.0) * 0.5, -1.0, 1.0)
    angle = float(np.arccos(cos))
    w = np.array([r[2, 1] - r[1, 2], r[0, 2] - r[2, 0], r[1, 0] - r[0, 1]])
    if angle < 1e-9:
        return 0.5 * w
    return w * (angle / (2.0 * np.sin(angle))) if angle < np.pi - 1e-6 else _log_near_pi(r, angle)


def _log_near_pi(r: FloatArray, angle: float) -> FloatArray:
    b = 0.5 * (r + np.eye(3))
    k = int(np.argmax(np.diag(b)))
    axis = b[k] / np.sqrt(max(b[k, k], 1e-300))
    return np.asarray(axis / np.linalg.norm(axis) * angle, dtype=np.float64)


def rotation_exp(w: FloatArray) -> FloatArray:
    """Rotation matrix of a rotation vector (Rodrigues)."""
    angle = float(np.linalg.norm(w))
    if angle < 1e-12:
        return np.eye(3)
    k = w / angle
    kx = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.asarray(np.eye(3) + np.sin(angle) * kx + (1.0 - np.cos(angle)) * (kx @ kx), dtype=np.float64)


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


def plane_contacts(
    planes: list[PlaneCollider], x: FloatArray, radius: float, tolerance: float = 0.0
) -> ColliderContacts:
    """Contacts of all particles against all planes at once: (x - p) . n < r + tolerance.

    Near contacts (depth in (-tolerance, 0]) are reported too; they produce no correction.
    """
    normals = np.array([p.normal for p in planes])
    offsets = np.array([p.normal @ p.point for p in planes])
    # einsum, not `@`: a BLAS call for (N,3)x(3,P) is slow and spins threads on a busy machine.
    dist = np.einsum("ij,kj->ik", x, normals) - offsets
    hit_i, hit_p = np.nonzero(dist < radius + tolerance)
    depth = radius - dist[hit_i, hit_p]
    friction = np.array([p.friction for p in planes])[hit_p]
    normal = normals[hit_p]
    return ColliderContacts(hit_i.astype(np.int64), normal, depth, np.zeros_like(normal), friction)


def _volume_cell(cell_size: float | None, radius: float, extent: float) -> float:
    """The requested volume cell of a mesh ``extent`` metres long (default max(r, extent / 128))."""
    return cell_size if cell_size is not None else max(radius, extent / SDF_MAX_CELLS)


@dataclass
class _ContactPlan:
    surface: ExactSurface | None
    thinnest: float
    probe: ExactSurface  # the triangles, also when the volume answers: swept contacts use them


def _plan_contacts(
    vertices: FloatArray, faces: IntArray, radius: float, cell: float, extent: float
) -> _ContactPlan:
    """Exact contacts where the volume cannot resolve the mesh.

    ``cell`` is the requested volume cell; ``SDFVolume.from_mesh`` raises it so the padded box has at
    most ``SDF_MAX_CELLS`` cells per axis. Beyond one radius (the 128-cell cap on a big mesh, or a
    coarse ``cell_size``), or for a closed mesh with a part thinner than two cells (the volume's nodes
    straddle it), contacts are exact. ``thinnest`` is the thickness of a part thinner than the radius
    (0 for an open mesh with exact contacts, inf otherwise): the swept contacts test every fast path
    against such colliders, so thin walls and open sheets hold fast particles too
    (tests/core/test_tunnelling.py).
    """
    r = radius
    volume_cell = max(cell, (extent + 2.0 * (2.0 * r + 2.0 * cell)) / SDF_MAX_CELLS)
    surface = ExactSurface(vertices, faces, (EXACT_DEPTH_RADII + EXACT_MARGIN_RADII) * r)
    coarse = volume_cell > r * (1.0 + CELL_SLACK)
    if not (coarse or (surface.closed and math.isfinite(surface.thinnest(volume_cell)))):
        return _ContactPlan(None, math.inf, surface)
    if not surface.closed:
        return _ContactPlan(surface, 0.0, surface)
    return _ContactPlan(surface, surface.thinnest(0.5 * r), surface)


def _soup_faces(tri: FloatArray) -> IntArray:
    """Faces (k, 3) of a triangle soup (k, 3, 3) whose vertices are its corners in order."""
    return np.arange(tri.shape[0] * 3, dtype=np.int64).reshape(-1, 3)


def _check_friction(friction: float) -> float:
    f = float(friction)
    if not np.isfinite(f) or f < 0.0:
        raise SimulationInputError(f"friction must be a finite number >= 0, got {friction!r}")
    return f


@dataclass
class MeshCollider:
    """A triangle mesh collider (closed, or open if the SDF builder copes), possibly animated.

    The mesh is turned once into a signed distance volume in its own frame (``geometry.SDFVolume``).
    Where that volume cannot resolve the mesh (its cells, capped at ``SDF_MAX_CELLS`` per axis, are
    larger than the particle radius, or the mesh has parts thinner than two cells), contacts near the
    surface are exact instead: closest points on the triangles themselves (``geometry.ExactSurface``),
    signed by the closest feature's pseudo-normal, for particles within a band of the surface only.
    ``set_transform(M)`` moves it between steps; during a step the solver interpolates the rigid part
    of the motion over the substeps and gives the surface the velocity of that motion, which drags
    particles resting on it through friction. A change of scale rebuilds the volume.

    ``set_vertices(V)`` deforms it (same faces): from then on it is a deforming collider, whose contacts
    are always exact (``geometry.DeformingSurface``, rebinned each frame; no volume is built) on the
    vertices interpolated linearly across the frame's small steps, with the surface velocity of the
    vertices' motion (barycentric at the closest point) added to the rigid motion's.

    Swept contacts: a particle that moved more than ``SWEEP_MIN_RADII`` radii relative to the collider
    in a small step has its path (from its position at the step's start, in the collider's pose then,
    to its predicted position, in the pose at the step's end) tested against the triangles; where it
    crosses the surface (entering, for a closed mesh) it is held on the side it came from, one radius
    off the crossing point, instead of getting the contact at its end point.

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
    _sdf: object = None
    _lo: FloatArray = field(default_factory=lambda: np.zeros(3))
    _hi: FloatArray = field(default_factory=lambda: np.zeros(3))
    _exact: ExactSurface | None = field(default=None, init=False, repr=False)
    _probe: ExactSurface | None = field(default=None, init=False, repr=False)
    _deform: DeformingSurface | None = field(default=None, init=False, repr=False)
    _vertices_start: FloatArray | None = field(default=None, init=False, repr=False)
    _rest_vertices: FloatArray | None = field(default=None, init=False, repr=False)
    _deform_dirty: bool = field(default=False, init=False, repr=False)
    _deform_frame: int = field(default=0, init=False, repr=False)
    _deform_pairs: tuple[FloatArray, IntArray, IntArray, int] | None = field(
        default=None, init=False, repr=False
    )
    start_deforming: bool = field(default=False, repr=False)
    _pose_cache: dict[bytes, tuple[FloatArray, FloatArray]] = field(
        default_factory=dict, init=False, repr=False
    )
    exact_contacts: bool = field(default=False, init=False)
    thinnest: float = field(default=math.inf, init=False)

    def __post_init__(self) -> None:
        self._frame_start = self._transform.copy()
        if self.start_deforming:  # no volume: it deforms from the first frame on
            _, self._scale = polar(self._transform[:3, :3])
            self._pose_cache.clear()
            self.set_vertices(self.vertices)
            return
        self._build(self._transform)

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
        cell = _volume_cell(self.cell_size, self.radius, extent)
        plan = _plan_contacts(shape_vertices, faces, self.radius, cell, extent)
        self._exact = plan.surface
        self._probe = plan.probe
        self.exact_contacts = plan.surface is not None
        self.thinnest = plan.thinnest
        if self.exact_contacts:
            # The volume then only answers for particles deep inside: a coarse one does.
            cell = max(cell, extent / EXACT_VOLUME_CELLS)
        self._sdf = vol = SDFVolume.from_mesh(shape_vertices, faces, cell, 2.0 * self.radius + 2.0 * cell)
        self._dist_flat = np.asarray(vol.distance, dtype=np.float64).reshape(-1)
        # Gradient per coordinate, each contiguous, for the coordinate-major lookup.
        self._grad_xyz = np.ascontiguousarray(np.asarray(vol.gradient, dtype=np.float64).reshape(-1, 3).T)
        self._pose_cache.clear()
        self._near_cache: tuple[FloatArray, IntArray, float] | None = None
        self._pair_cache: tuple[FloatArray, IntArray, IntArray, float] | None = None
        self._scale = s
        pad = 2.0 * self.radius
        self._lo, self._hi = lo - pad, hi + pad

    @property
    def transform(self) -> FloatArray:
        """(4, 4) current object-to-world matrix (a copy)."""
        return self._transform.copy()

    def set_transform(self, matrix: ArrayLike) -> None:
        """Move the collider to ``matrix`` (4x4, object to world) by the end of the next step."""
        m = as_transform(matrix, "collider transform")
        _, s = polar(m[:3, :3])
        if not np.allclose(s, self._scale, rtol=1e-6, atol=1e-9):
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
            band = (DEFORM_DEPTH_RADII + DEFORM_MARGIN_RADII) * self.radius
            self._deform = DeformingSurface(self.vertices @ self._scale.T, self.faces, band)
            self._vertices_start = self.vertices
            self._rest_vertices = self.vertices
            self._exact = None
            self.exact_contacts = True
            self.thinnest = math.inf if self._deform.closed else 0.0
            self._sdf = None
            self._pair_cache = None
            self._near_cache = None
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
            self._pair_cache = None
        return surface

    def _pose(self, m: FloatArray) -> tuple[FloatArray, FloatArray]:
        key = m.tobytes()
        cached = self._pose_cache.get(key)
        if cached is None:
            r, _ = polar(m[:3, :3])
            cached = (r, m[:3, 3].copy())
            if len(self._pose_cache) > POSE_CACHE_SIZE:
                self._pose_cache.clear()
            self._pose_cache[key] = cached
        return cached

    def _pose_at(self, alpha: float) -> tuple[FloatArray, FloatArray]:
        """Rotation and translation at fraction ``alpha`` of the frame's rigid motion."""
        r0, t0 = self._pose(self._frame_start)
        r1, t1 = self._pose(self._transform)
        if np.array_equal(r0, r1) and np.array_equal(t0, t1):
            return r1, t1
        return r0 @ rotation_exp(alpha * rotation_log(r0.T @ r1)), t0 + alpha * (t1 - t0)

    def _surface_velocity(self, ql: FloatArray, dt_frame: float) -> FloatArray:
        """(K, 3) world velocity of the rigid motion at local points ``ql`` (zero at rest)."""
        r0, t0 = self._pose(self._frame_start)
        r1, t1 = self._pose(self._transform)
        if dt_frame <= 0.0 or (np.array_equal(r0, r1) and np.array_equal(t0, t1)):
            return np.zeros_like(ql)
        return rotate_translate(ql, (r1 - r0).T, t1 - t0) / dt_frame

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
        r0, t0 = self._pose(self._frame_start)
        r1, t1 = self._pose(self._transform)
        moving = not (np.array_equal(r0, r1) and np.array_equal(t0, t1))
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
            near = self._near_points(q, reach, cacheable=not moving)
            idx, depth, normal_local = self._query_contacts(q, near, reach)
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
        """Replace the contacts of particles whose path this small step crossed the surface."""
        rp, tp = self._pose_at(alpha_prev)
        q_prev = rotate_translate(x_prev, rp, -(tp @ rp))
        step = q - q_prev
        deform = self._update_deform() if self._deform is not None else None
        closed = deform.closed if deform is not None else self._probe is not None and self._probe.closed
        thick = closed and not math.isfinite(self.thinnest)
        limit = (SWEEP_CLOSED_MIN_RADII if thick else SWEEP_MIN_RADII) * self.radius
        step2 = np.einsum("ij,ij->i", step, step)
        fast_mask = step2 > limit * limit
        if thick and fast_mask.any():
            # Through a thick closed collider a path either ends in contact (then the contact is checked)
            # or is long enough to have passed its whole thickness (more than r + r + the >= r thickness).
            touching = np.zeros(len(q), dtype=bool)
            touching[found.idx] = True
            through = SWEEP_THROUGH_RADII * self.radius
            fast_mask &= touching | (step2 > through * through)
        if deform is not None and deform.max_vertex_travel() * (alpha - alpha_prev) > limit:
            # The surface itself moves fast: every particle near it is swept (relative to it).
            fast_mask |= rows_all((q >= deform.lo) & (q <= deform.hi))
        fast = np.flatnonzero(fast_mask)
        if fast.size == 0:
            return found
        hits: SegmentHits
        if deform is not None:
            hits = deform.crossings(q_prev, q, fast, alpha_prev, alpha)
        elif self._probe is not None:
            hits = exact_surface_crossings(self._probe, q_prev, q, fast)
        else:
            return found
        if hits.idx.size == 0:
            return found
        r, _ = self._pose_at(alpha)
        # Held one radius off the crossing point on the side the path came from.
        depth = self.radius - np.einsum("ij,ij->i", q[hits.idx] - hits.point, hits.normal)
        velocity = self._surface_velocity(hits.point, dt)
        if self._deform is not None and dt > 0.0:
            motion = self._deform.vertex_motion()[self._deform.faces[hits.tri]]
            velocity += (np.einsum("ij,ijk->ik", hits.bary, motion) / dt) @ r.T
        keep = ~np.isin(found.idx, hits.idx)
        swept = ColliderContacts(
            hits.idx, hits.normal @ r.T, depth, velocity, np.full(hits.idx.shape, self.friction)
        )
        kept = ColliderContacts(
            found.idx[keep], found.normal[keep], found.depth[keep], found.velocity[keep], found.friction[keep]
        )
        return ColliderContacts.concatenate([kept, swept])

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
        margin = DEFORM_MARGIN_RADII * r
        limit = max(reach, DEFORM_DEPTH_RADII * r) if surface.closed else reach
        limit = min(limit, surface.band - margin)
        cache = self._deform_pairs
        pairs: tuple[IntArray, IntArray] | None = None
        if cacheable and cache is not None and cache[0].shape == q.shape and cache[3] == self._deform_frame:
            moved = q - cache[0]
            far = np.flatnonzero(np.einsum("ij,ij->i", moved, moved) >= margin * margin)
            if far.size == 0:
                pairs = cache[1], cache[2]
            elif 4 * far.size < q.shape[0]:
                # Only the particles that moved beyond the margin look again (the others' pairs hold).
                ref = cache[0].copy()
                ref[far] = q[far]
                moved_far = np.zeros(q.shape[0], dtype=bool)
                moved_far[far] = True
                keep = ~moved_far[cache[1]]
                box = far[rows_all((q[far] >= surface.lo - margin) & (q[far] <= surface.hi + margin))]
                new_p, new_t = surface.candidates(q, box, limit + margin)
                pi = np.concatenate([cache[1][keep], new_p])
                order = np.argsort(pi, kind="stable")
                pairs = pi[order], np.concatenate([cache[2][keep], new_t])[order]
                self._deform_pairs = (ref, pairs[0], pairs[1], self._deform_frame)
        if pairs is None:
            inside = np.flatnonzero(rows_all((q >= surface.lo - margin) & (q <= surface.hi + margin)))
            pairs = surface.candidates(q, inside, limit + margin)
            self._deform_pairs = (q.copy(), pairs[0], pairs[1], self._deform_frame) if cacheable else None
        # This small step's pairs: those whose triangle may be within `limit` now (most of the margin's
        # shell drops out before the closest points are computed).
        pp, pt = surface.near_pairs(q, pairs[0], pairs[1], limit, alpha)
        ids, signed, normal, tri, bary = surface.nearest(q, alpha, pp, pt)
        hit = (np.abs(signed) <= limit) & (signed < reach)
        if dt_frame > 0.0:
            motion = surface.vertex_motion()[surface.faces[tri[hit]]]
            velocity = np.einsum("ij,ijk->ik", bary[hit], motion) / dt_frame
        else:
            velocity = np.zeros((int(hit.sum()), 3))
        return ids[hit], r - signed[hit], normal[hit], velocity

    def _exact_contacts(
        self, surface: ExactSurface, q: FloatArray, reach: float, cacheable: bool
    ) -> tuple[IntArray, FloatArray, FloatArray]:
        """Contacts from the closest points on the triangles (local frame): (idx, depth, local normal).

        Candidate (particle, triangle) pairs are searched within ``limit`` plus a margin, where ``limit``
        is ``reach`` outside and ``EXACT_DEPTH_RADII`` radii inside a closed mesh, and reused like
        ``_near_points`` while no particle moved more than the margin: every triangle within ``limit`` of
        a particle is then among its pairs, so a closest point found within ``limit`` is exact (and its
        side with it). Particles deeper inside a closed collider still get the volume's answer where it
        is unambiguous: a trilinear distance below -(reach + 2 sqrt(3) cells) is inside whatever the
        volume's error.
        """
        r = self.radius
        limit = max(reach, EXACT_DEPTH_RADII * r) if surface.closed else reach
        margin = EXACT_MARGIN_RADII * r
        if limit + margin > surface.band:
            band = limit + margin
            self._exact = surface = ExactSurface(surface.tri.reshape(-1, 3), _soup_faces(surface.tri), band)
        cache = self._pair_cache
        pairs: tuple[IntArray, IntArray] | None = None
        if cacheable and cache is not None and cache[0].shape == q.shape and cache[3] == limit:
            moved = q - cache[0]
            if float(np.einsum("ij,ij->i", moved, moved).max(initial=0.0)) < margin * margin:
                pairs = cache[1], cache[2]
        if pairs is None:
            inside = np.flatnonzero(rows_all((q >= surface.lo - margin) & (q <= surface.hi + margin)))
            pairs = surface.candidates(q, inside, limit + margin)
            self._pair_cache = (q.copy(), pairs[0], pairs[1], limit) if cacheable else None
        ids, signed, normal = surface.nearest(q, *pairs)
        trusted = np.abs(signed) <= limit
        hit = trusted & (signed < reach)
        idx, depth, normal = ids[hit], r - signed[hit], normal[hit]
        deep_reach = -(reach + 2.0 * 1.7321 * float(self._sdf.cell_size))  # type: ignore[attr-defined]
        if surface.closed and float(self._dist_flat.min()) < deep_reach:
            near = self._near_points(q, reach, cacheable)
            d_idx, d_depth, d_normal = self._query_contacts(q, near, deep_reach)
            new = ~np.isin(d_idx, ids[trusted])
            if new.any():
                idx = np.concatenate([idx, d_idx[new]])
                depth = np.concatenate([depth, d_depth[new]])
                normal = np.concatenate([normal, d_normal[new]])
        return idx, depth, normal

    def _near_points(self, q: FloatArray, reach: float, cacheable: bool) -> IntArray:
        """Indices of points that may be within ``reach`` of the surface (a superset, sorted).

        For a collider at rest the set is computed with an extra margin of one radius and reused
        while no point moved more than that margin since: most small steps then skip the bounding
        box and coarse SDF tests over all particles. Reuse cannot change results (the exact test
        follows), so the cache is not part of the world's state.
        """
        margin = self.radius
        cache = self._near_cache
        if cacheable and cache is not None and cache[0].shape == q.shape and cache[2] == reach:
            moved = q - cache[0]
            if float(np.einsum("ij,ij->i", moved, moved).max(initial=0.0)) < margin * margin:
                return cache[1]
        inside = rows_all((q >= self._lo - margin) & (q <= self._hi + margin))
        near = np.flatnonzero(inside)
        near = near[self._coarse_distance(q[near]) < reach + margin]
        self._near_cache = (q.copy(), near, reach) if cacheable else None
        return near

    def _coarse_distance(self, p: FloatArray) -> FloatArray:
        """A lower bound of the trilinear SDF at points ``p`` (local frame), from the nearest node.

        The trilinear value mixes the cell's 8 corners, none more than sqrt(3) cells from the
        nearest node, so it is >= node value - sqrt(3) cell.
        """
        vol = self._sdf
        shape = np.array(vol.distance.shape, dtype=np.int64)  # type: ignore[attr-defined]
        strides = np.array([shape[1] * shape[2], shape[2], 1], dtype=np.int64)
        cell = float(vol.cell_size)  # type: ignore[attr-defined]
        uc = np.clip((p - vol.origin) / cell, 0.0, (shape - 1).astype(np.float64))  # type: ignore[attr-defined]
        node = np.einsum("ij,j->i", np.rint(uc).astype(np.int64), strides)
        return np.asarray(self._dist_flat.take(node) - 1.7321 * cell, dtype=np.float64)

    def _query_contacts(
        self, q: FloatArray, near: IntArray, reach: float
    ) -> tuple[IntArray, FloatArray, FloatArray]:
        """Trilinear SDF lookup of the points ``q[near]`` (local frame); only those closer than ``reach``.

        Same interpolation as ``SDFVolume.query`` but with one flat ``take`` of the 8 cell corners and
        normals only for the few points in contact (the volume's own query is used where the
        interpolated gradient vanishes). The arithmetic is coordinate-major, on (3, k) and (8, k)
        arrays: NumPy 1.26 handles those 1.5x faster than (k, 3) and (k, 8) rows (see ``fastops``).
        Returns (idx, depth, local normal).
        """
        vol = self._sdf
        if near.size == 0:
            return np.zeros(0, np.int64), np.zeros(0), np.zeros((0, 3))
        shape = np.array(vol.distance.shape, dtype=np.int64)  # type: ignore[attr-defined]
        strides = np.array([shape[1] * shape[2], shape[2], 1], dtype=np.int64)
        cell = float(vol.cell_size)  # type: ignore[attr-defined]
        pt = np.take(q, near, axis=0).T  # (3, k)
        u = (pt - vol.origin[:, None]) * (1.0 / cell)  # type: ignore[attr-defined]
        uc = np.minimum(np.maximum(u, 0.0), (shape - 1).astype(np.float64)[:, None])
        # uc >= 0, so truncation is the floor.
        base = np.minimum(uc.astype(np.int64), (shape - 2)[:, None])
        f = uc - base
        g = 1.0 - f
        idx = base[0] * strides[0] + base[1] * strides[1] + base[2]
        idx8 = idx[None, :] + (_CORNERS @ strides)[:, None]  # (8, k), corner (a, b, c) at 4a + 2b + c
        wxy = np.stack([g[0] * g[1], g[0] * f[1], f[0] * g[1], f[0] * f[1]])
        w8 = np.empty((8, len(idx)))
        w8[0::2] = wxy * g[2]
        w8[1::2] = wxy * f[2]
        dist = (w8 * self._dist_flat.take(idx8)).sum(axis=0)
        offset = (u - uc) * cell
        outside = np.sqrt(offset[0] * offset[0] + offset[1] * offset[1] + offset[2] * offset[2])
        out = outside > 0.0
        dist = np.where(out, outside + np.maximum(dist, 0.0), dist)
        hit = np.flatnonzero(dist < reach)
        i8, wh = idx8[:, hit], w8[:, hit]
        grad = np.stack([(wh * self._grad_xyz[c].take(i8)).sum(axis=0) for c in range(3)])
        length = np.sqrt(grad[0] * grad[0] + grad[1] * grad[1] + grad[2] * grad[2])
        weak = length < WEAK_SDF_GRADIENT
        normal = (grad / np.where(weak, 1.0, length)).T
        if weak.any():
            normal[weak] = vol.query(pt.T[hit[weak]])[1]  # type: ignore[attr-defined]
        oh = out[hit]
        if oh.any():
            normal[oh] = (offset[:, hit[oh]] / outside[hit[oh]]).T
        return near[hit].astype(np.int64), self.radius - dist[hit], normal

    @property
    def frame_start(self) -> FloatArray:
        """(4, 4) object-to-world matrix at the start of the current frame (a copy)."""
        return self._frame_start.copy()

    def end_frame(self) -> None:
        """The frame is over: the next one starts where this one's target pose left the collider."""
        self._frame_start = self._transform.copy()
        if self._deform is not None:
            self._vertices_start = self.vertices
            self._deform_dirty = True

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
        self.vertices = np.array(current, dtype=np.float64, copy=True)
        self._deform_dirty = True

    def restore_pose(self, transform: FloatArray, frame_start: FloatArray) -> None:
        """Put the collider back to a snapshot's pose (``World.set_state``)."""
        self.set_transform(transform)
        self._frame_start = np.array(frame_start, dtype=np.float64, copy=True)


def deforming_vertices(meshes: list[MeshCollider]) -> FloatArray:
    """(2 V, 3) each deforming collider's vertices at the frame's start, then now, in order (snapshots)."""
    parts = [np.concatenate([m.frame_start_vertices, m.vertices]) for m in meshes if m.deforming]
    return np.concatenate(parts) if parts else np.zeros((0, 3))


def restore_deforming_vertices(meshes: list[MeshCollider], saved: FloatArray) -> None:
    """Put back what :func:`deforming_vertices` saved. A snapshot that does not match (taken before a
    collider began to deform, e.g. the start frame's) puts every deforming collider back to the mesh it
    was built with, at rest."""
    deforming = [m for m in meshes if m.deforming]
    if saved.shape != (sum(2 * len(m.vertices) for m in deforming), 3):
        for m in deforming:
            m.restore_vertices(m.rest_vertices, m.rest_vertices)
        return
    at = 0
    for m in deforming:
        n = len(m.vertices)
        m.restore_vertices(saved[at : at + n], saved[at + n : at + 2 * n])
        at += 2 * n
