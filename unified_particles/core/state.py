# SPDX-License-Identifier: GPL-3.0-or-later
"""What changes from step to step, as one typed snapshot (``World.state()`` / ``World.set_state``).

A :class:`Snapshot` holds copies, never views of the world's arrays, so keeping one (a frame cache,
a resumable bake) is safe while the world steps on. ``to_arrays`` / ``from_arrays`` give the flat
named arrays that ``np.savez`` stores without pickle; restoring a snapshot is bit-identical.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields

import numpy as np
from numpy.typing import NDArray

from .errors import SimulationInputError

FloatArray = NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class Snapshot:
    """Everything time-varying in a :class:`~unified_particles.core.World`.

    Attributes:
        particle_count: N, the number of particles when the snapshot was taken.
        time: simulated time, s.
        frame: number of ``World.step`` calls so far.
        positions, velocities: (N, 3) particle state, m and m/s.
        rigid_rotation, rigid_center: (B, 3, 3) and (B, 3), each rigid body's frame.
        rigid_touch_count: (B,) particles of each rigid body touching something in the last step.
        neighbor_reference: (N, 3) or (0, 3) positions at the last neighbour-candidate build (the
            list itself is rebuilt from them, so a restored world finds the same pairs).
        collider_transform, collider_frame_start: (C, 4, 4) each mesh collider's pose now and at
            the start of the current frame.
        rigid_kinematic: (B,) 1.0 for a kinematic rigid body, else 0.0 (``RigidBody.kinematic``).
        rigid_target: (B, 4, 4) each rigid body's target transform (``RigidBody.set_target``).
        collider_vertices: (2 V, 3) the vertices of the deforming mesh colliders
            (``MeshCollider.set_vertices``) at the frame's start and now, collider after collider
            (V = their total vertex count; (0, 3) when none deforms).
        soft_pin_target: (S, 3) where each soft pin's spring is anchored now (``Cloth.soft_pins``).
        particle_active: (N,) 1.0 for a live particle, 0.0 for a fluid slot not emitted yet or removed
            (``Fluid.emit`` / ``Fluid.remove``); (0,) in snapshots from before fluids (all live).
        fluid_reference: (N, 3) or (0, 3) positions at the last fluid neighbour-list build.
        joint_broken: (J,) 1.0 for each joint that broke (``World.joints``); (0,) without joints and in
            snapshots from before joints (none broken).
        depenetration_groups: the bodies overlapping at the start (``depenetration.to_array``): (0,) not
            found yet (and in older snapshots), else -1 and the collision groups (G,).
        soft_rest: (M, 3) the soft bodies' cluster rest offsets (plastic flow); (0, 3) without soft bodies
            and in older snapshots (the build-time rest shapes).
        balloon_inflation: (K,) each balloon's inflation ratio; (0,) without balloons and in older
            snapshots (1).
        cloth_tears: the tearing cloths' broken edges and split vertices (``TearSystem.encode``); (0,)
            without tearing cloth and in older snapshots (nothing torn).
        rigid_still_steps: (B,) small steps each rigid body has been still in a row (``sleep.py``);
            (0,) in older snapshots (none still).
        fluid_drift: (N,) each particle's drift towards its next exchange with an unlike liquid, in
            lattice spacings (``fluid_mix.PhaseDrift``); (0,) with one liquid and in older snapshots (0).
    """

    particle_count: int
    time: float
    frame: int
    positions: FloatArray
    velocities: FloatArray
    rigid_rotation: FloatArray
    rigid_center: FloatArray
    rigid_touch_count: FloatArray
    neighbor_reference: FloatArray
    collider_transform: FloatArray
    collider_frame_start: FloatArray
    rigid_kinematic: FloatArray
    rigid_target: FloatArray
    collider_vertices: FloatArray = field(default_factory=lambda: np.zeros((0, 3)))
    soft_pin_target: FloatArray = field(default_factory=lambda: np.zeros((0, 3)))
    particle_active: FloatArray = field(default_factory=lambda: np.zeros(0))
    fluid_reference: FloatArray = field(default_factory=lambda: np.zeros((0, 3)))
    joint_broken: FloatArray = field(default_factory=lambda: np.zeros(0))
    depenetration_groups: FloatArray = field(default_factory=lambda: np.zeros(0))
    soft_rest: FloatArray = field(default_factory=lambda: np.zeros((0, 3)))
    balloon_inflation: FloatArray = field(default_factory=lambda: np.zeros(0))
    cloth_tears: FloatArray = field(default_factory=lambda: np.zeros(0))
    rigid_still_steps: FloatArray = field(default_factory=lambda: np.zeros(0))
    fluid_drift: FloatArray = field(default_factory=lambda: np.zeros(0))

    @property
    def nbytes(self) -> int:
        """Memory held by the snapshot's arrays, bytes."""
        return sum(int(getattr(self, f.name).nbytes) for f in fields(self) if f.name in _ARRAY_FIELDS)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Named arrays for ``np.savez`` (numbers become 0-d arrays; no pickle needed)."""
        return {f.name: np.asarray(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, object]) -> Snapshot:
        """The snapshot :meth:`to_arrays` flattened (also accepts an ``np.load`` result)."""
        try:
            values: dict[str, object] = {}
            for f in fields(cls):
                if f.name in _OPTIONAL_FIELDS and f.name not in arrays:
                    continue  # a snapshot from before kinematic bodies: none is kinematic (below)
                raw = arrays[f.name]
                if f.name in _ARRAY_FIELDS:
                    values[f.name] = np.array(raw, dtype=np.float64, copy=True)
                elif f.name == "time":
                    values[f.name] = float(np.asarray(raw))
                else:
                    values[f.name] = int(np.asarray(raw))
        except (KeyError, TypeError, ValueError) as exc:
            raise SimulationInputError(f"not a World snapshot: missing or bad field {exc}") from None
        if "rigid_kinematic" not in values or "rigid_target" not in values:
            bodies = np.asarray(values["rigid_center"]).reshape(-1, 3)
            values["rigid_kinematic"] = np.zeros(len(bodies))
            values["rigid_target"] = np.tile(np.eye(4), (len(bodies), 1, 1))
        return cls(**values)  # type: ignore[arg-type]


_ARRAY_FIELDS = frozenset(
    (
        "positions",
        "velocities",
        "rigid_rotation",
        "rigid_center",
        "rigid_touch_count",
        "neighbor_reference",
        "collider_transform",
        "collider_frame_start",
        "rigid_kinematic",
        "rigid_target",
        "collider_vertices",
        "soft_pin_target",
        "particle_active",
        "fluid_reference",
        "joint_broken",
        "depenetration_groups",
        "soft_rest",
        "balloon_inflation",
        "cloth_tears",
        "rigid_still_steps",
        "fluid_drift",
    )
)
# Fields added with kinematic bodies: snapshots saved before them (e.g. a bake to resume) still load.
_KINEMATIC_FIELDS = frozenset(("rigid_kinematic", "rigid_target"))
# Fields that may be missing from an older snapshot (deforming colliders: none deforms, the default).
# (soft pins: their anchors stay where the particles are).
# (fluids: every particle live).
_OPTIONAL_FIELDS = _KINEMATIC_FIELDS | {
    "collider_vertices",
    "soft_pin_target",
    "particle_active",
    "fluid_reference",
    "joint_broken",
    "depenetration_groups",
    "soft_rest",
    "balloon_inflation",
    "cloth_tears",
    "rigid_still_steps",
    "fluid_drift",
}


def rigid_transforms(rotation: FloatArray, center: FloatArray, rest_center: FloatArray) -> FloatArray:
    """(B, 4, 4) transforms (build frame -> now, as ``RigidBody.transform``) of rigid frames ``rotation``
    (B, 3, 3) and ``center`` (B, 3) of bodies whose centre of mass at build time is ``rest_center`` (B, 3)."""
    m = np.zeros((len(center), 4, 4))
    m[:, 3, 3] = 1.0
    m[:, :3, :3] = rotation
    m[:, :3, 3] = center - np.einsum("bij,bj->bi", rotation, rest_center)
    return m


@dataclass(eq=False)
class ParticleState:
    """The live, time-varying arrays the solver advances in place (a :class:`Snapshot` copies them).

    Adding a body replaces the arrays by longer ones, so hold the state object, not its arrays.

    Attributes:
        positions: (N, 3) particle positions x, metres.
        velocities: (N, 3) particle velocities v, m/s.
        rigid_rotation: (B, 3, 3) each rigid body's rotation from its build frame to now.
        rigid_center: (B, 3) each rigid body's centre of mass now, metres.
        rigid_touch_count: (B,) particles of each rigid body that touched something in the last small
            step (shape matching counts them; contact masses and sleeping use them).
        rigid_kinematic: (B,) bool, the body follows ``rigid_target`` with infinite mass.
        rigid_target: (B, 4, 4) each body's target transform (build frame -> pose at the end of the
            next frame); used while it is kinematic.
        soft_pin_target: (S, 3) each soft pin's anchor now (``ParticleModel.soft_pin_idx`` order).
        active: (N,) bool, the particle is live; False for fluid slots not emitted yet or removed, which
            keep their place and take part in nothing.
        soft_rest: (M, 3) each soft-body cluster membership's rest offset now, metres (plastic flow
            changes it; ``ParticleModel.soft``).
        balloon_inflation: (K,) each balloon's target volume over its rest volume (``World.set_inflation``).
        rigid_still_steps: (B,) small steps each rigid body has been still in a row (``sleep.py``).
    """

    positions: FloatArray = field(default_factory=lambda: np.zeros((0, 3)))
    velocities: FloatArray = field(default_factory=lambda: np.zeros((0, 3)))
    rigid_rotation: FloatArray = field(default_factory=lambda: np.zeros((0, 3, 3)))
    rigid_center: FloatArray = field(default_factory=lambda: np.zeros((0, 3)))
    rigid_touch_count: FloatArray = field(default_factory=lambda: np.zeros(0))
    rigid_kinematic: NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=bool))
    rigid_target: FloatArray = field(default_factory=lambda: np.zeros((0, 4, 4)))
    soft_pin_target: FloatArray = field(default_factory=lambda: np.zeros((0, 3)))
    active: NDArray[np.bool_] = field(default_factory=lambda: np.zeros(0, dtype=bool))
    soft_rest: FloatArray = field(default_factory=lambda: np.zeros((0, 3)))
    balloon_inflation: FloatArray = field(default_factory=lambda: np.zeros(0))
    rigid_still_steps: FloatArray = field(default_factory=lambda: np.zeros(0))
    fluid_drift: FloatArray = field(default_factory=lambda: np.zeros(0))

    @property
    def particle_count(self) -> int:
        """Number of particles N."""
        return int(self.positions.shape[0])

    def add_particles(self, x: FloatArray, v: FloatArray | None = None, active: int | None = None) -> None:
        """Append particles at ``x`` (P, 3) with velocities ``v`` (P, 3; None: at rest); only the first
        ``active`` of them live (None: all)."""
        live = np.ones(len(x), dtype=bool)
        if active is not None:
            live[active:] = False
        self.active = np.concatenate([self.active, live])
        self.positions = np.concatenate([self.positions, x])
        self.velocities = np.concatenate([self.velocities, np.zeros((len(x), 3)) if v is None else v])

    def hold_dynamic_targets(self, rest_center: FloatArray) -> None:
        """Set each dynamic rigid body's target to where it is (centres of mass at build time
        ``rest_center`` (B, 3)), so switching it kinematic holds it there."""
        dynamic = ~self.rigid_kinematic
        if dynamic.any():
            now = rigid_transforms(self.rigid_rotation, self.rigid_center, rest_center)
            self.rigid_target[dynamic] = now[dynamic]

    def add_rigid_body(self, center: FloatArray) -> None:
        """Append a rigid body's frame: identity rotation, centre of mass ``center`` (3,)."""
        self.rigid_rotation = np.concatenate([self.rigid_rotation, np.eye(3)[None]])
        self.rigid_center = np.concatenate([self.rigid_center, center[None]])
        self.rigid_touch_count = np.concatenate([self.rigid_touch_count, [0.0]])
        self.rigid_still_steps = np.concatenate([self.rigid_still_steps, [0.0]])
        self.rigid_kinematic = np.concatenate([self.rigid_kinematic, [False]])
        self.rigid_target = np.concatenate([self.rigid_target, np.eye(4)[None]])
