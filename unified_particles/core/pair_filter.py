# SPDX-License-Identifier: GPL-3.0-or-later
"""Which neighbour candidates can ever touch: the pairs the contact passes never see (a body that does not
collide with itself, fluid with fluid, cloth and rope neighbours in the rest shape, joined bodies with
collisions off). Arrays in, the kept pairs out; the solver calls it on every candidate search."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .joints import JointSystem
from .model import KIND_CLOTH, KIND_ROPE, ROPE_SELF_EXCLUDED_LINKS, ParticleModel
from .sizes import Radius, pair_rest

IntArray = NDArray[np.int64]

# Cloth particles closer than this many diameters in the rest shape never self-collide.
SELF_COLLISION_REST_DIAMETERS = 2.0


def filter_pairs(
    model: ParticleModel,
    radius: Radius,
    joints: JointSystem | None,
    i: IntArray,
    j: IntArray,
    groups_checked: bool = False,
) -> tuple[IntArray, IntArray]:
    """Drop the pairs (i, j) that never interact through contacts: within a body that does not collide
    with itself (unless ``groups_checked``), fluid with fluid, cloth neighbours in the rest shape (closer
    than ``SELF_COLLISION_REST_DIAMETERS`` at ``radius``, metres, one or (N,)), a rope's neighbours along
    the chain, joined bodies that do not collide."""
    if not groups_checked:
        group = model.particle_group
        gi = group[i]
        keep = (gi != group[j]) | model.group_self_collides[gi]
        i, j = i[keep], j[keep]
    if model.any_fluid:
        # Fluid meets fluid through its density constraints (fluid.py), never through contacts.
        keep = ~(model.particle_is_fluid[i] & model.particle_is_fluid[j])
        i, j = i[keep], j[keep]
    if model.any_cloth_self:
        # Cloth neighbours in the rest shape would always touch: exclude them.
        group, rest = model.particle_group, model.particle_rest_q
        same_cloth = (group[i] == group[j]) & (model.particle_kind[i] == KIND_CLOTH)
        d = rest[i] - rest[j]
        apart = SELF_COLLISION_REST_DIAMETERS * pair_rest(radius, i, j)  # 2 diameters
        near = np.einsum("ij,ij->i", d, d) < apart**2
        keep = ~(same_cloth & near)
        i, j = i[keep], j[keep]
    if model.any_rope_self:  # a rope's neighbours along the chain (contiguous indices) always touch
        near = (np.abs(i - j) <= ROPE_SELF_EXCLUDED_LINKS) & (
            model.particle_group[i] == model.particle_group[j]
        )
        keep = ~(near & (model.particle_kind[i] == KIND_ROPE))
        i, j = i[keep], j[keep]
    if joints is not None:  # joined bodies that do not collide (Blender's Disable Collisions)
        i, j = joints.filter_pairs(model.particle_group, i, j)
    return i, j
