# SPDX-License-Identifier: GPL-3.0-or-later
"""The one exception type of the solver package."""

from __future__ import annotations


class SimulationInputError(ValueError):
    """Bad simulation input; the message says what was wrong and what to do about it.

    Raised for NaN/inf coordinates, bad array shapes, out-of-range indices, a flat mesh given as a
    rigid body, a non-positive radius, unknown settings, and particle counts that would not fit in
    memory. The Blender layer turns it into an operator report instead of a traceback.
    """


class SimulationDivergedError(SimulationInputError):
    """A step produced NaN/infinite positions or explosive speeds (the solver blew up).

    Raised by ``World.step`` after the world was put back to its state before that step, so the
    last good frame is kept and stepping can continue once the cause is fixed. The message names the
    body and the settings to change.

    Attributes:
        body_names: names (or ``"body <i>"`` labels) of the bodies whose particles went bad.
        particle_count: how many particles went bad.
    """

    def __init__(self, message: str, body_names: tuple[str, ...] = (), particle_count: int = 0) -> None:
        super().__init__(message)
        self.body_names = body_names
        self.particle_count = particle_count
