# SPDX-License-Identifier: GPL-3.0-or-later
"""The particle model: everything about the particles and constraints that does not change per step.

Bodies append their parts (:meth:`ParticleModel.add_particles`, :meth:`~ParticleModel.add_rigid_body`,
:meth:`~ParticleModel.add_cloth_constraints`); :meth:`~ParticleModel.finalize` concatenates them into
frozen struct-of-arrays fields, as a Newton ``ModelBuilder`` turns into a ``Model``. Adding a body
after that un-freezes the model until the next ``finalize``. The time-varying part (positions,
velocities, rigid frames) is :class:`~unified_particles.core.state.ParticleState`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from .balloon import Balloons
from .bending import BendingConstraints
from .distance import DistanceConstraints, TetherSolver
from .rope_ties import RopeTies
from .shape_matching import ShapeMatching
from .soft import SoftClusters

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

# particle_kind values.
KIND_GRANULAR, KIND_RIGID, KIND_CLOTH, KIND_FLUID, KIND_SOFT, KIND_ROPE = 0, 1, 2, 3, 4, 5
# Rope particles this many links apart or fewer never collide with each other (core/rope.py): neighbours
# touch at rest (spacing 2r), and two links bent by more than 60 degrees bring i and i + 2 within 2r.
ROPE_SELF_EXCLUDED_LINKS = 2

# Per-particle parts every body appends (the rigid ones only rigid bodies do), by field name.
_PARTICLE_PARTS = (
    "inv_mass",
    "contact_inv_mass",
    "kind",
    "friction",
    "cohesion",
    "rolling_friction",
    "kinetic_friction",
    "sdf_depth",
    "sdf_normal",
    "viscosity",
    "fluid_cohesion",
    "adhesion",
    "vorticity",
    "radius",
    "damping",
)
# Fluid-only parts (zero for every other particle).
_FLUID_PARTS = ("viscosity", "fluid_cohesion", "adhesion", "vorticity")
_RIGID_PARTS = ("rigid_idx", "rigid_body", "rigid_rest", "rigid_mass", "rigid_faces")


class ParticleModel:
    """Static model of all particles: masses, materials, groups, rest shapes and constraint families.

    Frozen fields (valid after :meth:`finalize`; N particles, G collision groups, B rigid bodies):

    Attributes:
        particle_count: N.
        particle_inv_mass: (N,) inverse masses w = 1/m, 1/kg; 0 pins a particle.
        particle_contact_inv_mass: (N,) inverse masses used by contacts before mass scaling, 1/kg.
        particle_dynamic: (N,) bool, inverse mass > 0 (gravity and colliders move only these).
        particle_group: (N,) int64 collision group (one per body); same-group pairs never collide
            unless the group self-collides.
        particle_kind: (N,) int64, ``KIND_GRANULAR``, ``KIND_RIGID``, ``KIND_CLOTH``, ``KIND_FLUID`` or
            ``KIND_SOFT`` or ``KIND_ROPE``.
        particle_is_cloth: (N,) bool, kind is cloth.
        particle_is_fluid: (N,) bool, kind is fluid (``World.add_fluid``).
        particle_is_grain: (N,) bool, kind is granular (``World.add_granular``).
        particle_viscosity, particle_fluid_cohesion, particle_adhesion, particle_vorticity: (N,) fluid
            parameters (see :mod:`.fluid`; zero for other particles).
        any_fluid: some particle is fluid.
        particle_friction: (N,) Coulomb coefficient of each particle's surface.
        particle_cohesion: (N,) cohesion strength in [0, 1] (grains only; 0 elsewhere).
        particle_rolling_friction: (N,) rolling resistance coefficient (grains only; 0 elsewhere).
        particle_kinetic_friction: (N,) sliding (kinetic) coefficient of grain-grain contacts (grains;
            equal to ``particle_friction`` elsewhere, unused there).
        grain_kinetic: (``particle_kinetic_friction``, ``particle_is_grain``) for
            ``contacts.particle_contacts(kinetic=...)``, or None when every grain slides with its friction.
        damped_idx, damped_rate: (D,) particles with a velocity damping of their own and its rate, 1/s.
        particle_radius: (N,) each particle's radius, metres (its body's size: ``World.add_rigid(radius=...)``
            and the like; the world's radius by default). ``sizes.world_sizes`` gives the solver one float
            when they are all equal.
        particle_rest_q: (N, 3) positions at build time, metres (cloth self-collision exclusion).
        particle_sdf_depth: (N,) rigid particles: depth below the body's outer particle layer,
            metres; inf for other particles.
        particle_sdf_normal: (N, 3) rigid particles: outward SDF gradient in the body's build frame;
            0 for other particles.
        particle_rigid_body: (N,) rigid body number of each particle (0 for non-rigid ones, whose
            SDF normal is zero, so any body's rotation maps it to zero).
        group_self_collides: (G,) bool, particles of the group collide with each other.
        has_cohesion: any particle has cohesion > 0.
        has_rolling_friction: any particle has rolling_friction > 0.
        any_pairs: particle-particle contacts are possible (two groups, or one that self-collides).
        cloth_and_others: there is cloth and something that is not cloth.
        any_cloth_self: some cloth self-collides.
        any_rope_self: some rope self-collides (``ROPE_SELF_EXCLUDED_LINKS`` neighbours excluded).
        shape_matching: rigid particles' rest shapes and masses (None without rigid bodies).
        rigid_count: B.
        rigid_mass: (B,) total mass of each rigid body, kg.
        rigid_rest_center: (B, 3) each body's centre of mass at build time, metres.
        rigid_faces: (R, 3, 3) per rigid particle (``shape_matching.idx`` order), the outward
            directions of the up to three faces nearest to it, build frame, zero rows where fewer.
        stretch: cloth stretch/shear distance constraints (edges), graph-coloured.
        bend: cloth bending distance constraints (across adjacent triangles), Jacobi.
        tether: long-range attachments of pinned cloth (unilateral, one per free vertex).
        soft_pin_idx, soft_pin_compliance: (S,) soft-pinned particles and the XPBD compliance (m/N) of
            the zero-length spring holding each to its target (``World.add_cloth(soft_pins=...)``).
        soft: the soft bodies' clusters (:mod:`.soft`; None without soft bodies).
        balloons: the balloons' pressure constraints (:mod:`.balloon`; None without balloons).
        rope_links: (a, b, rest length, compliance) of every rope's links in order along each rope, for
            :mod:`.chain_solve` (None without ropes).
        rope_ties: ties of rope particles to rigid bodies (:mod:`.rope_ties`; None without ties).
    """

    def __init__(self) -> None:
        self.particle_count = 0
        self._parts: dict[str, list[Any]] = {
            k: [] for k in ("group", "rest", *_PARTICLE_PARTS, *_RIGID_PARTS)
        }
        self._group_self_collides: list[bool] = []
        self._rigid_mass: list[float] = []
        self._rigid_rest_center: list[FloatArray] = []
        self._stretch: list[DistanceConstraints] = []
        self._bend: list[DistanceConstraints] = []
        self._bend_iso: list[BendingConstraints] = []
        self._stretch_limits: list[DistanceConstraints] = []
        self._tethers: list[tuple[IntArray, IntArray, FloatArray]] = []
        self._soft_pins: list[tuple[IntArray, FloatArray]] = []
        self._soft: list[SoftClusters] = []
        self._balloons: list[Balloons] = []
        self._ties: list[RopeTies] = []
        self._rope_links: list[tuple[IntArray, IntArray, FloatArray, FloatArray]] = []
        self.built = False
        self.finalize()

    @property
    def rigid_count(self) -> int:
        """Number of rigid bodies B."""
        return len(self._rigid_mass)

    @property
    def soft_cluster_count(self) -> int:
        """Number of soft-body clusters added so far."""
        return sum(part.n_clusters for part in self._soft)

    # ------------------------------------------------------------------ builder
    def add_particles(
        self, x: FloatArray, group_self_collides: bool, **per_particle: Any
    ) -> tuple[IntArray, int]:
        """Append one body's particles in a new collision group.

        Args:
            x: (P, 3) build-time positions, metres.
            group_self_collides: the body's particles collide with each other.
            **per_particle: values of ``_PARTICLE_PARTS`` (scalars or (P, ...) arrays; ``radius`` in
                metres is required); ``sdf_depth``, ``sdf_normal`` and ``cohesion`` default to a non-rigid,
                non-cohesive particle.

        Returns:
            (indices (P,) of the new particles, group number).
        """
        n0 = self.particle_count
        n = len(x)
        idx = np.arange(n0, n0 + n, dtype=np.int64)
        group = len(self._group_self_collides)
        self._group_self_collides.append(group_self_collides)
        p = self._parts
        p["group"].append(np.full(n, group, np.int64))
        p["rest"].append(x.copy())
        defaults = {"sdf_depth": np.full(n, np.inf), "sdf_normal": np.zeros((n, 3)), "cohesion": np.zeros(n)}
        defaults["rolling_friction"] = np.zeros(n)  # grains only (contacts.rolling_resistance)
        defaults["damping"] = np.zeros(n)  # a body's own velocity damping, 1/s (hair)
        defaults["kinetic_friction"] = per_particle.get("friction", 0.0)  # grains' own (contacts._friction)
        defaults.update({key: np.zeros(n) for key in _FLUID_PARTS})
        for key in _PARTICLE_PARTS:
            value = np.asarray(per_particle[key] if key in per_particle else defaults[key])
            p[key].append(np.broadcast_to(value, (n, *value.shape[1:])).copy())
        self.particle_count = n0 + n
        self.built = False
        return idx, group

    def add_rigid_body(
        self,
        idx: IntArray,
        x: FloatArray,
        center: FloatArray,
        particle_mass: float,
        faces: FloatArray | None = None,
    ) -> int:
        """Make the particles ``idx`` at ``x`` (P, 3) one rigid body; returns its number.

        ``center`` (3,) is the rest centre of mass, ``particle_mass`` each particle's mass, kg;
        ``faces`` (P, 3, 3) the outward directions of the faces nearest each particle in the build
        frame (``geometry.InteriorSamples.sdf_faces``; zero rows where fewer), None for none.
        """
        number = self.rigid_count
        n = len(idx)
        p = self._parts
        p["rigid_idx"].append(idx)
        p["rigid_body"].append(np.full(n, number, np.int64))
        p["rigid_rest"].append(x - center)
        p["rigid_mass"].append(np.full(n, particle_mass))
        p["rigid_faces"].append(np.zeros((n, 3, 3)) if faces is None else np.asarray(faces, np.float64))
        self._rigid_mass.append(particle_mass * n)
        self._rigid_rest_center.append(center)
        self.built = False
        return number

    def add_cloth_constraints(
        self,
        stretch: DistanceConstraints,
        bend: DistanceConstraints | BendingConstraints,
        tether: tuple[IntArray, IntArray, FloatArray] | None,
        limit: DistanceConstraints | None = None,
    ) -> None:
        """Append one cloth's constraint families (global particle indices); ``bend`` is legacy distance
        bending or isometric bending (then ``limit``, its stretch limits); ``tether`` is (free vertices,
        their pins, maximum lengths in metres) or None."""
        self._stretch.append(stretch)
        if isinstance(bend, BendingConstraints):
            self._bend_iso.append(bend)
        else:
            self._bend.append(bend)
        if limit is not None:
            self._stretch_limits.append(limit)
        if tether is not None:
            self._tethers.append(tether)
        self.built = False

    def add_soft_pins(self, idx: IntArray, compliance: FloatArray) -> None:
        """Append soft pins: particles ``idx`` held to targets by zero-length springs of ``compliance``."""
        self._soft_pins.append((idx, compliance))
        self.built = False

    def add_rope_links(self, a: IntArray, b: IntArray, rest: FloatArray, compliance: FloatArray) -> None:
        """Append one rope's links in order along it (global indices, rest lengths in metres, compliance
        in m/N) for the direct chain solve (:mod:`.chain_solve`); they are in the stretch family too."""
        self._rope_links.append((a, b, rest, compliance))
        self.built = False

    def add_ties(self, ties: RopeTies) -> None:
        """Append one rope's ties to rigid bodies (global indices)."""
        self._ties.append(ties)
        self.built = False

    def add_deformable(self, part: SoftClusters | Balloons) -> None:
        """Append one soft body's clusters or one balloon's pressure constraint (global indices)."""
        if isinstance(part, SoftClusters):
            self._soft.append(part)
        else:
            self._balloons.append(part)
        self.built = False

    # ------------------------------------------------------------------ frozen arrays
    def finalize(self) -> None:
        """Concatenate the per-body parts into the frozen fields (no-op if nothing was added)."""
        if self.built:
            return
        p = self._parts

        def cat(key: str, empty_shape: tuple[int, ...], dtype: type = np.float64) -> Any:
            return np.concatenate(p[key]) if p[key] else np.zeros(empty_shape, dtype)

        n = self.particle_count
        self.particle_inv_mass: FloatArray = cat("inv_mass", (0,))
        self.particle_contact_inv_mass: FloatArray = cat("contact_inv_mass", (0,))
        self.particle_dynamic: BoolArray = self.particle_inv_mass > 0.0
        self.particle_group: IntArray = cat("group", (0,), np.int64)
        self.particle_kind: IntArray = cat("kind", (0,), np.int64)
        self.particle_friction: FloatArray = cat("friction", (0,))
        self.particle_cohesion: FloatArray = cat("cohesion", (0,))
        self.particle_rolling_friction: FloatArray = cat("rolling_friction", (0,))
        self.particle_kinetic_friction: FloatArray = cat("kinetic_friction", (0,))
        self.particle_radius: FloatArray = cat("radius", (0,))
        self.particle_rest_q: FloatArray = cat("rest", (0, 3))
        self.particle_sdf_depth: FloatArray = cat("sdf_depth", (0,))
        self.particle_sdf_normal: FloatArray = cat("sdf_normal", (0, 3))
        self.particle_viscosity: FloatArray = cat("viscosity", (0,))
        self.particle_fluid_cohesion: FloatArray = cat("fluid_cohesion", (0,))
        self.particle_adhesion: FloatArray = cat("adhesion", (0,))
        self.particle_vorticity: FloatArray = cat("vorticity", (0,))
        damping = cat("damping", (0,))
        self.damped_idx: IntArray = np.flatnonzero(damping > 0.0)
        self.damped_rate: FloatArray = damping[self.damped_idx]
        self.particle_is_fluid: BoolArray = self.particle_kind == KIND_FLUID
        self.any_fluid = bool(self.particle_is_fluid.any())
        self.group_self_collides: BoolArray = np.array(self._group_self_collides, dtype=bool)
        self.has_cohesion = bool(np.any(self.particle_cohesion > 0.0))
        self.has_rolling_friction = bool(np.any(self.particle_rolling_friction > 0.0))
        self.any_pairs = len(self.group_self_collides) > 1 or bool(np.any(self.group_self_collides))
        self.particle_is_cloth: BoolArray = self.particle_kind == KIND_CLOTH
        self.particle_is_grain: BoolArray = self.particle_kind == KIND_GRANULAR
        slides = self.particle_is_grain & (self.particle_kinetic_friction != self.particle_friction)
        self.grain_kinetic: tuple[FloatArray, BoolArray] | None = None
        self.grain_kinetic_ratio: FloatArray | None = None  # the same, on collider contacts
        if slides.any():
            self.grain_kinetic = (self.particle_kinetic_friction, self.particle_is_grain)
            fric = self.particle_friction
            self.grain_kinetic_ratio = np.where(
                self.particle_is_grain & (fric > 0.0),
                self.particle_kinetic_friction / np.maximum(fric, 1e-300),
                1.0,
            )
        # Grains that may touch grains (the solver's granular support pass runs only then).
        self.any_granular_pairs = self.any_pairs and int(np.count_nonzero(self.particle_is_grain)) > 1
        self.all_grains = bool(self.particle_is_grain.all())
        self.cloth_and_others = bool(self.particle_is_cloth.any()) and not bool(self.particle_is_cloth.all())
        self.any_cloth_self = bool(
            np.any(self.group_self_collides[self.particle_group[self.particle_kind == KIND_CLOTH]])
        )
        rope = self.particle_kind == KIND_ROPE
        self.any_rope_self = bool(np.any(self.group_self_collides[self.particle_group[rope]]))
        self.shape_matching: ShapeMatching | None = None
        if p["rigid_idx"]:
            self.shape_matching = ShapeMatching(
                cat("rigid_idx", (0,), np.int64),
                cat("rigid_body", (0,), np.int64),
                cat("rigid_rest", (0, 3)),
                cat("rigid_mass", (0,)),
                self.rigid_count,
            )
        # (R, 3, 3) per rigid particle (shape_matching.idx order): its nearest faces' outward
        # directions in the build frame (contacts try each, see contacts._rigid_normals).
        self.rigid_faces: FloatArray = cat("rigid_faces", (0, 3, 3))
        self.rigid_mass: FloatArray = np.array(self._rigid_mass)
        self.rigid_rest_center: FloatArray = np.array(self._rigid_rest_center).reshape(self.rigid_count, 3)
        self.particle_rigid_body: IntArray = np.zeros(n, np.int64)
        if self.shape_matching is not None:
            self.particle_rigid_body[self.shape_matching.idx] = self.shape_matching.body
        self.stretch = DistanceConstraints.concatenate(self._stretch, True, n)
        self.bend = DistanceConstraints.concatenate(self._bend, False, n)
        self.bend_isometric = BendingConstraints.concatenate(self._bend_iso)
        self.stretch_limit = DistanceConstraints.concatenate(self._stretch_limits, True, n)
        tether = [*self._tethers, (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))]
        self.tether = TetherSolver(*(np.concatenate([t[k] for t in tether]) for k in range(3)))
        soft = [*self._soft_pins, (np.zeros(0, np.int64), np.zeros(0))]
        self.soft_pin_idx: IntArray = np.concatenate([s[0] for s in soft])
        self.soft_pin_compliance: FloatArray = np.concatenate([s[1] for s in soft])
        self.soft = SoftClusters.concatenate(self._soft)
        self.balloons = Balloons.concatenate(self._balloons)
        self.rope_ties = RopeTies.concatenate(self._ties)
        self.rope_links: tuple[IntArray, IntArray, FloatArray, FloatArray] | None = None
        if self._rope_links:
            links = self._rope_links
            self.rope_links = (
                np.concatenate([c[0] for c in links]),
                np.concatenate([c[1] for c in links]),
                np.concatenate([c[2] for c in links]),
                np.concatenate([c[3] for c in links]),
            )
        self.built = True
