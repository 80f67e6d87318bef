# SPDX-License-Identifier: GPL-3.0-or-later
"""A world at rest skips the rest of its frame: a small step that changed nothing is a fixed point.

With sleeping on (``sleep_threshold``), a pile that has come to rest holds every particle where it was
after each small step, with zero velocity. From then on every small step of the frame starts from the same
state as the one before, and the step is a pure function of that state and of the frame's inputs
(colliders, kinematic paths, pins, force fields: all fixed within a frame when nothing moves), so it gives
the same result bit for bit. :class:`RestCheck` notices it: it keeps the input of a small step that starts
at rest (every velocity exactly zero) and, after the step, compares it with the output; equal means the
frame's remaining small steps would repeat it, and ``World.step`` skips them. A pile of 125 boxes at rest
(S2 with a sleep threshold of 0.05 m/s) then costs two or three of its 16 small steps per frame.

Only frames whose small steps see the same inputs qualify (``RestCheck.frame_qualifies``): no kinematic
bodies, moving pins or soft pins, force fields, fluid, tearing, soft bodies, balloons or joints (which
carry state of their own from step to step), and every mesh collider still and not deforming. The first
small step of a frame (which runs the stabilization pass) never counts: the next one differs from it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from .state import ParticleState

FloatArray = NDArray[np.float64]


class RestCheck:
    """Detects a small step that changed nothing (see the module docstring)."""

    def __init__(self) -> None:
        self.qualifies = False  # this frame's small steps all see the same inputs (frame_qualifies)
        self.at_rest = False  # the last small step was a fixed point: the frame's others may be skipped
        self._before: tuple[FloatArray, FloatArray, FloatArray] | None = None

    def frame_qualifies(self, solver: Any) -> None:
        """Before a frame's small steps (after its pins and kinematic paths are set): whether its small
        steps all see the same inputs, so that a fixed point repeats."""
        model = solver.model
        meshes_still = all(
            not mesh.deforming and np.array_equal(mesh.transform, mesh.frame_start)
            for mesh in solver.colliders.meshes
        )
        self.qualifies = (
            meshes_still
            and solver.kinematic is None
            and solver.pin_motion is None
            and solver.soft_pin_motion is None
            and (solver.fields is None or not solver.fields.fields)  # a cloth alone makes an empty system
            and solver.tearing is None
            and solver.joints is None
            and not model.any_fluid
            and model.soft is None
            and model.balloons is None
        )
        self.at_rest = False
        self._before = None

    def before_step(self, state: ParticleState, stabilize: bool) -> None:
        """Keep the input of a small step that may be a fixed point: not the frame's first (``stabilize``),
        and starting with every velocity exactly zero (a moving world pays this one test)."""
        self.at_rest = False
        self._before = None
        if self.qualifies and not stabilize and not state.velocities.any():
            self._before = (
                state.positions.copy(),
                state.rigid_rotation.copy(),
                state.rigid_touch_count.copy(),
            )

    def after_step(self, state: ParticleState) -> None:
        """Set ``at_rest`` when the step just taken ended exactly where it started (positions, zero
        velocities, rigid rotations and touch counts, which the next step reads)."""
        before, self._before = self._before, None
        self.at_rest = (
            before is not None
            and not state.velocities.any()
            and np.array_equal(state.positions, before[0])
            and np.array_equal(state.rigid_rotation, before[1])
            and np.array_equal(state.rigid_touch_count, before[2])
        )
