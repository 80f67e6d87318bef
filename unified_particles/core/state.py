# SPDX-License-Identifier: GPL-3.0-or-later
"""What changes from step to step, as one typed snapshot (``World.state()`` / ``World.set_state``).

A :class:`Snapshot` holds copies, never views of the world's arrays, so keeping one (a frame cache,
a resumable bake) is safe while the world steps on. ``to_arrays`` / ``from_arrays`` give the flat
named arrays that ``np.savez`` stores without pickle; restoring a snapshot is bit-identical.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields

import numpy as np
from numpy.typing import NDArray

from .errors import SimulationInputError

FloatArray = NDArray[np.float64]


@dataclass(frozen=True, eq=False)
class Snapshot:
    """Everything time-varying in a :class:`~unified_particles.core.World`.

    Attributes:
        particle_count: N, the number of particles when the snapshot was taken.
        time: simulated time, s.
        frame: number of ``World.step`` calls so far.
        positions, velocities: (N, 3) particle state, m and m/s.
        rigid_rotation, rigid_center: (B, 3, 3) and (B, 3), each rigid body's frame.
        rigid_touch_count: (B,) particles of each rigid body touching something in the last step.
        neighbor_reference: (N, 3) or (0, 3) positions at the last neighbour-candidate build (the
            list itself is rebuilt from them, so a restored world finds the same pairs).
        collider_transform, collider_frame_start: (C, 4, 4) each mesh collider's pose now and at
            the start of the current frame.
    """

    particle_count: int
    time: float
    frame: int
    positions: FloatArray
    velocities: FloatArray
    rigid_rotation: FloatArray
    rigid_center: FloatArray
    rigid_touch_count: FloatArray
    neighbor_reference: FloatArray
    collider_transform: FloatArray
    collider_frame_start: FloatArray

    @property
    def nbytes(self) -> int:
        """Memory held by the snapshot's arrays, bytes."""
        return sum(int(getattr(self, f.name).nbytes) for f in fields(self) if f.name in _ARRAY_FIELDS)

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Named arrays for ``np.savez`` (numbers become 0-d arrays; no pickle needed)."""
        return {f.name: np.asarray(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, object]) -> Snapshot:
        """The snapshot :meth:`to_arrays` flattened (also accepts an ``np.load`` result)."""
        try:
            values: dict[str, object] = {}
            for f in fields(cls):
                raw = arrays[f.name]
                if f.name in _ARRAY_FIELDS:
                    values[f.name] = np.array(raw, dtype=np.float64, copy=True)
                elif f.name == "time":
                    values[f.name] = float(np.asarray(raw))
                else:
                    values[f.name] = int(np.asarray(raw))
        except (KeyError, TypeError, ValueError) as exc:
            raise SimulationInputError(f"not a World snapshot: missing or bad field {exc}") from None
        return cls(**values)  # type: ignore[arg-type]


_ARRAY_FIELDS = frozenset(
    (
        "positions",
        "velocities",
        "rigid_rotation",
        "rigid_center",
        "rigid_touch_count",
        "neighbor_reference",
        "collider_transform",
        "collider_frame_start",
    )
)


@dataclass(eq=False)
class ParticleState:
    """The live, time-varying arrays the solver advances in place (a :class:`Snapshot` copies them).

    Adding a body replaces the arrays by longer ones, so hold the state object, not its arrays.

    Attributes:
        positions: (N, 3) particle positions x, metres.
        velocities: (N, 3) particle velocities v, m/s.
        rigid_rotation: (B, 3, 3) each rigid body's rotation from its build frame to now.
        rigid_center: (B, 3) each rigid body's centre of mass now, metres.
        rigid_touch_count: (B,) particles of each rigid body that touched something in the last small
            step (shape matching counts them; contact masses and sleeping use them).
    """

    positions: FloatArray = field(default_factory=lambda: np.zeros((0, 3)))
    velocities: FloatArray = field(default_factory=lambda: np.zeros((0, 3)))
    rigid_rotation: FloatArray = field(default_factory=lambda: np.zeros((0, 3, 3)))
    rigid_center: FloatArray = field(default_factory=lambda: np.zeros((0, 3)))
    rigid_touch_count: FloatArray = field(default_factory=lambda: np.zeros(0))

    @property
    def particle_count(self) -> int:
        """Number of particles N."""
        return int(self.positions.shape[0])

    def add_particles(self, x: FloatArray) -> None:
        """Append particles at ``x`` (P, 3), at rest."""
        self.positions = np.concatenate([self.positions, x])
        self.velocities = np.concatenate([self.velocities, np.zeros((len(x), 3))])

    def add_rigid_body(self, center: FloatArray) -> None:
        """Append a rigid body's frame: identity rotation, centre of mass ``center`` (3,)."""
        self.rigid_rotation = np.concatenate([self.rigid_rotation, np.eye(3)[None]])
        self.rigid_center = np.concatenate([self.rigid_center, center[None]])
        self.rigid_touch_count = np.concatenate([self.rigid_touch_count, [0.0]])
