# SPDX-License-Identifier: GPL-3.0-or-later
"""Breakable glue between rigid pieces that touch (``World.glue``): a wall of bricks, a Cell Fracture.

Each pair of rigid bodies whose particles touch at the start gets one FIXED joint (:mod:`.joints`) at the
middle of their contact patch, breaking like Blender's breakable constraints: when the force its locks
needed in one small step exceeds ``strength`` times the glued area, or the torque exceeds that force
times a sixth of the patch's size (the bending moment a glued rectangle b x h of tensile strength s
carries before its edge fails is s b h^2 / 6 = F h / 6). The glued area is the count of touching
particles along the seam times a particle's cross-section (2r)^2, so a longer seam holds more, whatever the
particle size. Why joints rather than distance constraints between the touching particles: a joint acts
on the bodies' poses with their whole masses and inertias (exact for a mass ratio of 1000), and its
force is the one Blender's breaking threshold reads; distance constraints between particles would be
averaged away by shape matching, and their forces summed over a seam would be a guess.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from .bodies import RigidBody
from .builder import positive
from .errors import SimulationInputError
from .joints import Joint
from .neighbors import find_pairs

if TYPE_CHECKING:
    from .world import World

# Particles of two bodies closer than (2 + GLUE_GAP_RADII) r touch: pieces built face to face on the
# particle grid sit exactly 2r apart, and a fractured piece sampled on its own grid may sit up to half a
# spacing farther.
GLUE_GAP_RADII = 1.0


def _strengths(strength: float | Sequence[float], n: int) -> NDArray[np.float64]:
    """(n,) glue strengths, Pa, from one number or one per body, checked (>= 0 and finite, one > 0)."""
    try:
        s = np.asarray(strength, dtype=np.float64)
    except (TypeError, ValueError):
        raise SimulationInputError(
            f"glue strength must be a number or one per body, got {strength!r}"
        ) from None
    if s.ndim > 1 or (s.ndim == 1 and len(s) != n):
        raise SimulationInputError(f"glue strength must be one number or one per body ({n}), got {s.shape}")
    s = np.broadcast_to(s, (n,))
    if not np.all(np.isfinite(s)) or (n and (s.min() < 0.0 or s.max() <= 0.0)):
        raise SimulationInputError(f"glue strength must be finite, >= 0 and some > 0 (Pa), got {strength!r}")
    return s


def glue_touching(
    world: World,
    bodies: Sequence[RigidBody] | None,
    strength: float | Sequence[float],
    gap: float | None = None,
) -> list[Joint]:
    """Glue every two of ``bodies`` whose particles touch now; returns the new joints.

    Args:
        world: the world the bodies belong to.
        bodies: the rigid bodies to glue to each other (None: every rigid body of the world).
        strength: tensile strength of the glue, Pa (N/m^2) of glued area: a seam of area A breaks when
            pulled with more than strength * A newtons (mortar ~1e5-1e6 Pa, hot glue ~1e6); or one per
            body of ``bodies``, a seam then holding with the weaker of its two sides (0: that body is not
            glued).
        gap: particles farther apart than 2r + gap are not glued, metres (None: ``GLUE_GAP_RADII`` r).

    Raises:
        SimulationInputError: a body is not a rigid body of this world, a strength is negative or none is
            > 0, or the gap is not > 0.
    """
    r = world.radius
    reach = 2.0 * r + (GLUE_GAP_RADII * r if gap is None else positive(gap, "glue gap"))
    known = [b for b in world.bodies if isinstance(b, RigidBody)]
    chosen = known if bodies is None else list(bodies)
    for body in chosen:
        if not any(b is body for b in known):
            raise SimulationInputError(f"{body!r} is not a rigid body of this world: glue joins those")
    per_body = _strengths(strength, len(chosen))
    chosen = [b for b, s in zip(chosen, per_body, strict=True) if s > 0.0]
    per_body = per_body[per_body > 0.0]
    if len(chosen) < 2:
        return []
    idx = np.concatenate([b.indices for b in chosen])
    owner = np.repeat(np.arange(len(chosen)), [len(b.indices) for b in chosen])
    x = world.positions[idx]
    i, j = find_pairs(x, reach, owner, np.zeros(len(chosen), dtype=bool))
    if not len(i):
        return []
    a, b = np.minimum(owner[i], owner[j]), np.maximum(owner[i], owner[j])
    key = a * len(chosen) + b
    pairs, which, count = np.unique(key, return_inverse=True, return_counts=True)
    mid = 0.5 * (x[i] + x[j])
    centre = np.stack([np.bincount(which, mid[:, k]) for k in range(3)], axis=1) / count[:, None]
    # Glued area: the particles on each side of the seam (a particle touches its face neighbour and,
    # within the gap, the diagonal ones: pairs would count a face 3-5 times), (2r)^2 each, both sides' mean.
    lo = np.where(owner[i] < owner[j], i, j)
    hi = np.where(owner[i] < owner[j], j, i)
    n = len(x)
    side_a = np.bincount(np.unique(which * n + lo) // n, minlength=len(pairs))
    side_b = np.bincount(np.unique(which * n + hi) // n, minlength=len(pairs))
    area = 0.5 * (side_a + side_b) * (2.0 * r) ** 2
    force = np.minimum(per_body[pairs // len(chosen)], per_body[pairs % len(chosen)]) * area
    joints = []
    for p, key_p in enumerate(pairs.tolist()):  # one joint per glued pair (build time, not per step)
        body_a, body_b = chosen[key_p // len(chosen)], chosen[key_p % len(chosen)]
        size = float(np.sqrt(area[p]))
        joints.append(
            world.add_joint(
                body_a, body_b, "FIXED", pivot=centre[p], break_force=float(force[p]),
                break_torque=float(force[p]) * size / 6.0, name=f"glue {body_a.name or body_a.number}-"
                f"{body_b.name or body_b.number}",
            )
        )  # fmt: skip
    return joints
