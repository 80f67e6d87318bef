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
    idx, delta, _ = particle_contacts(
        x_pred, state.positions, pair_i[pick], pair_j[pick], w_contact, r, np.inf,
        model.particle_friction, s.static_friction_scale, s.dynamic_friction_scale, None,
        *rigid_sdf_world(solver, state),
    )  # fmt: skip
    if len(idx):
        share = None if np.ndim(r) == 0 else (model.particle_inv_mass, solver._rigid_mask())
        apply_pair_jacobi(x_pred, idx, delta, s.relaxation, share)
    return compliant
