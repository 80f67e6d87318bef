# SPDX-License-Identifier: GPL-3.0-or-later
"""Moving pins: where pinned particles and soft-pin anchors go during the next step.

``World.set_pin_targets`` / ``set_soft_pin_targets`` (and ``Cloth.set_pin_targets``) queue requests in a
:class:`PinSchedule`; at the start of a step :meth:`PinSchedule.take` turns them into this frame's
:class:`PinMotion` and :class:`SoftPinMotion`, which the solver follows over the frame's small steps
(a straight line from where the pins are to their targets), and :func:`finish_pins` puts the pins
exactly on target at its end.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .errors import SimulationInputError
from .model import ParticleModel
from .state import ParticleState

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


@dataclass(frozen=True)
class PinMotion:
    """Pinned particles moving over one frame: at fraction ``alpha`` of it they are at
    ``start + alpha * travel`` (a straight line from where they were to their target)."""

    idx: IntArray
    start: FloatArray
    travel: FloatArray


@dataclass(frozen=True)
class SoftPinMotion:
    """Soft pins over one frame: particle ``idx`` is pulled towards its anchor, at fraction ``alpha`` of
    the frame at ``start + alpha * travel``, by a zero-length spring of XPBD ``compliance`` (m/N)."""

    idx: IntArray
    start: FloatArray
    travel: FloatArray
    compliance: FloatArray


class PinSchedule:
    """The pin target requests made since the last step, in order (checked when made)."""

    def __init__(self) -> None:
        # (particles, positions at the end of the next step) given by set_pin_targets since the last step
        self._pin_targets: list[tuple[IntArray, FloatArray]] = []
        self._soft_pin_targets: list[tuple[IntArray, FloatArray]] = []  # the same for soft pins' anchors

    def set_pin_targets(
        self, model: ParticleModel, particle_count: int, indices: ArrayLike, positions: ArrayLike
    ) -> None:
        """Queue pinned particles ``indices`` (K,) to reach ``positions`` (K, 3), metres, by the end of the
        next step (``World.set_pin_targets``); ``model`` must be finalized."""
        idx, target = _pin_request(indices, positions, "pin targets", particle_count)
        if (model.particle_inv_mass[idx] != 0.0).any():
            raise SimulationInputError("only pinned particles (infinite mass) can be given pin targets")
        self._pin_targets.append((idx, target.copy()))

    def set_soft_pin_targets(
        self, model: ParticleModel, particle_count: int, indices: ArrayLike, positions: ArrayLike
    ) -> None:
        """Queue the anchors of soft-pinned particles ``indices`` (K,) to reach ``positions`` (K, 3), metres,
        by the end of the next step (``World.set_soft_pin_targets``); ``model`` must be finalized."""
        idx, target = _pin_request(indices, positions, "soft pin targets", particle_count)
        rows = np.searchsorted(model.soft_pin_idx, idx)
        rows = np.minimum(rows, max(len(model.soft_pin_idx) - 1, 0))
        if idx.size and (len(model.soft_pin_idx) == 0 or (model.soft_pin_idx[rows] != idx).any()):
            raise SimulationInputError(
                "only soft-pinned particles (add_cloth(soft_pins=...)) have soft pin targets"
            )
        self._soft_pin_targets.append((rows, target))

    def take(
        self, model: ParticleModel, state: ParticleState
    ) -> tuple[PinMotion | None, SoftPinMotion | None]:
        """This frame's moving pins and soft pin anchors, and forget the requests."""
        return self._take_pin_motion(state), self._take_soft_pin_motion(model, state)

    def _take_soft_pin_motion(self, model: ParticleModel, state: ParticleState) -> SoftPinMotion | None:
        """This frame's soft pin anchors: from where they are to the targets set since the last step."""
        if not len(model.soft_pin_idx):
            return None
        start = state.soft_pin_target.copy()
        end = start.copy()
        for rows, target in self._soft_pin_targets:  # the requests since the last step, in order
            end[rows] = target
        self._soft_pin_targets.clear()
        return SoftPinMotion(model.soft_pin_idx, start, end - start, model.soft_pin_compliance)

    def _take_pin_motion(self, state: ParticleState) -> PinMotion | None:
        """This frame's moving pins (the targets set since the last step), and forget the targets."""
        if not self._pin_targets:
            return None
        all_idx = np.concatenate([i for i, _ in self._pin_targets])
        all_target = np.concatenate([t for _, t in self._pin_targets])
        self._pin_targets.clear()
        # A particle given several targets keeps the last one: unique over the reversed list.
        idx, last = np.unique(all_idx[::-1], return_index=True)
        target = all_target[::-1][last]
        start = state.positions[idx].copy()
        return PinMotion(idx, start, target - start)


def finish_pins(state: ParticleState, pins: PinMotion | None, soft: SoftPinMotion | None) -> None:
    """At the end of a frame's small steps: pins exactly on target (no round-off) and still until moved
    again, soft pin anchors at their targets."""
    if pins is not None:
        state.positions[pins.idx] = pins.start + pins.travel
        state.velocities[pins.idx] = 0.0
    if soft is not None:
        state.soft_pin_target = soft.start + soft.travel


def _pin_request(
    indices: ArrayLike, positions: ArrayLike, what: str, particle_count: int
) -> tuple[IntArray, FloatArray]:
    """Checked (K,) particle indices and (K, 3) positions of a pin target request."""
    idx = np.asarray(indices, dtype=np.int64).reshape(-1)
    target = np.asarray(positions, dtype=np.float64)
    if target.shape != (idx.size, 3):
        raise SimulationInputError(
            f"{what} must be ({idx.size}, 3) positions, one per pin; got {target.shape}"
        )
    if not np.isfinite(target).all():
        raise SimulationInputError(f"{what} contain NaN or infinite coordinates")
    if idx.size and (idx.min() < 0 or idx.max() >= particle_count):
        raise SimulationInputError(f"pin indices must be in 0..{particle_count - 1}")
    return idx, target.copy()
