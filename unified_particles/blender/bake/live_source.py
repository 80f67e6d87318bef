# SPDX-License-Identifier: GPL-3.0-or-later
"""Where a bake's motion comes from: the live simulation (:mod:`..simulation`), frame by frame.

The bake job asks a source to ``build`` (one :class:`SourceEntry` per baked body), ``advance`` to a
frame, ``sample`` each body there, and for the solver's ``state`` (a ``core.state.Snapshot``) so an
interrupted bake can ``restore`` it and continue bit-identically. Tests replace the source with a
subclass (``runtime.bake_source_factory``) to inject failures.

Imports the frame path (``simulation``) and the base modules.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

import bpy
import numpy as np

from ...core.state import Snapshot
from .. import simulation, tear_mesh, whitewater
from ..fluids import FLUID_ROLES
from ..rna import object_settings
from ..scene_reader import Entry
from .paths import BAKED_ROLES

#: The kind of a liquid's whitewater stream.
WHITEWATER = "WHITEWATER"


@dataclasses.dataclass
class SourceEntry:
    """One baked body: ``kind`` RIGID/CLOTH/GRANULAR/FLUID/INFLOW (or WHITEWATER: a liquid's whitewater,
    ``name`` its source), the object, and the object receiving the motion."""

    kind: str
    name: str
    target: str
    handle: Entry


class LiveSource:
    """Motion from the live simulation runner.

    ``sample`` returns world-space vertex positions (cloth, granular, fluid: (N, 3)) or the rigid object's
    world matrix (4, 4) at the frame the runner is at; ``active`` which fluid particles are live.
    """

    def __init__(self, scene: bpy.types.Scene) -> None:
        self.scene_name = scene.name
        self.sim = simulation.get_simulation(scene)
        self.animated = False

    def build(self, scene: bpy.types.Scene, depsgraph: bpy.types.Depsgraph) -> list[SourceEntry]:
        self.sim.build(scene, depsgraph)
        self.animated = any(e.animated for e in self.sim.entries)
        entries = [
            SourceEntry(e.kind, e.name, e.target, e) for e in self.sim.entries if e.kind in BAKED_ROLES
        ]
        for e in self.sim.entries:  # a liquid's whitewater: a second stream, into its own object
            foam = object_settings(bpy.data.objects[e.name]).whitewater_object if e.whitewater else None
            if foam is not None:
                entries.append(SourceEntry(WHITEWATER, e.name, foam.name, e))
        return entries

    def advance(self, scene: bpy.types.Scene, frame: int) -> None:
        if self.animated:
            scene.frame_set(frame)
        self.sim.ensure_frame(scene, frame)

    def _world(self) -> Any:
        if self.sim.world is None:
            raise RuntimeError("the bake's simulation is not built")
        return self.sim.world

    def sample(self, entry: SourceEntry) -> np.ndarray:
        body = entry.handle.body
        if entry.kind == "RIGID":
            assert entry.handle.rest_matrix is not None
            return np.asarray(body.transform, dtype=np.float64) @ entry.handle.rest_matrix
        if entry.kind == "CLOTH":  # per mesh vertex (a tearing cloth's unwelded render vertices)
            return np.asarray(tear_mesh.cloth_positions(entry.handle), dtype=np.float64)
        if entry.kind == WHITEWATER:
            return whitewater.block_points(entry.handle.whitewater)[0]
        return np.asarray(self._world().positions, dtype=np.float64)[body.indices]

    def active(self, entry: SourceEntry) -> np.ndarray | None:
        """Which of a fluid's particles are live at the runner's frame ((N,) bool; None for other kinds):
        the bake parks the others where the liquid surface deletes them."""
        if entry.kind == WHITEWATER:
            return whitewater.block_points(entry.handle.whitewater)[1]
        if entry.kind not in FLUID_ROLES:
            return None
        return np.asarray(self._world().particle_active, dtype=bool)[entry.handle.body.indices]

    def state(self) -> Snapshot:
        snapshot: Snapshot = self._world().state()
        return snapshot

    def restore(self, frame: int, arrays: Mapping[str, np.ndarray]) -> None:
        """Continue from a snapshot (``Snapshot.to_arrays`` of an interrupted bake) at ``frame``. Not with
        whitewater (its particles are not in the snapshot): ValueError, and the bake starts again."""
        if any(e.whitewater is not None for e in self.sim.entries):
            raise ValueError("whitewater is not kept in the bake's snapshot")
        self.sim.adopt_state(frame, Snapshot.from_arrays(arrays))

    def close(self, scene: bpy.types.Scene) -> None:
        simulation.free_simulation(scene)
