# SPDX-License-Identifier: GPL-3.0-or-later
"""A candidate list's coarse faces indexed once (``core/face_plan.py``, issue 22 item 6): the same pairs,
normals and gaps as ``contacts.coarse_faces``, for a box turned off its axes on sand."""

from __future__ import annotations

import numpy as np
import pytest

from unified_particles.core import contacts, parallel
from unified_particles.core.face_plan import ChunkFacePlans, FacePlan

from .test_face_slab import DT, _rock_on_sand


def test_a_plan_finds_the_faces_contacts_find() -> None:
    """A tumbling 0.3 m box of 5 cm particles on 1 cm sand, after landing: every pair of the solver's list
    gets the same face as ``contacts.coarse_faces`` gives it. Only the rounding of a face's height differs
    ((R f) . e against f . (R^T e)): a few ulp of the 0.1 m offsets, bound 1e-15 m."""
    w = _rock_on_sand()
    plan = FacePlan()
    compared = 0
    for _ in range(8):
        w.step(DT)
        solver = w._solver
        i, j = solver.candidates.i, solver.candidates.j
        depth, normal, faces = solver._rigid_sdf_world(w._state)
        assert depth is not None
        assert normal is not None
        assert faces is not None
        radius = np.asarray(solver.sizes[0])
        x = np.asarray(w.positions)
        xt = np.ascontiguousarray(x.T)
        want = contacts.coarse_faces(xt[:, i] - xt[:, j], i, j, radius, depth, normal, faces)
        got = plan.faces(xt, i, j, radius, depth, normal, faces)
        assert (want is None) == (got is None)
        if want is None or got is None:
            continue  # not landed yet: no pair within a face's reach
        compared += len(want[0])
        assert np.array_equal(got[0], want[0])
        assert np.abs(got[1] - want[1]).max() < 1e-15
        assert np.abs(got[2] - want[2]).max() < 1e-15
    assert compared > 1000, compared
    rotation = w._state.rigid_rotation[0]
    assert np.abs(rotation - np.eye(3)).max() > 0.1, "the box should have turned off its axes"


def test_the_contact_pass_finds_its_coarse_faces_by_chunk_plans(monkeypatch: pytest.MonkeyPatch) -> None:
    """``particle_contacts`` with each chunk's plan (``ChunkFacePlans``, as ``contact_pass`` calls it)
    gives the corrections it gives with ``contacts.coarse_faces``, on the landed box's list cut into three
    chunks; the chunks (and so their plans) are the same objects while the list is. Bound as above: the
    face heights' rounding, a few ulp of the offsets, 1e-15 m."""
    w = _rock_on_sand()
    for _ in range(8):
        w.step(DT)
    solver = w._solver
    i, j = solver.candidates.i, solver.candidates.j
    monkeypatch.setattr(parallel, "PAIR_CHUNK", len(i) // 3 + 1)
    sdf = solver._rigid_sdf_world(w._state)
    radius = np.asarray(solver.sizes[0])
    x = np.asarray(w.positions)
    inv_mass = solver.model.particle_inv_mass
    plans = ChunkFacePlans()
    views = plans.chunks(i, j)
    assert len(views) == 3
    assert all(a is b for a, b in zip(views, plans.chunks(i, j), strict=True))

    def pass_(with_plans: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return parallel.pair_chunks_map(
            lambda ci, cj: contacts.particle_contacts(
                x, None, ci, cj, inv_mass, radius, sdf_depth=sdf[0], sdf_normal=sdf[1], sdf_faces=sdf[2],
                coarse_plan=plans.coarse_fn(ci, radius, *sdf) if with_plans else None,  # type: ignore[arg-type]
            ),
            i, j, 1, views if with_plans else None,
        )  # fmt: skip

    want, got = pass_(False), pass_(True)
    xt = np.ascontiguousarray(x.T)
    faced = [plans.coarse_fn(ci, radius, *sdf)(xt, ci, cj) for ci, cj in views]  # type: ignore[arg-type]
    assert sum(len(f[0]) for f in faced if f is not None) > 100, "the box should rest on faces"
    assert np.array_equal(got[0], want[0])
    assert len(got[0]) > 1000, len(got[0])
    assert np.abs(got[1] - want[1]).max() < 1e-15
    assert np.array_equal(np.sort(got[2]), np.sort(want[2]))
