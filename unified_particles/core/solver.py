# SPDX-License-Identifier: GPL-3.0-or-later
"""The solver step (Macklin et al. 2014, Algorithm 1) and its passes, over a model and a state.

:meth:`Solver.small_step` is the algorithm, numbered as in docs/physics.md. Each constraint family
is a pure function in its own module (contacts, colliders, shape_matching, distance; the contact pass
in ``contact_pass``); this module finds the candidates, applies the Jacobi-averaged corrections and
handles restitution and sleeping; blow-ups are detected by ``divergence``. The model
(:class:`~.model.ParticleModel`) is read only; the state (:class:`~.state.ParticleState`) is advanced
in place.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from . import depenetration
from .air import Air
from .cloth_load import carry_loads
from .cloth_triangles import ClothTriangles
from .collider_set import ColliderSet
from .colliders import ColliderContacts
from .colliders.body_hold import hold_rigid_bodies_out
from .contact_mass import scaled_contact_inv_mass
from .contact_pass import RESTITUTION_REST_STEPS, cloth_contact_pass, contact_pass, rigid_sdf_world
from .contact_pass import TOUCH_TOLERANCE_RADII as TOUCH_TOLERANCE_RADII  # re-exported (tests, docs)
from .contacts import COHESION_RANGE_RADII, FacesFn
from .corrections import clamp_speed, rigid_impulse
from .depenetration import Depenetration
from .face_plan import ChunkFacePlans
from .fastops import column_max, column_min, rows_all
from .fields import FieldSystem
from .fluid import FluidSolver
from .fluid_hold import hold_fluid_out
from .grain_support import SupportSweep
from .joints import JointSystem
from .kinematic import KinematicFrame
from .model import ParticleModel
from .neighbors import find_pairs, pairs_touching
from .pair_cache import PairCache
from .pair_filter import filter_pairs
from .parallel import resolve_threads
from .pins import PinMotion, SoftPinMotion
from .projection import DistanceSolver, distance_solvers, renew_coarse
from .rest_check import RestCheck
from .rigid_support import BodySupport
from .settings import SolverSettings
from .sizes import Radius, is_uniform, largest, pair_reach, refresh_sized, sized_candidates, world_sizes
from .sleep import Wake, all_asleep, sleep_rigid_bodies, sleeping_rows, tied_bodies
from .state import ParticleState
from .struck import (
    bound_rebound,
    hold_grains_out_at_end,
    struck_contacts,
)
from .sweep import limit_fast_paths
from .tearing import TearSystem

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

# Neighbour candidates are refreshed particle by particle while at most this fraction of the particles
# moved beyond half the margin; beyond it a full search costs less (measured on the S4 grain blocks).
INCREMENTAL_MAX_FRACTION = 0.25
# A refresh also renews the particles past this fraction of the limit (they would trigger the next one):
# fewer, larger refreshes (S4-100k median 700 -> 618 ms here against renewing only those past the limit).
REFRESH_AHEAD = 0.5
# Below this many particles a full search is cheap: the refresh's per-call overhead does not pay.
INCREMENTAL_MIN_PARTICLES = 20_000
SIZED_REFRESH = (REFRESH_AHEAD, INCREMENTAL_MAX_FRACTION, INCREMENTAL_MIN_PARTICLES, COHESION_RANGE_RADII)
# Distance solvers are cached per small-step size h; a few frame rates at most are in use at once.
DISTANCE_SOLVER_CACHE_SIZE = 8


class Solver:
    """Advances a :class:`ParticleState` under a :class:`ParticleModel`, colliders and settings.

    Owns the colliders (:attr:`colliders`, a :class:`~.collider_set.ColliderSet`: ``World`` adds to it)
    and what is derived from the model and reused across steps: the neighbour candidates (within
    2r + margin, a :class:`PairCache` whose reference positions are all a snapshot keeps of it) and the
    distance-constraint solvers per step size. Call :meth:`invalidate` when the model changed.
    """

    def __init__(
        self,
        model: ParticleModel,
        settings: SolverSettings,
        radius: float,
        margin: float,
        gravity: FloatArray,
    ) -> None:
        self.model = model
        self.settings = settings
        self.radius = radius
        self.margin = margin
        self.gravity = gravity
        self._g_norm = (gravity.tobytes(), float(np.linalg.norm(gravity)))  # |g| asked every small step
        self.colliders = ColliderSet()
        self.candidates = PairCache()
        self._solver_cache: dict[float, list[DistanceSolver]] = {}
        self.kinematic: KinematicFrame | None = None  # this frame's kinematic bodies (begin_frame)
        self.pin_motion: PinMotion | None = None  # this frame's moving pins (World.set_pin_targets)
        self.soft_pin_motion: SoftPinMotion | None = None  # this frame's soft pin anchors (World.step)
        self._dynamic: BoolArray | None = None  # particle_dynamic without kinematic particles
        self._rigid: BoolArray | None = None  # the rigid particles (_rigid_mask)
        self._rigid_row: IntArray | None = None  # particle -> row of the rigid arrays (_rigid_sdf_world)
        self._rigid_faces_t = np.zeros((9, 0))  # model.rigid_faces, (3F, R) coordinate-major
        self._sdf_normal_t = np.zeros((3, 0))  # model.particle_sdf_normal, (3, N) coordinate-major
        self.fields: FieldSystem | None = None  # force fields (World.add_force_field)
        self.cloth_triangles: ClothTriangles | None = None  # cloth triangles loads rest on (World.add_cloth)
        self.air: Air | None = None  # cloth triangles that feel the air (World.add_cloth(air_viscosity=))
        self.fluid: FluidSolver | None = None  # the fluid passes (model.any_fluid), made on first use
        self.joints: JointSystem | None = None  # joints between rigid bodies (World.add_joint)
        self.tearing: TearSystem | None = None  # tearing cloth (World.add_cloth(tear_strain=), tearing.py)
        self._inactive = np.zeros(0, np.int64)  # this frame's inactive particles (begin_frame)
        self.depen: Depenetration | None = None  # bodies overlapping at the start (depenetration.py)
        self.collider_push = np.zeros(0)  # (K,) m, each collider contact's push this small step (struck.py)
        self.last_word = False  # a moving collider touched something this small step (struck.py)
        self._sizes: tuple[Radius, Radius] | None = None
        self.grain_support = SupportSweep()  # the grain support pass (grain_support.py)
        self.body_support = BodySupport()  # then the bodies resting on grains (rigid_support.py)
        self.face_plans = ChunkFacePlans()  # the contact pass's coarse faces, per chunk (face_plan.py)
        self.soft_gain: FloatArray | None = None  # (N,) soft particles' contact gain (soft.py)
        self.rest = RestCheck()  # a small step that changed nothing ends the frame (rest_check.py)
        self.field_pushed: BoolArray | None = None  # (N,) particles a force field pushed (sleep.Wake)
        self._tied: dict[str, object] = {}  # the bodies in joints or rope ties (sleep.tied_bodies)

    def invalidate(self) -> None:
        """The model changed (bodies added): drop the candidates and the cached distance solvers."""
        self.candidates.reset()
        self._solver_cache = {}
        self.kinematic, self._dynamic, self.fluid = None, None, None
        self._rigid_row, self._rigid, self.depen, self._sizes = None, None, None, None

    @property
    def g_norm(self) -> float:
        """|g|, m/s^2, kept while the gravity vector is unchanged (np.linalg.norm is ~10 us a call)."""
        key = self.gravity.tobytes()
        if key != self._g_norm[0]:
            self._g_norm = (key, float(np.linalg.norm(self.gravity)))
        return self._g_norm[1]

    @property
    def sizes(self) -> tuple[Radius, Radius]:
        """(radius, margin): floats for one size, else (N,) per particle (``sizes.world_sizes``)."""
        self._sizes = self._sizes or world_sizes(self.model.particle_radius, self.radius, self.margin)
        return self._sizes

    def ensure_built(self) -> None:
        """Freeze the model if bodies were added to it; what was derived from it is then derived anew."""
        if not self.model.built:
            self.model.finalize()
            self.invalidate()
            if self.tearing is not None:  # torn cloth's masses, on the new arrays
                self.tearing.apply(self.model)

    def fluid_solver(self) -> FluidSolver | None:
        """The fluid passes for this model (None without fluid), made on first use."""
        model = self.model
        if self.fluid is None and model.any_fluid:
            self.fluid = FluidSolver(
                self.radius,
                self.margin,
                model.particle_is_fluid,
                model.particle_viscosity,
                model.particle_fluid_cohesion,
                model.particle_adhesion,
                model.particle_vorticity,
                self.colliders,
                model.particle_inv_mass,
            )
            self.fluid.threads = resolve_threads(self.settings.threads)
        return self.fluid

    def activity_changed(self) -> None:
        """Particles were activated or removed (``Fluid.emit`` / ``remove``): rebuild the pair lists."""
        self.candidates.reset()
        if self.fluid is not None:
            self.fluid.reset()

    # ------------------------------------------------------------------ the step
    def small_step(
        self, state: ParticleState, h: float, alpha: float, dt_frame: float, stabilize: bool
    ) -> None:
        """One small step of Macklin et al. 2014, Algorithm 1 (with one solver iteration).

        ``h`` is the small step, s; ``alpha`` the fraction of the frame reached at its end (mesh
        colliders interpolate their motion by it); ``dt_frame`` the frame's length, s.
        """
        s, model = self.settings, self.model
        x, v = state.positions, state.velocities
        r, margin = self.sizes
        kin = self.kinematic  # this frame's kinematic rigid bodies (begin_frame): infinite mass
        inactive = self._inactive  # free fluid slots (begin_frame)
        active = state.active if len(inactive) else None  # None: every particle is live
        if stabilize:  # the frame's first small step: do its small steps all see the same inputs?
            self.rest.frame_qualifies(self)
            if s.rigid_sleep_threshold > 0.0 and all_asleep(model, state, h):
                stabilize = False  # it would move nothing (sleep.all_asleep)
        self.rest.before_step(state, stabilize)
        # 1. External forces, damping, speed limit; predict positions x*.
        self._apply_external_forces(state, h, alpha, dt_frame)
        x_pred = x + h * v
        x_kin = self._prescribe(x, x_pred, alpha)  # kinematic bodies, moving pins, free fluid slots
        if model.any_pairs:  # fast particles never jump through each other (swept, see sweep.py)
            movable = model.particle_dynamic if self._dynamic is None else self._dynamic
            limit_fast_paths(x, x_pred, r, model.particle_group, model.group_self_collides, movable, model)
        # 2. Mass scaling for stacks: lower particles are heavier in contacts (shock propagation).
        w_contact, self.soft_gain = scaled_contact_inv_mass(model, s, self.gravity, state, x_pred, h)
        if kin is not None:  # kinematic: immovable in every contact (a copy: w may be the model's array)
            w_contact = w_contact.copy()
            w_contact[kin.idx] = 0.0
        # 3. Neighbour candidates with a margin, reused while motion stays within it.
        pair_i, pair_j = self._candidates(x_pred, active, None if kin is not None else state.rigid_rotation)
        # 4. Stabilization: contacts only, on x, moving x and x* alike (no energy added).
        if stabilize:
            self._stabilize(state, x_pred, pair_i, pair_j, w_contact, alpha, dt_frame, h)
        # 5. Solver iteration over the constraint families, each Jacobi-averaged or coloured.
        found_at = x_pred.copy() if model.shape_matching is not None else x_pred  # (colliders/body_hold.py)
        _, touching, col = self._contact_pass(
            state, x_pred, x, pair_i, pair_j, w_contact, alpha, dt_frame, h, apply=True
        )
        found = self.colliders.found  # every contact within the touch tolerance (body_hold.py)
        fluid, w_fluid = self.fluid_solver(), None
        if fluid is not None:  # density constraints (PBF), before shape matching and the cloth solves
            w_fluid = self._fluid_density_pass(fluid, x, x_pred, active, alpha, dt_frame, h)
        if model.shape_matching is not None:
            rot_prev = state.rigid_rotation  # the bodies' rotations at the step's start, for the joints
            self._solve_shape_matching(state, x_pred, touching)
            if self.joints is not None:  # on the shape-matched poses (core/joints.py)
                self.joints.solve(model, state, x, x_pred, rot_prev, h, r)
            # Colliders keep the last word: no body is fitted back into one (colliders/body_hold.py).
            self._hold_bodies_out(x_pred, found_at, found, alpha, dt_frame, x, h)
        if model.soft is not None:  # soft bodies' overlapping clusters, plastic flow (core/soft.py)
            model.soft.solve(x_pred, state.soft_rest, h, model.particle_inv_mass)
        if model.balloons is not None:  # balloons' volume (core/balloon.py), before the stretch solve
            model.balloons.solve(x_pred, state.balloon_inflation, h, model.particle_inv_mass)
        if self.soft_pin_motion is not None:
            self._solve_soft_pins(self.soft_pin_motion, x_pred, alpha, h)
        if len(model.tether):
            # Pinned cloth: no vertex farther from its pin than the cloth allows (long-range
            # attachments). Before the edges, which then smooth what the tethers pulled.
            model.tether.solve(x_pred)
        for solver in renew_coarse(self._distance_solvers(h), alpha, s):  # (cloth_coarse.py)
            solver.solve(x_pred)
        if model.rope_ties is not None:  # ropes tied to rigid bodies, on their poses (core/rope_ties.py)
            model.rope_ties.solve(model, state, x_pred, h)
        held = None
        if model.cloth_and_others:
            soft = carry_loads(self, state, x_pred, pair_i, pair_j, w_contact, h)  # true masses: cloth_load
            # Cloth contacts get the last word (see there): the stretch solve just undid them.
            held = cloth_contact_pass(self, state, x_pred, pair_i, pair_j, w_contact, soft)
        if kin is not None:  # kinematic: exactly on its path (shape matching nudged it by rounding)
            x_pred[kin.idx] = x_kin
        grain = model.particle_is_grain if self._dynamic is None else model.particle_is_grain & self._dynamic
        if s.shock_propagation > 0.0 and model.any_granular_pairs:
            every_pair = model.all_grains and self._dynamic is None
            self.grain_support(x, x_pred, pair_i, pair_j, grain, every_pair, r, self.gravity)
            if model.shape_matching is not None and np.ndim(r):  # coarse bodies on fine grains
                sdf = self._rigid_sdf_world(state)
                scales = (s.static_friction_scale, s.dynamic_friction_scale)
                self.body_support(x, x_pred, pair_i, pair_j, grain, r, sdf, model, self.gravity, scales)  # type: ignore[arg-type]
        if self.last_word:  # moving colliders, infinite mass: the last word over grains (struck.py)
            hold_grains_out_at_end(self.colliders, x_pred, r, alpha, dt_frame, grain, x, h)
        if self.colliders.meshes:  # nothing was carried through an open mesh (colliders/sides.py)
            self.colliders.keep_sides(x, x_pred, alpha, max(alpha - h / dt_frame, 0.0), self._movable(), r)
        # 6. Velocity update, restitution, sleeping; commit positions.
        # Kinematic pairs a push may have just parted (struck.py): 2r + margin, per pair with several sizes.
        sized_kin = kin is not None and not is_uniform(r)
        reach = pair_reach(model, np.asarray(margin)) if sized_kin else 2.0 * largest(r) + largest(margin)
        struck = None  # without restitution only moving surfaces strike (struck.py); planes never move
        if s.restitution > 0.0 or kin is not None or len(self.colliders.meshes):
            struck = struck_contacts(
                x_pred, v, col, self.collider_push, s.restitution, kin, pair_i, pair_j, reach, model
            )
        v[...] = (x_pred - x) / h
        if held is not None:  # the held pass stops loads, never pushes them off (cloth_contacts.py)
            v[held[0]] -= held[1] / h
        # Bodies overlapping where they were built separate at most this fast (depenetration.py).
        self.depen = depenetration.apply(
            self.depen, s.max_depenetration_speed, model, r, v, x, pair_i, pair_j
        )
        if struck is not None:  # no surface throws what it strikes faster than it moves (restitution aside)
            rest_speed = RESTITUTION_REST_STEPS * self.g_norm * h
            bound_rebound(v, struck, s.restitution, rest_speed, h, model, kin)
        if fluid is not None and w_fluid is not None:
            self._fluid_velocity_pass(fluid, v, x_pred, w_fluid, h, alpha)
            pushed = self.field_pushed if self.fields is not None else None
            fluid.settle(x, x_pred, v, self.g_norm * h, pushed)  # calm, liquid at rest sleeps
        if len(inactive):
            v[inactive] = 0.0
            x_pred[inactive] = x[inactive]
        if s.sleep_threshold > 0.0:
            self._sleep(state, x_pred, touching)
        if s.rigid_sleep_threshold > 0.0 and model.shape_matching is not None:  # islands at rest (sleep.py)
            kin_bodies = None if kin is None else state.rigid_kinematic
            wake = Wake(col.idx, col.velocity, self.field_pushed, tied_bodies(model, self.joints, self._tied))
            sleep_rigid_bodies(
                model, state, x_pred, s.rigid_sleep_threshold, h, pair_i, pair_j, kin_bodies, wake
            )
        x[...] = x_pred
        self.rest.after_step(state)

    # ------------------------------------------------------------------ 1. forces and prediction
    def _apply_external_forces(self, state: ParticleState, h: float, alpha: float, dt_frame: float) -> None:
        """v += h g on dynamic particles, force fields, damping exp(-damping h), the speed limit."""
        s, model, v = self.settings, self.model, state.velocities
        for axis in range(3):  # column by column: see fastops on (N, 3) broadcasting
            if self.gravity[axis] != 0.0:
                v[:, axis] += (h * self.gravity[axis]) * model.particle_dynamic
        wind, air = None, None if self.air is None else self.air.vertices(len(v))
        if self.fields is not None:  # force fields (core/fields.py): v += h f_field / m; wind on air cloth
            # A field wakes what it pushes (sleep.Wake) and keeps it from the liquid's calm (fluid_calm.py).
            before = v.copy() if s.rigid_sleep_threshold > 0.0 or model.any_fluid else None
            wind = self.fields.apply(state, model, h, alpha * dt_frame, air)
            self.field_pushed = None if before is None else np.any(v != before, axis=1)
        if self.air is not None:  # drag and lift of the air, still or wind (core/air.py, wind_air.py)
            self.air.apply(state.positions, v, model.particle_inv_mass, h, wind)
        if s.damping > 0.0:
            v *= np.exp(-s.damping * h)
        if len(model.damped_idx):  # bodies' own damping (hair), 1/s
            v[model.damped_idx] *= np.exp(-h * model.damped_rate)[:, None]
        if np.isfinite(s.max_speed):
            clamp_speed(v, s.max_speed)

    def _prescribe(self, x: FloatArray, x_pred: FloatArray, alpha: float) -> FloatArray | None:
        """Put the particles whose motion is given, not solved, where they are at fraction ``alpha`` of the
        frame in ``x_pred``: kinematic bodies on their path, moving pins on their line, free fluid slots
        where they are. Returns the kinematic particles' positions (None without kinematic bodies)."""
        kin = self.kinematic
        x_kin = kin.positions(alpha) if kin is not None else None
        if kin is not None:
            x_pred[kin.idx] = x_kin
        pins = self.pin_motion
        if pins is not None:  # pinned vertices ride on their animation (World.set_pin_targets)
            x_pred[pins.idx] = pins.start + alpha * pins.travel
        inactive = self._inactive
        if len(inactive):  # fluid slots not emitted yet or removed: held where they are
            x_pred[inactive] = x[inactive]
        return x_kin

    # ------------------------------------------------------------------ 4. stabilization
    def _stabilize(
        self,
        state: ParticleState,
        x_pred: FloatArray,
        pair_i: IntArray,
        pair_j: IntArray,
        w_contact: FloatArray,
        alpha: float,
        dt_frame: float,
        h: float,
    ) -> None:
        """``stabilization_iterations`` contact passes on x (no friction), each applied to x and x*."""
        x, kin, sm = state.positions, self.kinematic, self.model.shape_matching
        asleep = sleeping_rows(self.model, state, h) if self.settings.rigid_sleep_threshold > 0.0 else None
        # Colliders in their pose at the step's start, where x is (at the end pose, a moving face swallowed
        start = max(alpha - h / dt_frame, 0.0)
        for _ in range(int(self.settings.stabilization_iterations)):
            dx, touching, _ = self._contact_pass(
                state, x, None, pair_i, pair_j, w_contact, start, dt_frame, h
            )  # the grains resting on it and pushed them out of its back: issue 24, item 8)
            found = self.colliders.found
            moved = x + dx
            if sm is not None:
                # Keep rigid bodies rigid in x too, else the shift shows up as velocity.
                sm.add_to(moved, self._rigid_goals(moved, touching)[0])
                # As in the solve (body_hold.py); no friction here, as in the contacts (x_start = moved).
                self._hold_bodies_out(moved, x, found, start, dt_frame, moved, 0.0)
            if self.colliders.meshes:  # nothing carried through an open mesh (colliders/sides.py)
                self.colliders.keep_sides(x, moved, start, start, self._movable(), self.sizes[0])
            if kin is not None:
                moved[kin.idx] = x[kin.idx]
            if asleep is not None:  # a sleeping body stays where it sleeps (sleep.sleeping_rows)
                moved[asleep] = x[asleep]
            x_pred += moved - x
            x[...] = moved

    def _hold_bodies_out(
        self,
        x: FloatArray,
        found_at: FloatArray,
        found: tuple[ColliderContacts, float | FloatArray],
        alpha: float,
        dt_frame: float,
        x_start: FloatArray,
        h: float,
    ) -> None:
        """No rigid body ends the small step in a collider, ``x`` in place (``colliders.body_hold``)."""
        sm = self.model.shape_matching
        if sm is not None and self.colliders.has_open_meshes():  # planes, closed meshes: push out
            held, r, body = (
                self._rigid_mask() & self._movable(),
                self.sizes[0],
                self.model.particle_rigid_body,
            )
            mu = (
                self.model.particle_friction,
                self.settings.static_friction_scale,
                self.settings.dynamic_friction_scale,
            )
            hold_rigid_bodies_out(
                self.colliders, x, found_at, found, r, alpha, dt_frame, held, body, sm, x_start, h, mu
            )

    def _movable(self) -> BoolArray:
        """(N,) the particles a correction may move: dynamic, not kinematic (pins have zero mass)."""
        return self.model.particle_dynamic if self._dynamic is None else self._dynamic

    # ------------------------------------------------------------------ 5. fluid density, soft pins
    def _fluid_density_pass(
        self,
        fluid: FluidSolver,
        x: FloatArray,
        x_pred: FloatArray,
        active: BoolArray | None,
        alpha: float,
        dt_frame: float,
        h: float,
    ) -> FloatArray:
        """Density constraints (PBF): fluid against fluid and solids, before shape matching and the cloth
        solves so that pushed bodies stay rigid and cloth keeps its length. Returns the inverse masses
        the fluid's pair corrections were split by (the velocity pass uses them too)."""
        w_fluid = self._fluid_inv_mass()
        sm = self.model.shape_matching
        before = x_pred[sm.idx] if sm is not None else None
        passes = int(self.settings.liquid_density_passes)  # after the first, over liquid near rest only
        fluid.solve_density(x_pred, w_fluid, active, alpha, passes, x, self.g_norm * h * h)
        # Unlike liquids trade places (fluid_mix.py), over this small step's own pairs: none are kept from
        # the step before, so a world restored from a snapshot exchanges as the straight run did.
        fluid.drift(x, x_pred, self.model.particle_inv_mass, self.gravity, h)
        if sm is not None and before is not None:
            # What the fluid gave each rigid particle moves its whole body (rigid_impulse).
            x_pred[sm.idx] = before + rigid_impulse(sm, before, x_pred[sm.idx] - before)
        # Fluid the density solve pushed into a collider goes back onto its surface (fluid_hold.py).
        hold_fluid_out(self.colliders, x_pred, self.sizes[0], alpha, dt_frame, self.model)
        return w_fluid

    def _solve_soft_pins(self, soft: SoftPinMotion, x_pred: FloatArray, alpha: float, h: float) -> None:
        """Soft pins: XPBD zero-length springs to the anchors, C = |x - a|; one iteration per small step,
        so dx = -w / (w + compliance / h^2) (x - a) (lambda starts at zero each step)."""
        w = self.model.particle_inv_mass[soft.idx]
        gap = x_pred[soft.idx] - (soft.start + alpha * soft.travel)
        x_pred[soft.idx] -= (w / (w + soft.compliance / (h * h)))[:, None] * gap

    # ------------------------------------------------------------------ 6. fluid velocities, sleeping
    def _fluid_velocity_pass(
        self,
        fluid: FluidSolver,
        v: FloatArray,
        x_pred: FloatArray,
        w_fluid: FloatArray,
        h: float,
        alpha: float,
    ) -> None:
        """Viscosity, cohesion, adhesion, vorticity (velocity level), once per substep (every `iterations`
        small steps) over that step's pairs: the velocity pass costs about as much as the density solve,
        and velocities need no iterations."""
        s = self.settings
        per_pass = int(s.iterations)
        step_number = round(alpha * int(s.substeps) * per_pass)  # 1-based within the frame
        if step_number % per_pass != 0:
            return
        sm = self.model.shape_matching
        v_rigid = v[sm.idx] if sm is not None else None
        fluid.velocity_pass(v, w_fluid, h * per_pass, per_pass)
        if sm is not None and v_rigid is not None:
            v[sm.idx] = v_rigid + rigid_impulse(sm, x_pred[sm.idx], v[sm.idx] - v_rigid)

    def _sleep(self, state: ParticleState, x_pred: FloatArray, touching: BoolArray) -> None:
        """Particles slower than ``sleep_threshold`` that rest on something stay at x for this small step
        (kinematic bodies and moving pins never sleep)."""
        x, v = state.positions, state.velocities
        asleep = self._resting(state, touching) & (
            np.einsum("ij,ij->i", v, v) < self.settings.sleep_threshold**2
        )
        if self.kinematic is not None:
            asleep &= ~self.kinematic.mask  # a kinematic body moves with its target, never sleeps
        if self.pin_motion is not None:
            asleep[self.pin_motion.idx] = False  # a moving pin never sleeps
        v[asleep] = 0.0
        x_pred[asleep] = x[asleep]

    def update_rigid_frames(self, state: ParticleState) -> None:
        """Mass-weighted fit of the final positions: the rotation and centre behind ``transform``."""
        sm = self.model.shape_matching
        if sm is None:
            return
        rot, c, _ = sm.fit(state.positions, sm.mass)
        if self.joints is not None:  # joined bodies keep the joint solve's fit (see joints.FIT_BIAS)
            rot = self.joints.keep_rotations(state.rigid_rotation, rot)
        kin = self.kinematic
        if kin is not None:  # exactly the target pose (the fit would differ in the last bits)
            rot[kin.bodies], c[kin.bodies] = kin.end_rotation, kin.end_center
        state.rigid_rotation, state.rigid_center = rot, c

    def _fluid_inv_mass(self) -> FloatArray:
        """Inverse masses that split fluid pair corrections: the particles' own (a rigid particle's share
        then moves its whole body, see rigid_impulse), zero for kinematic bodies and pins."""
        w = self.model.particle_inv_mass
        if self.kinematic is not None:
            w = w.copy()
            w[self.kinematic.idx] = 0.0
        return w

    # ------------------------------------------------------------------ kinematic rigid bodies
    def begin_frame(self, state: ParticleState) -> None:
        """Before a frame's small steps: the path of every kinematic rigid body over the frame, from
        its pose now to ``state.rigid_target`` (see :mod:`.kinematic`), and the inactive particles."""
        sm, model = self.model.shape_matching, self.model
        self.kinematic, self._dynamic = None, None
        self.refresh_inactive(state, model.any_fluid or self.tearing is not None)  # fluid slots, tear spares
        if sm is None or not state.rigid_kinematic.any():
            return
        self.kinematic = KinematicFrame.begin(
            state.rigid_kinematic,
            state.rigid_rotation,
            state.rigid_center,
            state.rigid_target,
            model.rigid_rest_center,
            sm.idx,
            sm.body,
            sm.rest,
            model.particle_count,
        )
        if self.kinematic is not None:
            self._dynamic = model.particle_dynamic & ~self.kinematic.mask

    def refresh_inactive(self, state: ParticleState, live: bool = True) -> None:
        """List the particles the small steps hold (``state.active`` False; none unless ``live``)."""
        self._inactive = np.flatnonzero(~state.active) if live else np.zeros(0, np.int64)

    # ------------------------------------------------------------------ 3. neighbours
    def _candidates(
        self, x: FloatArray, active: BoolArray | None = None, rotation: FloatArray | None = None
    ) -> tuple[IntArray, IntArray]:
        """Candidate pairs within 2r + margin (r_i + r_j + (m_i + m_j) / 2 with several sizes, sizes.py;
        coarse faces' pairs cut at the bodies' ``rotation``, face_slab.py),
        kept while every particle stays within margin / 2 of its reference, refreshed for those that moved.

        The list is every pair whose *reference* positions are closer than the cutoff, in (i, j) order.
        Two particles each within margin/2 of their references (relative to a common shift) cannot have
        closed a gap of more than the margin, so every pair that can touch now is listed. When only some
        moved farther (a pile settling while a few grains still fall), only their references are renewed
        and their pairs searched again; the list stays a pure function of the references (snapshots).
        """
        nb, margin = self.candidates, self.sizes[1]
        if not self.model.any_pairs:
            return nb.i, nb.j
        if nb.holds_for(x):
            if not is_uniform(margin):  # several sizes: kept, refreshed or searched anew (sizes.py)
                kept = refresh_sized(
                    nb, x, self.model, margin, active, self._filter_candidates, SIZED_REFRESH, rotation
                )
                if kept is not None:
                    return kept
            elif nb.within_half_spread(x, float(margin)):  # type: ignore[arg-type]
                return nb.i, nb.j
            elif active is None and len(x) >= INCREMENTAL_MIN_PARTICLES:
                # Per particle, about the median shift c (most particles resting, or most falling
                # together): those farther than margin/2 from it get the reference x - c, which puts
                # them back at the shift c, and their pairs are searched again. Those past half the
                # limit are renewed too: they would trigger the next refresh.
                shifted = nb.beyond_median_shift(x, float(margin), REFRESH_AHEAD)  # type: ignore[arg-type]
                if shifted is None:
                    return nb.i, nb.j
                c, far = shifted
                if len(far) <= INCREMENTAL_MAX_FRACTION * len(x):
                    nb.reference[far] = x[far] - c
                    nb.i, nb.j = self._refresh_candidates(nb, far)
                    return nb.i, nb.j
        i, j = self.build_candidates(x, active, rotation)
        nb.store(x.copy(), i, j)
        return i, j

    def _cutoff(self) -> float:
        r = largest(self.sizes[0])  # one size here (several: sizes.sized_candidates' own cutoffs)
        cohesion = COHESION_RANGE_RADII * r if self.model.has_cohesion else 0.0
        return 2.0 * r + largest(self.sizes[1]) + cohesion

    def _refresh_candidates(self, nb: PairCache, far: IntArray) -> tuple[IntArray, IntArray]:
        """The candidate list after the references of ``far`` changed: the pairs without a far particle
        (unchanged), merged in (i, j) order with those of the far particles searched again."""
        ref = nb.reference
        n = len(ref)
        is_far = np.zeros(n, dtype=bool)
        is_far[far] = True
        keep = ~(is_far[nb.i] | is_far[nb.j])
        old_key = nb.i[keep] * n + nb.j[keep]
        cutoff = self._cutoff()
        # Only the particles whose references lie near the far ones can pair with them.
        rf = ref[far]
        lo, hi = column_min(rf) - cutoff, column_max(rf) + cutoff
        near = np.flatnonzero(rows_all((ref >= lo) & (ref <= hi)))
        i, j = pairs_touching(ref[near], np.flatnonzero(is_far[near]), cutoff)
        i, j = self._filter_candidates(near[i], near[j])
        new_key = np.sort(i * n + j)
        key = np.insert(old_key, np.searchsorted(old_key, new_key), new_key)
        return key // n, key % n

    def build_candidates(
        self, x: FloatArray, active: BoolArray | None = None, rotation: FloatArray | None = None
    ) -> tuple[IntArray, IntArray]:
        """Candidate pairs for reference positions x (among ``active`` particles, None: all), in (i, j)
        order: a pure function of x, the activity and the model, so a snapshot needs to keep only x to
        rebuild the identical list (same order, same sums); with several sizes, coarse faces' pairs cut at
        ``rotation`` (``face_slab``: out of reach either way, so the same sums)."""
        model = self.model
        threads = resolve_threads(self.settings.threads)  # same pairs with any count (parallel.py)
        cutoff = self._cutoff()
        if not is_uniform(self.sizes[0]):  # several sizes: searched by size class (sizes.py)
            margin = np.asarray(self.sizes[1])  # (N,) with several sizes
            cache, coh = self.candidates, COHESION_RANGE_RADII
            i, j = sized_candidates(x, model, margin, coh, active, threads, rotation, cache)
        elif active is not None and not active.all():
            live = np.flatnonzero(active)
            i, j = find_pairs(x[live], cutoff, model.particle_group[live], model.group_self_collides, threads)
            i, j = live[i], live[j]
        else:
            i, j = find_pairs(x, cutoff, model.particle_group, model.group_self_collides, threads)
        i, j = self._filter_candidates(i, j, groups_checked=True)
        # (i, j) order, the order _refresh_candidates keeps: the list then depends only on its set.
        n = len(x)
        key = np.sort(i * n + j)
        return key // n, key % n

    def _filter_candidates(
        self, i: IntArray, j: IntArray, groups_checked: bool = False
    ) -> tuple[IntArray, IntArray]:
        """The pairs that can ever touch (``pair_filter.filter_pairs``)."""
        return filter_pairs(self.model, self.sizes[0], self.joints, i, j, groups_checked)

    # ------------------------------------------------------------------ 4., 5. contacts
    def _contact_pass(
        self,
        state: ParticleState,
        x_pred: FloatArray,
        x_prev: FloatArray | None,
        pair_i: IntArray,
        pair_j: IntArray,
        w_contact: FloatArray,
        alpha: float,
        dt_frame: float,
        h: float,
        apply: bool = False,
    ) -> tuple[FloatArray, BoolArray, ColliderContacts]:
        """Collider then particle contacts (``contact_pass.contact_pass``, where the Args are)."""
        return contact_pass(self, state, x_pred, x_prev, pair_i, pair_j, w_contact, alpha, dt_frame, h, apply)

    def _rigid_mask(self) -> BoolArray:
        """(N,) bool: the rigid particles (finite depth below their body's outer layer), cached."""
        if self._rigid is None:
            self._rigid = np.isfinite(self.model.particle_sdf_depth)
        return self._rigid

    def _rigid_sdf_world(
        self, state: ParticleState
    ) -> tuple[FloatArray | None, Callable[[IntArray], FloatArray] | None, FacesFn | None]:
        """Rigid particles' SDF depth, world normals and faces (``contact_pass.rigid_sdf_world``)."""
        return rigid_sdf_world(self, state)

    # ------------------------------------------------------------------ 5. shape matching, distances
    def _rigid_goals(self, x: FloatArray, touching: BoolArray) -> tuple[FloatArray, FloatArray]:
        """Shape-matching corrections (R, 3) with contact-weighted fit, and the body rotations."""
        sm = self.model.shape_matching
        assert sm is not None
        weight = sm.mass * (1.0 + self.settings.rigid_contact_weight * touching[sm.rows])
        return sm.goals(x, weight)

    def _solve_shape_matching(self, state: ParticleState, x_pred: FloatArray, touching: BoolArray) -> None:
        sm = self.model.shape_matching
        assert sm is not None
        state.rigid_touch_count = sm.body_sums(touching[sm.rows].astype(np.float64))
        delta, state.rigid_rotation = self._rigid_goals(x_pred, touching)
        # One goal per particle, so no averaging; applied fully to keep the body rigid.
        sm.add_to(x_pred, delta)

    def _distance_solvers(self, h: float) -> list[DistanceSolver]:
        """The cloth and rope solvers for step size h (``projection.distance_solvers``), cached: h is fixed
        per frame rate."""
        solvers = self._solver_cache.get(h)
        if solvers is None:
            solvers = distance_solvers(self.model, self.settings, h)
            if len(self._solver_cache) > DISTANCE_SOLVER_CACHE_SIZE:
                self._solver_cache.clear()
            self._solver_cache[h] = solvers
        return solvers if self.tearing is None else solvers + self.tearing.solvers(self.model, h)

    # ------------------------------------------------------------------ 6. velocities
    def _resting(self, state: ParticleState, touching: BoolArray) -> BoolArray:
        """(N,) particles that may sleep: those touching something, and every particle of a rigid body
        that touches something (``rigid_touch_count``, counted by this small step's shape matching).
        A speed test alone froze bodies that start at rest in the air: one small step of gravity is
        only g h (0.026 m/s at 24 fps and 16 small steps per frame)."""
        sm = self.model.shape_matching
        if sm is None:
            return touching
        eligible = touching.copy()
        eligible[sm.idx] |= state.rigid_touch_count[sm.body] > 0.0
        return eligible
