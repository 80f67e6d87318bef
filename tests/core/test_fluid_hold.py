# SPDX-License-Identifier: GPL-3.0-or-later
"""The fluid hold-out after the density solve (``core/fluid_hold.py``) asks volume colliders at the contact
pass's reach (so the colliders' near-point lists serve both queries) and finds what it found asking at r."""

from __future__ import annotations

import numpy as np

from unified_particles.core import World, fill_mesh_with_fluid
from unified_particles.core.colliders import ColliderContacts, collider_corrections
from unified_particles.core.contact_pass import TOUCH_TOLERANCE_RADII
from unified_particles.core.corrections import apply_jacobi
from unified_particles.core.fluid_hold import hold_fluid_out
from unified_particles.core.primitives import box_mesh

R = 0.025


def _held_at_r(world: World, x: np.ndarray) -> np.ndarray:
    """The hold-out as it was before (asked at r, no tolerance): the reference."""
    solver = world._solver
    x = x.copy()
    col = solver.colliders.contacts(x, R, 1.0, 1.0 / 24, 0.0)
    keep = (col.depth > 0.0) & solver.model.particle_is_fluid[col.idx]
    col = ColliderContacts(
        col.idx[keep], col.normal[keep], col.depth[keep], col.velocity[keep], col.friction[keep]
    )
    delta = collider_corrections(x, None, col, 1.0, 1.0, solver.model.particle_friction, 0.0)
    apply_jacobi(x, col.idx, delta, 1.0)
    return x


def test_the_hold_out_at_the_contact_reach_holds_what_it_held_at_r() -> None:
    # Water pressed into a floor slab and a wall (volume colliders), jittered by up to 0.6 r so that
    # particles lie inside, on and just off the surfaces (where the reaches r and 1.1 r differ): the same
    # positions, bit for bit, as asking at r; and the near-point list searched for the contact pass's
    # reach serves the hold-out (no new search).
    world = World(R)
    floor = world.add_collider_mesh(*box_mesh((1.0, 1.0, 0.1), (0, 0, -0.05)))
    world.add_collider_mesh(*box_mesh((0.1, 1.0, 0.6), (-0.35, 0, 0.3)))
    world.add_fluid(fill_mesh_with_fluid(*box_mesh((0.5, 0.5, 0.2), (0.0, 0.0, 0.1)), R))
    world.step(1.0 / 24)  # builds the model's arrays
    solver = world._solver
    assert not any(m.exact_contacts for m in solver.colliders.meshes)
    rng = np.random.default_rng(7)
    x = np.asarray(world.positions) + rng.uniform(-0.6 * R, 0.6 * R, (len(world.positions), 3))
    x[:, 2] -= 0.5 * R
    want = _held_at_r(world, x)
    wide = solver.colliders.contacts(x, R, 1.0, 1.0 / 24, TOUCH_TOLERANCE_RADII * R)  # the contact pass's
    assert np.count_nonzero(wide.depth <= 0.0) > 3  # contacts only the wider reach finds, dropped after
    near = floor._near_cache.i
    got = x.copy()
    hold_fluid_out(solver.colliders, got, R, 1.0, 1.0 / 24, solver.model)
    assert floor._near_cache.i is near
    assert np.array_equal(got, want)
    assert np.abs(got - x).max() > 0.1 * R  # particles were held out
