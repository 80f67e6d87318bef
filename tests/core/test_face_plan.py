# SPDX-License-Identifier: GPL-3.0-or-later
"""A candidate list's coarse faces indexed once (``core/face_plan.py``, issue 22 item 6): the same pairs,
normals and gaps as ``contacts.coarse_faces``, for a box turned off its axes on sand."""

from __future__ import annotations

import numpy as np

from unified_particles.core import contacts
from unified_particles.core.face_plan import FacePlan

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
