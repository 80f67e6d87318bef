# SPDX-License-Identifier: GPL-3.0-or-later
"""Loads weigh on compliant cloth at their true mass (issue 24, item 6).

The first contact pass limits every contact's mass ratio to ``max_mass_ratio`` (10): a 0.51 kg box
particle on a 17 g cloth vertex (30:1) takes the share of a 10:1 contact, so the load's momentum change
exceeds the cloth's and the difference holds the load up without any push on the cloth. The held pass
after the stretch solve (``cloth_contacts.hold_loads_on_cloth``) then stops the load's fall, again
without a reaction. A corner-pinned 5 kg cloth under a 12.8 or a 25.6 kg box carried 106 N on its pins
(the weight is 175 and 300 N), and both sagged it to the same millimetre (docs/physics.md, *Heavy on
light*).

So after the stretch solve the cloth-load contacts are solved once more at the true mass ratio (no
limit; equal and opposite impulses), on the cloth vertices that have an edge compliant within the step
(alpha / h^2 >= ``STIFF_EDGE`` (w_a + w_b), the criterion the coarse correction and the fast projection
use for the edges they leave to the sweep). The load then pushes such a cloth as hard as its weight, and
the sweep's XPBD update stretches each edge by its compliance times its tension, so the sag follows the
load (Foppl's membrane: w ~ P^(1/3)). The held pass keeps the last word (nothing goes through).

The pass is repeated (CARRY_PASSES) so that the Jacobi averaging leaves the held pass nothing to take,
with each vertex's motion in it bounded (CARRY_REACH_RADII) so that a load far heavier than the cloth
cannot push the vertices apart.

Inextensible cloth keeps the limited contact: its shape does not depend on the load (w ~ (P / E t)^(1/3)
-> 0 for E -> infinity), and its one sweep per small step cannot carry 30-600 vertex masses per contact
at its rest length (the 100 kg trampoline of ``test_cloth_load.py`` then stretched 32 % at the impact,
bound 30 %; a crate in the README's hammock 0.54 -> 1.12 % along its centre line).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from .contact_pass import rigid_sdf_world
from .contacts import particle_contacts
from .corrections import apply_pair_jacobi
from .distance import GaussSeidelSolver
from .state import ParticleState

if TYPE_CHECKING:
    from .solver import Solver

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

# Jacobi passes over the cloth-load contacts per small step. One pass divides each pair's correction by
# the larger contact count of its two particles (corrections.apply_pair_jacobi): a cloth vertex under a
# box touches 2-4 of its particles, so one pass left it 1/2-3/4 of the overlap, and the held pass then
# took the rest with no push on the cloth: under a 25.6 kg box the 5 kg cloth of the experiments row
# (21 x 21, r = 2.5 cm, default budget) sagged 0.394 m, where the spring network's
# static equilibrium is 0.561 m. Four passes leave the held pass nothing at that load; eight give the
# same sag within 3 mm (docs/physics.md, *Heavy on light*). The passes after the first solve only the
# pairs it found in contact (cheaper; the same sags to the millimetre).
CARRY_PASSES = 4
# ... but no cloth vertex moved by them farther than this many radii in a small step: a 40 kg box on a
# 0.1 kg cloth (2700 vertex masses a particle) pushed the vertices under it aside by the whole overlap
# in every pass, the cloth opened and the box went through (tests/core/test_cloth.py). One pass moved a
# vertex at most about the held pass's slop (0.2 r); 0.25 and 0.5 hold that box on the cloth and give
# the experiments row the same sag within 1 cm.
CARRY_REACH_RADII = 0.25


def carry_loads(
    solver: Solver,
    state: ParticleState,
    x_pred: FloatArray,
    pair_i: IntArray,
    pair_j: IntArray,
    w_contact: FloatArray,
    h: float,
) -> NDArray[np.bool_] | None:
    """The contacts of loads with compliant cloth vertices at the true mass ratio, with friction, applied to
    ``x_pred`` (N, 3) in place (``w_contact`` (N,) contact inverse masses, 1/kg; ``pair_i``, ``pair_j``
    the small step's candidates; ``h`` the small step, s: which edges are compliant depends on it).
    Returns those compliant vertices (N,), None if there are none (the held pass lets rigid loads rest
    on the other cloth vertices without slop, ``cloth_contacts.py``)."""
    model, s = solver.model, solver.settings
    compliant = None
    for sweep in solver._distance_solvers(h):
        if isinstance(sweep, GaussSeidelSolver) and not sweep.unilateral:
            compliant = sweep.compliant
            break
    if compliant is None or not compliant.any():
        return None
    is_cloth = model.particle_is_cloth
    pick = (compliant[pair_i] | compliant[pair_j]) & (is_cloth[pair_i] != is_cloth[pair_j])
    if not pick.any():
        return compliant
    r = solver.sizes[0]
    ci, cj, sdf = pair_i[pick], pair_j[pick], rigid_sdf_world(solver, state)
    share = None if np.ndim(r) == 0 else (model.particle_inv_mass, solver._rigid_mask())
    verts = np.unique(np.where(is_cloth[ci], ci, cj))
    start = x_pred[verts]
    for _ in range(CARRY_PASSES):  # Jacobi passes on the same pairs (see CARRY_PASSES)
        idx, delta, _ = particle_contacts(
            x_pred, state.positions, ci, cj, w_contact, r, np.inf, model.particle_friction,
            s.static_friction_scale, s.dynamic_friction_scale, None, *sdf,
        )  # fmt: skip
        if not len(idx):
            break
        apply_pair_jacobi(x_pred, idx, delta, s.relaxation, share)
        k = len(idx) // 2
        ci, cj = idx[:k], idx[k:]  # the next passes refine the contacts this one found
    # No vertex pushed farther than CARRY_REACH_RADII radii in a small step (see there).
    moved = x_pred[verts] - start
    size = np.sqrt(np.einsum("ij,ij->i", moved, moved))
    reach = CARRY_REACH_RADII * (np.asarray(r, dtype=np.float64) * np.ones(len(x_pred)))[verts]
    far = size > reach
    if far.any():
        x_pred[verts[far]] = start[far] + moved[far] * (reach[far] / size[far])[:, None]
    return compliant
