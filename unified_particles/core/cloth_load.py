# SPDX-License-Identifier: GPL-3.0-or-later
"""Loads on cloth at their true mass: a second contact-and-stretch iteration for loaded cloths (issue 24, 6).

The first contact pass limits every contact's mass ratio to ``max_mass_ratio`` (10): a 0.5 kg box
particle on a 17 g cloth vertex (30:1) then takes the momentum of a 10:1 contact and the cloth that of
a 1:1 one, so the cloth never feels more than ten vertex masses per particle and every heavier box sagged
it alike (docs/physics.md, *Heavy on light*). The held pass after the stretch solve
(``cloth_contacts.hold_loads_on_cloth``) then holds the load out of the cloth without any push on it:
the pins of a corner-pinned cloth under a 25.6 kg box carried 106 N of the 300 N on them.

So after the stretch solve the cloth-load pairs are solved once more with their true masses (no
limit: the cloth vertex now takes its real share, which conserves momentum), and the loaded cloths'
stretch constraints get a second XPBD iteration continuing the first's multipliers
(``GaussSeidelSolver.solve_again``), so the cloth takes that push back to its pins at its own
compliance. The held pass keeps the last word as before (no load goes through a cloth), but with the
true push already in the cloth it has little left to hold.
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
) -> None:
    """The cloth-load contacts at the true mass ratio, then a second stretch iteration of the cloths they
    touch, applied to ``x_pred`` (N, 3) in place (``w_contact`` (N,) contact inverse masses, 1/kg;
    ``pair_i``, ``pair_j`` the small step's candidates; ``h`` the small step, s)."""
    model, s = solver.model, solver.settings
    is_cloth = model.particle_is_cloth
    mixed = is_cloth[pair_i] != is_cloth[pair_j]
    if not mixed.any():
        return
    r = solver.sizes[0]
    idx, delta, _ = particle_contacts(
        x_pred, state.positions, pair_i[mixed], pair_j[mixed], w_contact, r, np.inf,
        model.particle_friction, s.static_friction_scale, s.dynamic_friction_scale, None,
        *rigid_sdf_world(solver, state),
    )  # fmt: skip
    if not len(idx):
        return
    share = None if np.ndim(r) == 0 else (model.particle_inv_mass, solver._rigid_mask())
    apply_pair_jacobi(x_pred, idx, delta, s.relaxation, share)
    groups = model.particle_group
    loaded = np.zeros(len(model.group_self_collides), bool)
    loaded[groups[idx[is_cloth[idx]]]] = True
    moving = loaded[groups] & is_cloth

    for sweep in solver._distance_solvers(h):
        if isinstance(sweep, GaussSeidelSolver) and not sweep.unilateral:
            sweep.solve_again(x_pred, moving)
