# SPDX-License-Identifier: GPL-3.0-or-later
"""The one exception type of the solver package."""

from __future__ import annotations


class SimulationInputError(ValueError):
    """Bad simulation input; the message says what was wrong and what to do about it.

    Raised for NaN/inf coordinates, bad array shapes, out-of-range indices, a flat mesh given as a
    rigid body, a non-positive radius, unknown settings, and particle counts that would not fit in
    memory. The Blender layer turns it into an operator report instead of a traceback.
    """
