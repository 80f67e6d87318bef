"""Determinism and bit-identical resume from snapshots (the frame cache depends on it)."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import numpy as np
import pytest

from unified_particles.core import SimulationInputError, Snapshot, World
from unified_particles.core.primitives import box_mesh, grid_mesh, grid_points, uv_sphere_mesh


def _scene() -> tuple[World, object]:
    w = World(radius=0.05, restitution=0.2)
    w.add_collider_plane()
    sv, sf = uv_sphere_mesh(0.3, segments=16, rings=8)
    col = w.add_collider_mesh(sv, sf, transform=np.eye(4))
    w.add_rigid(*box_mesh((0.3, 0.3, 0.3), (0.5, 0.0, 0.6)))
    cv, cf = grid_mesh(0.8, 9, (0.0, 0.0, 0.6))
    w.add_cloth(cv, cf, mass=0.1, pinned=[0])
    pts = grid_points((4, 4, 3), 0.1, (-0.6, -0.2, 0.2)) + np.random.default_rng(0).normal(0, 0.003, (48, 3))
    w.add_granular(pts, friction=0.7, cohesion=0.1)
    return w, col


def _run(w: World, col: object, frames: range) -> None:
    for k in frames:
        m = np.eye(4)
        m[0, 3] = 0.01 * k  # animated collider
        col.set_transform(m)  # type: ignore[attr-defined]
        w.step(1.0 / 24.0)


def test_same_inputs_give_bit_identical_outputs() -> None:
    a, ca = _scene()
    b, cb = _scene()
    _run(a, ca, range(12))
    _run(b, cb, range(12))
    assert np.array_equal(a.positions, b.positions)
    assert np.array_equal(a.velocities, b.velocities)
    assert np.abs(a.velocities).max() > 0.1, "something moved"


@pytest.mark.slow
def test_resume_from_snapshot_is_bit_identical(tmp_path: Path) -> None:
    ref, cref = _scene()
    _run(ref, cref, range(16))

    w, col = _scene()
    _run(w, col, range(7))
    snap = w.state()
    # A snapshot is plain arrays and numbers: it survives np.savez without pickle.
    path = tmp_path / "snap.npz"
    np.savez(path, **snap.to_arrays())
    with np.load(path, allow_pickle=False) as data:
        loaded = {k: data[k] for k in data.files}
    _run(w, col, range(7, 10))  # diverge, then go back

    fresh, cfresh = _scene()
    fresh.set_state(loaded)
    _run(fresh, cfresh, range(7, 16))
    assert np.array_equal(fresh.positions, ref.positions)
    assert np.array_equal(fresh.velocities, ref.velocities)

    w.set_state(snap)
    _run(w, col, range(7, 16))
    assert np.array_equal(w.positions, ref.positions)


def test_snapshot_from_other_world_is_refused() -> None:
    w, _ = _scene()
    other = World(radius=0.05)
    other.add_granular([[0.0, 0.0, 1.0]])
    with pytest.raises(SimulationInputError, match="particles"):
        w.set_state(other.state())
    with pytest.raises(SimulationInputError):
        w.set_state({"positions": np.zeros((3, 3))})


def test_positions_and_velocities_are_writable_between_steps() -> None:
    w = World(radius=0.05, gravity=(0, 0, 0))
    g = w.add_granular([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    w.positions[1] = [2.0, 0.0, 0.0]
    w.velocities[g.indices] = [1.0, 0.0, 0.0]
    w.step(0.5)
    np.testing.assert_allclose(w.positions[:, 0], [0.5, 2.5])
    w.positions = np.array([[0.0, 0.0, 0.0], [5.0, 0.0, 0.0]])
    np.testing.assert_allclose(w.positions[1], [5.0, 0.0, 0.0])
    with pytest.raises(SimulationInputError):
        w.positions = np.zeros((3, 3))


def test_bodies_can_be_added_after_steps() -> None:
    w = World(radius=0.05)
    w.add_collider_plane()
    a = w.add_granular([[0.0, 0.0, 0.5]])
    for _ in range(12):
        w.step(1.0 / 24.0)
    b = w.add_rigid(*box_mesh((0.3, 0.3, 0.3), (1.0, 0.0, 0.5)))
    assert w.particle_count == 1 + len(b.indices)
    for _ in range(24):
        w.step(1.0 / 24.0)
    assert w.positions[a.indices][0, 2] > 0.04
    assert b.center[2] > 0.14
    assert b.center[2] < 0.16


def test_snapshot_arrays_round_trip_is_bit_identical_after_stepping() -> None:
    w, col = _scene()
    _run(w, col, range(5))
    snap = w.state()
    arrays = snap.to_arrays()
    back = Snapshot.from_arrays(arrays)
    for f in fields(Snapshot):
        a, b = getattr(snap, f.name), getattr(back, f.name)
        assert type(a) is type(b), f.name
        assert np.array_equal(a, b), f.name
        if isinstance(a, np.ndarray):
            assert a.dtype == b.dtype, f.name
            assert a.shape == b.shape, f.name
            assert not np.shares_memory(a, b), f.name  # a copy, not a view
    assert len(arrays["neighbor_reference"]) == w.particle_count  # the candidate list was built
    assert back.rigid_rotation.shape == (1, 3, 3)
    assert back.collider_transform.shape == (1, 4, 4)
    # Stepping on from either snapshot gives the same bits.
    _run(w, col, range(5, 8))
    ref = w.positions.copy(), w.velocities.copy()
    w.set_state(back)
    _run(w, col, range(5, 8))
    assert np.array_equal(w.positions, ref[0])
    assert np.array_equal(w.velocities, ref[1])


def test_snapshot_nbytes_is_the_sum_of_its_arrays() -> None:
    w, col = _scene()
    _run(w, col, range(2))
    snap = w.state()
    arrays = [v for v in vars(snap).values() if isinstance(v, np.ndarray)]
    # 8 + rigid_kinematic, rigid_target (kinematic), collider_vertices (deforming), soft_pin_target,
    # particle_active and fluid_reference (fluids), joint_broken (joints), depenetration_groups (bodies
    # overlapping at the start: a resumed run caps the same ones), soft_rest and balloon_inflation (soft
    # bodies' plastic rest shapes, balloons' inflation), cloth_tears (tearing cloth's broken edges and
    # splits), rigid_still_steps (rigid bodies' sleep counters, core/sleep.py), fluid_drift (unlike
    # liquids' progress towards their next exchange, core/fluid_mix.py)
    assert len(arrays) == 21
    assert snap.nbytes == sum(a.nbytes for a in arrays)
    assert snap.nbytes >= 2 * w.positions.nbytes  # positions and velocities at least


def test_snapshot_is_a_copy_not_a_view() -> None:
    w, col = _scene()
    _run(w, col, range(2))
    snap = w.state()
    before = snap.positions.copy()
    _run(w, col, range(2, 4))
    assert np.array_equal(snap.positions, before)
