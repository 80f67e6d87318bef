# SPDX-License-Identifier: GPL-3.0-or-later
"""A world's time-varying data into a :class:`~.state.Snapshot` and back (``World.state()`` /
``World.set_state``).

:func:`encode` copies the state, the colliders' poses and the positions the pair lists were built
from; :func:`restore` checks that a snapshot fits the world (same particles, rigid bodies, mesh
colliders, soft pins), puts it back and rebuilds the pair lists from those positions, so stepping on
is bit-identical. The arrays' format is :class:`~.state.Snapshot`'s; older snapshots (before kinematic
bodies, deforming colliders, soft pins, fluids or joints) still load.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from . import depenetration
from .errors import SimulationInputError
from .solver import Solver
from .state import ParticleState, Snapshot

FloatArray = NDArray[np.float64]
BoolArray = NDArray[np.bool_]


def encode(state: ParticleState, solver: Solver, time: float, frame: int) -> Snapshot:
    """Everything time-varying of ``state`` and ``solver`` (its colliders and pair lists), copied, at
    simulated ``time`` (s) after ``frame`` steps."""
    st, colliders, drift = state, solver.colliders, _drift(solver)
    return Snapshot(
        particle_count=st.particle_count,
        time=float(time),
        frame=int(frame),
        positions=st.positions.copy(),
        velocities=st.velocities.copy(),
        rigid_rotation=st.rigid_rotation.copy(),
        rigid_center=st.rigid_center.copy(),
        rigid_touch_count=st.rigid_touch_count.copy(),
        # Positions at the last candidate-list build; the list itself is rebuilt from them.
        neighbor_reference=solver.candidates.reference.copy(),
        collider_transform=colliders.transforms(),
        collider_frame_start=colliders.frame_starts(),
        rigid_kinematic=st.rigid_kinematic.astype(np.float64),
        rigid_target=st.rigid_target.copy(),
        collider_vertices=colliders.deforming_vertices(),
        soft_pin_target=st.soft_pin_target.copy(),
        particle_active=st.active.astype(np.float64),
        fluid_reference=solver.fluid.pairs.reference.copy() if solver.fluid is not None else np.zeros((0, 3)),
        joint_broken=solver.joints.broken.astype(np.float64) if solver.joints is not None else np.zeros(0),
        depenetration_groups=depenetration.to_array(solver.depen),
        soft_rest=st.soft_rest.copy(),
        balloon_inflation=st.balloon_inflation.copy(),
        cloth_tears=solver.tearing.encode() if solver.tearing is not None else np.zeros(0),
        rigid_still_steps=st.rigid_still_steps.copy(),
        fluid_drift=np.zeros(0) if drift is None else drift.copy(),
    )


def _drift(solver: Solver) -> FloatArray | None:
    """The unlike liquids' drift progress (``fluid_mix.PhaseDrift``), or None with one liquid."""
    fluid = solver.fluid
    return None if fluid is None or fluid.phase_drift is None else fluid.phase_drift.progress


