# SPDX-License-Identifier: GPL-3.0-or-later
"""What one baked object's stream holds: which object gets the output, and each frame's row of it.

A bake writes one PC2 stream per baked body (``cachefiles.PC2Writer``), committed as the object's point
cache or turned into shape keys or keyframes at the end (``bake.outputs``). :class:`Target` links the
source's body to the object that gets the output (a granular or fluid source's particle object) and
turns the body's motion at a frame into that stream's row (:meth:`Target.row`):

* cloth, grains, liquid: vertex positions in the output object's space (inactive liquid parked where
  the liquid surface deletes it);
* rigid, PC2: the evaluated mesh's vertices carried by the body's motion, in the object's space;
* rigid, keyframes: location and rotation quaternion of the object's basis (``KEYFRAME_ROW`` floats,
  consecutive quaternions kept in one hemisphere).

Imports ``bake.outputs``, ``bake.live_source``, ``cachefiles`` and the base modules.
"""

from __future__ import annotations

import dataclasses

import bpy
import numpy as np

from .. import cachefiles as cf
from .. import mesh_io
from ..fluids import FLUID_ROLES, park_inactive, shown_points
from ..rna import mesh_of, object_settings
from ..transforms import basis_matrix, parent_frame, rest_transform_values
from .live_source import SourceEntry
from .outputs import quaternion_from_matrix

# Floats per frame of a rigid keyframe stream, as a PC2 "point" of 3: location (3), quaternion (4), padding.
KEYFRAME_ROW_POINTS = 3
KEYFRAME_ROW = 3 * KEYFRAME_ROW_POINTS


@dataclasses.dataclass
class Target:
    """One baked body and the stream of its output (``n_points`` points per frame)."""

    entry: SourceEntry
    obj: bpy.types.Object  # the simulated object
    write_obj: bpy.types.Object  # the object that gets the output (granular: the particle object)
    output: str
    uid: str
    n_points: int
    to_local: np.ndarray  # world -> write_obj local (PC2 of cloth/granular)
    rigid_vertices: np.ndarray | None = None  # rigid PC2: evaluated local vertices at build
    parent_inverse: np.ndarray | None = None  # rigid keyframes: inverse of (parent world @ parent inverse)
    scale: np.ndarray | None = None
    previous_quat: np.ndarray | None = None
    writer: cf.PC2Writer | None = None
    smooth_radius: float = 0.0  # liquid with Smooth Surface: the particle radius, m (0: points as they are)

    @property
    def kind(self) -> str:
        return self.entry.kind

    @classmethod
    def create(
        cls,
        entry: SourceEntry,
        obj: bpy.types.Object,
        write_obj: bpy.types.Object,
        output: str,
        uid: str,
        depsgraph: bpy.types.Depsgraph,
        radius: float = 0.0,
    ) -> Target:
        """The target of a body just built (objects at the start frame, ``depsgraph`` evaluated there;
        ``radius``: the particle radius, m, which a liquid's Smooth Surface smooths over)."""
        matrix = mesh_io.matrix_to_numpy(write_obj.matrix_world)
        target = cls(entry, obj, write_obj, output, uid, 0, np.linalg.inv(matrix))
        if entry.kind in FLUID_ROLES and bool(object_settings(obj).surface_smooth):
            target.smooth_radius = float(radius)
        if entry.kind == "RIGID":
            if output == "PC2":
                target.rigid_vertices = mesh_io.evaluated_positions(obj, depsgraph)
                target.n_points = len(target.rigid_vertices)
            else:
                target.n_points = KEYFRAME_ROW_POINTS
                parent = np.eye(4)
                if obj.parent is not None:
                    parent = mesh_io.matrix_to_numpy(obj.parent.matrix_world) @ mesh_io.matrix_to_numpy(
                        obj.matrix_parent_inverse
                    )
                target.parent_inverse = np.linalg.inv(parent)
                target.scale = np.array(obj.scale, dtype=np.float64)
        else:
            target.n_points = len(mesh_of(write_obj).vertices)
        return target

    def row(self, value: np.ndarray, live: np.ndarray | None) -> np.ndarray:
        """The stream's (n_points, 3) row of a frame, from the source's sample ``value`` (a rigid body's
        world matrix (4, 4), else world positions (N, 3)) and, for liquid, which particles are ``live``."""
        if self.kind == "RIGID":
            matrix = np.asarray(value, dtype=np.float64).reshape(4, 4)
            return self._rigid_points(matrix) if self.output == "PC2" else self._rigid_keyframe(matrix)
        to_local = self.to_local
        if self.entry.handle.animated:  # the object moves (its own animation or a parent's): this frame's
            to_local = np.linalg.inv(mesh_io.matrix_to_numpy(self.write_obj.matrix_world))
        if live is not None and self.smooth_radius > 0.0:  # the smoothed centres the add-on shows live
            value = shown_points(value, live, self.smooth_radius, True)
        local = mesh_io.transform_points(to_local, value)
        # Fluid not yet poured or drained: parked where the liquid surface deletes it, so the cache
        # replays without the add-on.
        return local if live is None else park_inactive(local, live)

    def _rigid_points(self, matrix: np.ndarray) -> np.ndarray:
        """Rigid PC2: the build's vertices moved by ``matrix``, in the object's space at this frame."""
        assert self.rigid_vertices is not None
        to_local = self.to_local
        if self.entry.handle.own_animation:
            # Its own animation places the object on playback too: local to where it is now.
            to_local = np.linalg.inv(mesh_io.matrix_to_numpy(self.obj.matrix_world))
        elif self.entry.handle.animated and self.obj.parent is not None:
            # A moving parent carries the object: local to where the parent puts it at this frame.
            mode, values = rest_transform_values(self.obj)
            at_rest = basis_matrix(self.obj, mode, values)
            to_local = np.linalg.inv(parent_frame(self.obj) @ at_rest)
        return mesh_io.transform_points(to_local @ matrix, self.rigid_vertices)

    def _rigid_keyframe(self, matrix: np.ndarray) -> np.ndarray:
        """Rigid keyframes: the basis location and rotation quaternion that place the object at ``matrix``."""
        assert self.parent_inverse is not None
        assert self.scale is not None
        parent_inverse = self.parent_inverse
        if self.entry.handle.animated and self.obj.parent is not None:
            # A moving parent (a rigid child keeps its world motion): the parent of this frame.
            parent_inverse = np.linalg.inv(parent_frame(self.obj))
        basis = parent_inverse @ matrix
        rotation = basis[:3, :3] / self.scale[None, :]
        quat = quaternion_from_matrix(rotation)
        if self.previous_quat is not None and float(np.dot(quat, self.previous_quat)) < 0.0:
            quat = -quat  # same rotation, kept in the previous one's hemisphere (no flips when blending)
        self.previous_quat = quat.astype(np.float32).astype(np.float64)  # as stored (resume)
        row = np.zeros(KEYFRAME_ROW, dtype=np.float64)
        row[:3], row[3:7] = basis[:3, 3], quat
        return row.reshape(KEYFRAME_ROW_POINTS, 3)
