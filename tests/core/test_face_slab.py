# SPDX-License-Identifier: GPL-3.0-or-later
"""Coarse faces' candidates cut to the face's slab (issue 22, item 6; ``core/face_slab.py``).

The cut must never drop a pair that can touch before the list is searched again, so a world steps bit for
bit as with the whole sphere of candidates, with fewer of them; a snapshot (which rebuilds the list
uncut) continues bit for bit.
"""

from __future__ import annotations

import numpy as np
import pytest

from unified_particles.core import World, face_slab, sizes
from unified_particles.core import solver as solver_module
from unified_particles.core.primitives import box_mesh, grid_points

DT = 1.0 / 24.0
FINE, COARSE = 0.01, 0.05


def _rock_on_sand(nudge: float = 0.0) -> World:
    """A tumbling 0.3 m box of 5 cm particles dropped on a bed of 1 cm sand (sizes 5x apart)."""
    w = World(radius=FINE)
    w.add_collider_plane()
    sand = grid_points((18, 18, 2), 2.2 * FINE, (-0.19, -0.19, FINE))
    sand += nudge * np.random.default_rng(7).standard_normal(sand.shape)
    w.add_granular(sand, friction=0.5)
    v, f = box_mesh((0.3, 0.3, 0.2), (0.0, 0.0, 0.22))
    w.add_rigid(v, f, density=2500.0, radius=COARSE, angular_velocity=(2.0, 3.0, 0.0))
    return w


@pytest.fixture
def refreshed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Refresh the list particle by particle even in a small scene (as S9's 21,708 particles do)."""
    ahead, fraction, _fewest, cohesion = solver_module.SIZED_REFRESH
    monkeypatch.setattr(solver_module, "SIZED_REFRESH", (ahead, fraction, 0, cohesion))


def _cross(world: World) -> int:
    """How many candidate pairs have a coarse surface particle in them."""
    nb, coarse = world._solver.candidates, face_slab.coarse_surface(world.model)
    return int(np.count_nonzero(coarse[nb.i] | coarse[nb.j]))


@pytest.mark.usefixtures("refreshed")
def test_cut_candidates_step_bit_for_bit_as_the_whole_sphere(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rock lands turning on the sand: positions and velocities bit for bit as with the uncut list (the
    cut leaves out only pairs no contact, touch or cohesion reaches), with fewer candidates."""
    original_keep = sizes.slab_keep
    cut_now = [True]

    def keep(x: np.ndarray, i: np.ndarray, *args: object) -> np.ndarray:
        return original_keep(x, i, *args) if cut_now[0] else np.ones(len(i), dtype=bool)  # type: ignore[arg-type]

    monkeypatch.setattr(sizes, "slab_keep", keep)
    whole, cut = _rock_on_sand(), _rock_on_sand()
    fewer = 0
    for _ in range(6):  # in lockstep: the same frames, with and without the cut
        cut_now[0] = False
        whole.step(DT)
        cut_now[0] = True
        cut.step(DT)
        assert np.array_equal(np.asarray(cut.positions), np.asarray(whole.positions))
        assert np.array_equal(np.asarray(cut.velocities), np.asarray(whole.velocities))
        fewer = max(fewer, _cross(whole) - _cross(cut))
    assert fewer > 0
    x = np.asarray(cut.positions)
    assert float(x[-18:, 2].min()) > 2.0 * FINE  # the rock rests on the sand, not in it


@pytest.mark.usefixtures("refreshed")
def test_snapshot_of_a_cut_list_continues_bit_for_bit() -> None:
    """A snapshot keeps the reference positions only and rebuilds the list uncut: the run goes on the same."""
    w = _rock_on_sand()
    for _ in range(3):
        w.step(DT)
    snap = w.state()
    for _ in range(3):
        w.step(DT)
    again = _rock_on_sand()
    again.set_state(snap)
    for _ in range(3):
        again.step(DT)
    assert np.array_equal(np.asarray(again.positions), np.asarray(w.positions))


def test_the_cut_keeps_every_pair_a_turn_and_the_margins_can_bring_into_touch() -> None:
    """Brute force: after random moves within the list's bounds (each particle within m / 2 of its
    reference about a common shift, the body turned by up to SLAB_TURN), every pair of a coarse surface
    particle and a grain whose face gap or sphere gap is below the touch tolerance was kept."""
    w = _rock_on_sand()
    w.step(1e-6)  # the model, built; nothing moved yet
    model = w.model
    solver = w._solver
    margin = np.asarray(solver.sizes[1])
    reach = model.particle_radius + 0.5 * margin
    x0 = np.asarray(w.positions).copy()
    rng = np.random.default_rng(3)
    assert model.shape_matching is not None
    rigid = model.shape_matching.idx
    centre = x0[rigid].mean(axis=0)
    # Grains all around the rock's faces, edges and corners (the sand bed covers only its bottom).
    shell = centre + rng.uniform(-0.3, 0.3, (4000, 3))
    grain = np.flatnonzero(model.particle_kind == 0)[: len(shell)]
    x0[grain] = shell[: len(grain)]
    coarse = np.flatnonzero(face_slab.coarse_surface(model))
    i = np.repeat(coarse, len(grain))
    j = np.tile(grain, len(coarse))
    cut = face_slab.cut_rotations(model, np.eye(3)[None].repeat(model.rigid_count, axis=0))
    keep = face_slab.slab_keep(x0, i, j, model, reach, margin, cut)
    assert 0 < keep.sum() < len(keep)
    # A body turned past SLAB_TURN since its pairs were cut is searched again; one turned less is not.
    for angle, stale in ((0.9 * face_slab.SLAB_TURN, False), (1.1 * face_slab.SLAB_TURN, True)):
        c, s = np.cos(angle), np.sin(angle)
        now = np.array([[[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]])
        assert face_slab.turned(model, cut, now).tolist() == [stale]
    assert face_slab.turned(model, cut, None).tolist() == [True]  # no rotations now: uncut again
    r, tol_r = model.particle_radius, face_slab.TOUCH_RADII
    dirs = np.concatenate(
        [model.particle_sdf_normal[coarse][:, None, :], model.rigid_faces[np.searchsorted(rigid, coarse)]],
        axis=1,
    )  # (C, 4, 3)
    for trial in range(20):
        axis = rng.standard_normal(3)
        axis /= np.linalg.norm(axis)
        phi = face_slab.SLAB_TURN * rng.uniform(0.5, 1.0)
        k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
        turn = np.eye(3) + np.sin(phi) * k + (1 - np.cos(phi)) * k @ k
        x = x0.copy()
        x[rigid] = centre + (x0[rigid] - centre) @ turn.T
        step = rng.standard_normal(x.shape)
        step *= (0.4999 * margin * rng.uniform(0.0, 1.0, len(x)) / np.linalg.norm(step, axis=1))[:, None]
        x += step
        e = x[j] - x[i]
        world_dirs = np.repeat(dirs @ turn.T, len(grain), axis=0)  # (K, 4, 3)
        h = np.einsum("kdb,kb->kd", world_dirs, e).max(axis=1)
        near = h < r[i] + r[j] + tol_r * 0.5 * (r[i] + r[j])
        assert keep[near].all(), f"trial {trial}: {int((near & ~keep).sum())} touching pairs cut"
