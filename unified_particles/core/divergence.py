# SPDX-License-Identifier: GPL-3.0-or-later
"""Divergence detection: when a step has blown up (NaN, absurd speeds or positions) and the error that
names the bodies and the settings to change. ``World.step`` checks every step and rolls back."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from . import geometry
from .bodies import Body
from .errors import SimulationDivergedError
from .fastops import row_abs_max
from .settings import SolverSettings
from .state import ParticleState

BoolArray = NDArray[np.bool_]

# After a step, a particle faster than this (m/s, ~30x the speed of sound) means the solver blew up.
DIVERGED_SPEED = 1.0e4
# With a max_speed limit, a particle this many times faster than the limit has blown up. The limit
# clamps v before the solve, whose corrections then set the final velocity, so a healthy particle may
# end a step above the limit; ten times is a safety margin, not a measured value.
DIVERGED_OVER_MAX_SPEED = 10.0


def divergence_speed(max_speed: float) -> float:
    """Speed (m/s) above which a particle has blown up: DIVERGED_SPEED, or more with a max_speed."""
    if not np.isfinite(max_speed):
        return DIVERGED_SPEED
    return max(DIVERGED_SPEED, DIVERGED_OVER_MAX_SPEED * float(max_speed))


def diverged_particles(state: ParticleState, max_speed: float) -> BoolArray:
    """(N,) True where a particle is NaN/inf, faster than the divergence speed or absurdly far away."""
    x, v = state.positions, state.velocities
    with np.errstate(invalid="ignore", over="ignore"):
        slow = np.einsum("ij,ij->i", v, v) <= divergence_speed(max_speed) ** 2
        near = row_abs_max(x) <= geometry.MAX_COORDINATE
    bad: BoolArray = ~(slow & near)  # NaN compares False: counted as bad
    return bad


def divergence_error(
    bad: BoolArray,
    state: ParticleState,
    bodies: Sequence[Body],
    settings: SolverSettings,
    frame: int,
    time: float,
    dt: float,
) -> SimulationDivergedError:
    """The error for a blown-up step: which bodies, what went wrong, which settings to change."""
    labels = [
        body.name or f"{body.kind} {number}" for number, body in enumerate(bodies) if bad[body.indices].any()
    ]
    count = int(np.count_nonzero(bad))
    x, v = state.positions[bad], state.velocities[bad]
    if not (np.isfinite(x).all() and np.isfinite(v).all()):
        cause = "NaN or infinite positions"
    elif np.abs(x).max() > geometry.MAX_COORDINATE:
        cause = f"positions beyond {geometry.MAX_COORDINATE:g} m"
    else:
        cause = f"speeds above {divergence_speed(settings.max_speed):g} m/s"
    shown = ", ".join(repr(label) for label in labels[:3]) + (" and others" if len(labels) > 3 else "")
    first = repr(labels[0]) if labels else "the objects"
    s = settings
    return SimulationDivergedError(
        f"the simulation blew up in step {frame + 1} (t = {time + dt:.4g} s): {count} "
        f"particles of {shown or 'the world'} got {cause}; kept the last good state (before this "
        f"step). Use more substeps (now {s.substeps}), a lower relaxation (now {s.relaxation:g}) "
        f"or a max_speed limit (now {s.max_speed:g} m/s), and check {first} for an extreme density "
        "or mass next to what it touches, or objects overlapping at the start",
        tuple(labels),
        count,
    )