def restore(
    snapshot: Snapshot | Mapping[str, Any], state: ParticleState, solver: Solver
) -> tuple[float, int]:
    """Put ``snapshot`` (or its ``to_arrays()``) back into ``state`` and ``solver``; returns its simulated
    time (s) and frame. Raises SimulationInputError, changing nothing, when it does not fit the world
    (a soft-pin mismatch is found after the state was written)."""
    snap = snapshot if isinstance(snapshot, Snapshot) else Snapshot.from_arrays(snapshot)
    try:
        n = int(snap.particle_count)
        x = np.asarray(snap.positions, dtype=np.float64)
        v = np.asarray(snap.velocities, dtype=np.float64)
        rot = np.asarray(snap.rigid_rotation, dtype=np.float64)
        center = np.asarray(snap.rigid_center, dtype=np.float64)
        touch = np.asarray(snap.rigid_touch_count, dtype=np.float64)
        ct = np.asarray(snap.collider_transform, dtype=np.float64)
        cs = np.asarray(snap.collider_frame_start, dtype=np.float64)
        nb_ref = np.asarray(snap.neighbor_reference, dtype=np.float64)
        kinematic = np.asarray(snap.rigid_kinematic, dtype=np.float64)
        target = np.asarray(snap.rigid_target, dtype=np.float64)
        soft = np.asarray(snap.soft_pin_target, dtype=np.float64).reshape(-1, 3)
        active = np.asarray(snap.particle_active, dtype=np.float64).ravel()
        fluid_ref = np.asarray(snap.fluid_reference, dtype=np.float64).reshape(-1, 3)
        broken = np.asarray(snap.joint_broken, dtype=np.float64).ravel()
        depen = np.asarray(snap.depenetration_groups, dtype=np.float64).ravel()
        soft_rest = np.asarray(snap.soft_rest, dtype=np.float64).reshape(-1, 3)
        inflation = np.asarray(snap.balloon_inflation, dtype=np.float64).ravel()
        tears = np.asarray(snap.cloth_tears, dtype=np.float64).ravel()
        still = np.asarray(snap.rigid_still_steps, dtype=np.float64).ravel()
        drift = np.asarray(snap.fluid_drift, dtype=np.float64).ravel()
        time, frame = float(snap.time), int(snap.frame)
    except (TypeError, ValueError) as exc:
        raise SimulationInputError(f"not a World snapshot: {exc}") from None
    st = state
    if n != st.particle_count or x.shape != (n, 3) or v.shape != (n, 3):
        raise SimulationInputError(
            f"snapshot has {n} particles but this world has {st.particle_count}: "
            "restore into a world built with the same bodies"
        )
    if rot.shape != st.rigid_rotation.shape or ct.shape != (len(solver.colliders.meshes), 4, 4):
        raise SimulationInputError("snapshot has a different number of rigid bodies or mesh colliders")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(v))):
        raise SimulationInputError("snapshot positions/velocities contain NaN or inf")
    bodies = center.shape[:1]
    if touch.shape != bodies or kinematic.shape != bodies or target.shape != (*bodies, 4, 4):
        raise SimulationInputError("snapshot has a different number of rigid bodies")
    if still.shape not in ((0,), bodies):
        raise SimulationInputError("snapshot has a different number of rigid bodies")
    # The fluid reference also holds the mesh colliders' surface samples (fluid.Boundary) after N rows.
    if nb_ref.shape not in ((0, 3), (n, 3)) or not (len(fluid_ref) == 0 or len(fluid_ref) >= n):
        raise SimulationInputError(f"snapshot neighbour reference has shape {nb_ref.shape}")
    if active.shape not in ((0,), (n,)) or drift.shape not in ((0,), (n,)):
        raise SimulationInputError(f"snapshot particle activity has shape {active.shape}")
    if len(soft_rest) not in (0, len(st.soft_rest)) or len(inflation) not in (0, len(st.balloon_inflation)):
        raise SimulationInputError("snapshot has different soft bodies or balloons")
    joints = solver.joints
    size = sum(c.state_size for c in solver.tearing.cloths) if solver.tearing is not None else 0
    if len(tears) not in (0, size):
        raise SimulationInputError("snapshot has different tearing cloth")
    if len(broken) and (joints is None or broken.shape != joints.broken.shape):
        raise SimulationInputError("snapshot has a different number of joints")
    st.positions[...] = x
    st.velocities[...] = v
    st.rigid_rotation, st.rigid_center = rot.copy(), center.copy()
    st.rigid_touch_count = touch.copy()
    st.rigid_still_steps = still.copy() if len(still) else np.zeros(len(center))  # older: none still
    st.rigid_kinematic, st.rigid_target = kinematic > 0.5, target.copy()
    solver.ensure_built()  # the model's soft pins
    soft_pin_idx = solver.model.soft_pin_idx
    if soft.shape == (len(soft_pin_idx), 3):
        st.soft_pin_target = soft.copy()
    elif len(soft) == 0:  # a snapshot from before soft pins: anchors where the particles are
        st.soft_pin_target = x[soft_pin_idx].copy()
    else:
        raise SimulationInputError("snapshot has a different number of soft pins")
    st.active = active > 0.5 if len(active) else np.ones(n, dtype=bool)
    model = solver.model  # older snapshots: build-time rest shapes, inflation 1
    if model.soft is not None:
        st.soft_rest = soft_rest.copy() if len(soft_rest) else model.soft.rest.copy()
    if len(st.balloon_inflation):
        st.balloon_inflation = inflation.copy() if len(inflation) else np.ones(len(st.balloon_inflation))
    if joints is not None:  # before the pair lists: a joint may keep its bodies from colliding
        joints.broken = broken > 0.5 if len(broken) else np.zeros(len(joints), dtype=bool)
    if solver.tearing is not None:  # broken edges, split vertices and the masses of their parts
        solver.tearing.restore(tears, model, solver)
    # The bodies overlapping at the start, as the straight run found them (after ensure_built above).
    speed = solver.settings.max_depenetration_speed
    solver.depen = depenetration.from_array(depen, speed, solver.model, solver.sizes[0], st.positions)
    restore_candidates(solver, nb_ref, st.active, fluid_ref)
    progress = _drift(solver)  # after restore_candidates, which makes the fluid solver
    if progress is not None:
        progress[...] = drift if len(drift) else 0.0  # older snapshots: no drift yet
    solver.colliders.restore(ct, cs, np.asarray(snap.collider_vertices, dtype=np.float64))
    return time, frame


def restore_candidates(
    solver: Solver, reference: FloatArray, active: BoolArray, fluid_reference: FloatArray | None = None
) -> None:
    """Rebuild the candidate lists a snapshot was taken with from its reference positions (uncut:
    ``face_slab``)."""
    solver.candidates.reset()
    live = None if active.all() else active
    if len(reference) and solver.model.any_pairs:
        solver.candidates.store(reference.copy(), *solver.build_candidates(reference, live))
    fluid = solver.fluid_solver()
    if fluid is not None:
        fluid.reset()
        if fluid_reference is not None and len(fluid_reference):
            fluid.restore(fluid_reference, live)
