# SPDX-License-Identifier: GPL-3.0-or-later
"""Joints between rigid bodies, or between a rigid body and the world (``World.add_joint``).

Blender's rigid body constraint types (Fixed, Point, Hinge, Slider, Piston, Generic, Generic Spring,
Motor) are all one six-degree-of-freedom joint, as in Bullet's generic 6-DOF constraint: a pivot with
axes X, Y, Z fixed in each body; three linear coordinates (B's pivot relative to A's, along A's axes)
and three angles (B's axes relative to A's, Euler XYZ); each coordinate locked, free or limited to
[lower, upper], optionally with a damped spring toward its value at creation and a velocity motor with
a largest force or torque. Kinds only choose the defaults, with Blender's axes: a Hinge turns about
Z, a Slider slides along X, a Piston slides along and turns about X, a Motor drives X.

How it is solved (:meth:`JointSystem.solve`, once per small step, right after shape matching): the
bodies' poses (centre of mass and rotation) are read from their shape-matched particles; the joints,
grouped in colours with no body twice in a colour, are solved colour after colour on the poses with
the XPBD rigid-body corrections of Müller et al. 2020 (:mod:`.joint_solve`): springs and motors, then
the angular limits, then the linear ones (hard, zero compliance); each corrected body's particles are
then put back rigidly at its new pose. The velocity update (x* - x) / h of the step turns the
corrections into motion, so joints need no velocity pass. A joint breaks when the force (N) or torque
(N m) it needed in one small step exceeds its threshold.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from . import joint_solve as js
from .bodies import RigidBody
from .errors import SimulationInputError
from .rotations import polar_rotations

if TYPE_CHECKING:
    from .model import ParticleModel
    from .solver import Solver
    from .state import ParticleState

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

# The six coordinates of every joint, in this order (Blender's names without "limit_").
DOFS = ("lin_x", "lin_y", "lin_z", "ang_x", "ang_y", "ang_z")
_LOCKED_BY_KIND = {
    "FIXED": DOFS,
    "POINT": DOFS[:3],
    "HINGE": DOFS[:5],
    "SLIDER": ("lin_y", "lin_z", "ang_x", "ang_y", "ang_z"),
    "PISTON": ("lin_y", "lin_z", "ang_y", "ang_z"),
    "GENERIC": (),
    "GENERIC_SPRING": (),
    "MOTOR": (),
}
KINDS = tuple(_LOCKED_BY_KIND)
# Weight of the previous rotation in a joined body's rotation fit, relative to its inertia's trace. It
# picks the turn about the line of a body whose particles are collinear (a rod one particle thick), which
# the plain fit leaves undetermined: shape matching flipped such a hinged door 180 degrees about its
# length as it passed the vertical, and the hinge's locks then threw it away. It also pulls every fit
# back toward the last rotation by about this fraction of a small step's turn, a spin damping of ~4 *
# FIT_BIAS per small step (at 1e-9 a motor's measured acceleration fell 1e-6 short in a quarter second);
# rounding leaves the undetermined directions about 1e-16 of the trace, far below this.
FIT_BIAS = 1e-12
# The joint axis ``axis`` names: Z for a hinge (Blender's hinge turns about its Z), X for the kinds
# that slide along or drive X, Z otherwise.
_MAIN_AXIS = {"HINGE": 2, "SLIDER": 0, "PISTON": 0, "MOTOR": 0}


class Joint:
    """A handle on one joint (``World.add_joint``); its state lives in the world (snapshots keep it).

    Attributes:
        kind: one of ``KINDS``.
        body_a, body_b: the joined rigid bodies (``body_b`` None: joined to the world).
        index: this joint's number in ``World.joints``.
        break_force, break_torque: thresholds, N and N m (inf: unbreakable).
    """

    def __init__(
        self,
        system: JointSystem,
        index: int,
        kind: str,
        body_a: RigidBody,
        body_b: RigidBody | None,
        break_force: float,
        break_torque: float,
        name: str | None,
    ) -> None:
        self._system = system
        self.index, self.kind, self.name = index, kind, name
        self.body_a, self.body_b = body_a, body_b
        self.break_force, self.break_torque = break_force, break_torque

    @property
    def broken(self) -> bool:
        """True once the joint broke (it then holds nothing); set False to join the bodies again."""
        return bool(self._system.broken[self.index])

    @broken.setter
    def broken(self, value: bool) -> None:
        self._system.broken[self.index] = bool(value)
        self._system._pairs_changed()

    @property
    def force(self) -> float:
        """Force the joint's locks and limits applied in the last small step, N."""
        return float(self._system.force[self.index])

    @property
    def torque(self) -> float:
        """Torque the joint's locks and limits applied in the last small step, N m."""
        return float(self._system.torque[self.index])

    def __repr__(self) -> str:
        label = f" {self.name!r}" if self.name else ""
        return f"<Joint{label} {self.kind}{' (broken)' if self.broken else ''}>"


def joint_frame(axis: ArrayLike, main: int) -> FloatArray:
    """(3, 3) right-handed orthonormal frame (columns X, Y, Z) whose column ``main`` is ``axis``."""
    a = np.asarray(axis, dtype=np.float64).reshape(3)
    length = float(np.linalg.norm(a))
    if not np.isfinite(length) or length == 0.0:
        raise SimulationInputError(f"joint axis {a.tolist()} must be a finite nonzero vector")
    a = a / length
    helper = np.array([1.0, 0.0, 0.0]) if abs(a[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    u = np.cross(a, helper)
    u /= np.linalg.norm(u)
    v = np.cross(a, u)
    cols = [a, u, v]  # main, main+1, main+2 (cyclic) stay right-handed
    frame = np.empty((3, 3))
    for k in range(3):
        frame[:, (main + k) % 3] = cols[k]
    return frame


def _dof_table(values: Mapping[str, Any] | None, what: str, width: int) -> dict[int, tuple[float, ...]]:
    """{dof number: numbers} from a {"lin_x": (...), ...} mapping, checked."""
    out: dict[int, tuple[float, ...]] = {}
    for key, value in (values or {}).items():
        if key not in DOFS:
            raise SimulationInputError(f"unknown joint {what} axis {key!r}: use one of {', '.join(DOFS)}")
        numbers = tuple(float(x) for x in np.atleast_1d(np.asarray(value, dtype=np.float64)))
        if len(numbers) != width or not all(np.isfinite(numbers)):
            raise SimulationInputError(f"joint {what} {key!r} needs {width} finite numbers, got {value!r}")
        out[DOFS.index(key)] = numbers
    return out


class JointSystem:
    """All joints of a world: their static description (lists until :meth:`prepare`) and state.

    Attributes:
        joints: the handles, in order.
        broken: (J,) bool, joints that broke (snapshots keep it).
        force, torque: (J,) what each joint's locks and limits applied in the last small step, N, N m.
        on_pairs_changed: called when a joint that disables collisions is added, breaks or is mended (the
            solver then rebuilds its pair lists).
    """

    def __init__(self, on_pairs_changed: Callable[[], None] | None = None) -> None:
        self.joints: list[Joint] = []
        self.broken: BoolArray = np.zeros(0, dtype=bool)
        self.force: FloatArray = np.zeros(0)
        self.torque: FloatArray = np.zeros(0)
        self.on_pairs_changed = on_pairs_changed
        self._no_collide: BoolArray = np.zeros(0, dtype=bool)
        self._group_a: IntArray = np.zeros(0, np.int64)  # the smaller collision group of each joint's bodies
        self._group_b: IntArray = np.zeros(0, np.int64)  # and the larger
        self._rows: list[dict[str, Any]] = []
        self._arrays: dict[str, Any] | None = None
        self._prepared_for: object = None

    def __len__(self) -> int:
        return len(self.joints)

    # ------------------------------------------------------------------ building
    def add(
        self,
        state: ParticleState,
        body_a: RigidBody,
        body_b: RigidBody | None,
        kind: str,
        options: Mapping[str, Any],
    ) -> Joint:
        """A new joint (``World.add_joint`` checked the bodies); its pivot and axes are fixed in each body
        at the bodies' poses now."""
        kind = str(kind).upper()
        if kind not in _LOCKED_BY_KIND:
            raise SimulationInputError(f"unknown joint kind {kind!r}: use one of {', '.join(KINDS)}")
        opts = dict(options)
        pivot = np.asarray(opts.pop("pivot", state.rigid_center[body_a.number]), dtype=np.float64).reshape(-1)
        if pivot.shape != (3,) or not np.all(np.isfinite(pivot)):
            raise SimulationInputError("joint pivot must be 3 finite numbers (world metres)")
        frame_in = opts.pop("frame", None)
        axis = opts.pop("axis", (0.0, 0.0, 1.0))
        if frame_in is not None:
            frame = np.asarray(frame_in, dtype=np.float64).reshape(3, 3)
            if not np.allclose(frame.T @ frame, np.eye(3), atol=1e-6) or np.linalg.det(frame) < 0.0:
                raise SimulationInputError("joint frame must be a rotation matrix (columns X, Y, Z axes)")
        else:
            frame = joint_frame(axis, _MAIN_AXIS.get(kind, 2))
        lower, upper = np.full(6, -np.inf), np.full(6, np.inf)
        for k in (DOFS.index(d) for d in _LOCKED_BY_KIND[kind]):
            lower[k] = upper[k] = 0.0
        for k, (lo, hi) in _dof_table(opts.pop("limits", None), "limit", 2).items():
            if lo > hi:
                raise SimulationInputError(f"joint limit {DOFS[k]} has lower {lo} above upper {hi}")
            lower[k], upper[k] = lo, hi
        stiffness, damping = np.zeros(6), np.zeros(6)
        for k, (ks, kd) in _dof_table(opts.pop("springs", None), "spring", 2).items():
            if ks < 0.0 or kd < 0.0:
                raise SimulationInputError(f"joint spring {DOFS[k]} needs stiffness and damping >= 0")
            stiffness[k], damping[k] = ks, kd
        motor_v, motor_max = np.zeros(6), np.zeros(6)
        for k, (mv, mm) in _dof_table(opts.pop("motors", None), "motor", 2).items():
            if mm < 0.0:
                raise SimulationInputError(f"joint motor {DOFS[k]} needs a largest force/torque >= 0")
            motor_v[k], motor_max[k] = mv, mm
        break_force = float(opts.pop("break_force", np.inf) or np.inf)
        break_torque = opts.pop("break_torque", None)
        # Bullet (Blender) compares every row's impulse, linear or angular, with one threshold.
        break_torque = break_force if break_torque is None else float(break_torque)
        if not (break_force > 0.0 and break_torque > 0.0):
            raise SimulationInputError("joint break_force and break_torque must be > 0 (None: unbreakable)")
        disable_collisions = bool(opts.pop("disable_collisions", True))
        name = opts.pop("name", None)
        if opts:
            raise SimulationInputError(f"unknown joint option(s) {', '.join(sorted(opts))}")

        def local(body: RigidBody | None) -> tuple[FloatArray, FloatArray, int, int]:
            if body is None:  # the world: its "pose" is the identity
                return pivot.copy(), frame.copy(), -1, -1
            r, c = state.rigid_rotation[body.number], state.rigid_center[body.number]
            return r.T @ (pivot - c), r.T @ frame, body.number, body.group

        # Joined to the world, the world is side A: the coordinates, limits and motors then measure
        # the body's motion relative to the world (a slider's lin_x grows as the body moves along +X).
        first, second = (None, body_a) if body_b is None else (body_a, body_b)
        anchor_a, frame_a, number_a, group_a = local(first)
        anchor_b, frame_b, number_b, group_b = local(second)
        self._rows.append(dict(
            body_a=number_a, body_b=number_b, anchor_a=anchor_a,
            frame_a=frame_a, anchor_b=anchor_b, frame_b=frame_b, lower=lower, upper=upper,
            stiffness=stiffness, damping=damping, motor_v=motor_v, motor_max=motor_max,
            break_force=break_force, break_torque=break_torque,
        ))  # fmt: skip
        joint = Joint(self, len(self.joints), kind, body_a, body_b, break_force, break_torque, name)
        self.joints.append(joint)
        self.broken = np.concatenate([self.broken, [False]])
        self.force, self.torque = np.concatenate([self.force, [0.0]]), np.concatenate([self.torque, [0.0]])
        self._no_collide = np.append(self._no_collide, disable_collisions and body_b is not None)
        self._group_a = np.append(self._group_a, min(group_a, group_b))
        self._group_b = np.append(self._group_b, max(group_a, group_b))
        self._arrays = None
        self._pairs_changed()
        return joint

    def prepare(self, model: ParticleModel, radius: float | FloatArray) -> dict[str, Any]:
        """The joints as arrays for the solve, made once per model and set of joints."""
        if self._arrays is not None and self._prepared_for is model.shape_matching:
            return self._arrays
        sm = model.shape_matching
        assert sm is not None  # every joint has a rigid body
        col = {key: np.array([row[key] for row in self._rows]) for key in self._rows[0]}
        ends = np.concatenate([col["body_a"], col["body_b"]])
        bodies = np.unique(ends[ends >= 0])
        k = len(bodies)
        la = np.where(col["body_a"] >= 0, np.searchsorted(bodies, np.maximum(col["body_a"], 0)), k)
        lb = np.where(col["body_b"] >= 0, np.searchsorted(bodies, np.maximum(col["body_b"], 0)), k)
        chosen = np.isin(sm.body, bodies)
        local_body = np.searchsorted(bodies, sm.body[chosen])
        mass_p, rest = sm.mass[chosen], sm.rest[chosen]
        mass = np.bincount(local_body, weights=mass_p, minlength=k)
        # Inertia about the centre of mass in the build frame: sum m (|q|^2 E - q q^T), plus each
        # particle's own cube of side 2r (m (2r)^2 / 6 E), which keeps a one-particle body invertible.
        qq = np.einsum("pi,pj->pij", rest, rest)
        r = radius[sm.idx[chosen]] if np.ndim(radius) else radius  # type: ignore[index]
        inertia_p = (np.einsum("pii->p", qq) + (2.0 * r) ** 2 / 6.0)[:, None, None] * np.eye(3) - qq
        inertia = np.zeros((k, 3, 3))
        np.add.at(inertia, local_body, mass_p[:, None, None] * inertia_p)
        self._arrays = dict(
            bodies=bodies, la=la, lb=lb, pidx=sm.idx[chosen], plocal=local_body, prest=rest, pmass=mass_p,
            mass=mass, inv_inertia=np.linalg.inv(inertia), colours=_colours(la, lb, k), **col,
            fit_bias=FIT_BIAS * np.trace(inertia, axis1=1, axis2=2),
            driven=bool(np.any(np.concatenate([col["stiffness"], col["damping"], col["motor_max"]]) > 0.0)),
        )  # fmt: skip
        self._prepared_for = sm
        return self._arrays

    def filter_pairs(self, group: IntArray, i: IntArray, j: IntArray) -> tuple[IntArray, IntArray]:
        """Drop the candidate pairs between bodies joined by an intact joint that disables collisions
        (Blender's *Disable Collisions*, on by default)."""
        apart = self._no_collide & ~self.broken
        if not apart.any() or not len(i):
            return i, j
        n = int(max(group.max(), self._group_b.max())) + 1
        gi, gj = group[i], group[j]
        joined = self._group_a[apart] * n + self._group_b[apart]
        keep = ~np.isin(np.minimum(gi, gj) * n + np.maximum(gi, gj), joined)
        return i[keep], j[keep]

    def _pairs_changed(self) -> None:
        """A joint that keeps its bodies from colliding came or went: the pair lists are rebuilt."""
        if self.on_pairs_changed is not None:
            self.on_pairs_changed()

    def keep_rotations(self, solved: FloatArray, fitted: FloatArray) -> FloatArray:
        """``fitted`` (B, 3, 3), the frame's closing fit of every rigid body, with the joined bodies'
        rotations from the last joint solve (``solved``): the plain fit may turn a body of collinear
        particles about its line, and the next step starts from this rotation."""
        if self._arrays is None or not len(self._arrays["bodies"]):
            return fitted
        bodies = self._arrays["bodies"]
        out = fitted.copy()
        out[bodies] = solved[bodies]
        return out

    # ------------------------------------------------------------------ the solve
    def solve(
        self,
        model: ParticleModel,
        state: ParticleState,
        x: FloatArray,
        x_pred: FloatArray,
        rot_prev: FloatArray,
        h: float,
        radius: float | FloatArray,
    ) -> None:
        """One sweep over the joints on the bodies' poses, after shape matching (``x_pred`` rigid,
        ``state.rigid_rotation`` its rotations; ``x`` and ``rot_prev`` the poses at the step's start).
        Moves the joined bodies' particles in ``x_pred`` and their rotations in ``state``; marks broken
        joints."""
        if not self.joints or self.broken.all():
            return
        arr = self.prepare(model, radius)
        bodies, plocal, pidx, prest = arr["bodies"], arr["plocal"], arr["pidx"], arr["prest"]
        k = len(bodies)
        kinematic = state.rigid_kinematic[bodies]
        moving = np.append(~kinematic, False).astype(np.float64)  # the world slot (k) never moves
        inv_mass = moving / np.append(arr["mass"], 1.0)
        pose_p = np.zeros((k + 1, 3))
        pose_p[:k] = _centres(x_pred[pidx], plocal, arr["pmass"], arr["mass"])
        fit = _fit_rotations(x_pred[pidx] - pose_p[plocal], arr, rot_prev[bodies])
        pose_r = np.concatenate([fit, np.eye(3)[None]])
        inv_i = np.zeros((k + 1, 3, 3))
        inv_i[:k] = pose_r[:k] @ arr["inv_inertia"] @ np.transpose(pose_r[:k], (0, 2, 1))
        inv_i *= moving[:, None, None]
        intact = ~self.broken
        prev = None
        if arr["driven"]:  # springs and motors need the coordinates at the step's start
            prev_p = np.zeros((k + 1, 3))
            prev_p[:k] = _centres(x[pidx], plocal, arr["pmass"], arr["mass"])
            prev_r = np.concatenate([rot_prev[bodies], np.eye(3)[None]])
            prev = js.coordinates(*self._poses(arr, prev_p, prev_r, slice(None)))[0]
        for colour in arr["colours"]:
            jc = colour[intact[colour]]
            if len(jc):
                self._solve_colour(
                    arr, jc, pose_p, pose_r, inv_mass, inv_i, None if prev is None else prev[jc], h
                )
        # Each body's particles back at its corrected pose (kinematic ones stay on their path).
        dyn = ~kinematic
        if dyn.any():
            sel = dyn[plocal]
            lb, q = plocal[sel], prest[sel]
            x_pred[pidx[sel]] = np.einsum("pij,pj->pi", pose_r[lb], q) + pose_p[lb]
            rot = state.rigid_rotation.copy()  # solve_shape_matching made it; copy, as it may be shared
            rot[bodies[dyn]] = pose_r[:k][dyn]
            state.rigid_rotation = rot
        newly = intact & ((self.force > arr["break_force"]) | (self.torque > arr["break_torque"]))
        if newly.any():
            self.broken |= newly
            if self._no_collide[newly].any():
                self._pairs_changed()

    @staticmethod
    def _poses(arr: dict[str, Any], p: FloatArray, r: FloatArray, jc: IntArray | slice) -> tuple[Any, ...]:
        a, b = arr["la"][jc], arr["lb"][jc]
        return (p[a], r[a], arr["anchor_a"][jc], arr["frame_a"][jc], p[b], r[b], arr["anchor_b"][jc],
                arr["frame_b"][jc])  # fmt: skip

    def _solve_colour(
        self,
        arr: dict[str, Any],
        jc: IntArray,
        p: FloatArray,
        r: FloatArray,
        inv_mass: FloatArray,
        inv_i: FloatArray,
        prev: FloatArray | None,
        h: float,
    ) -> None:
        """Springs and motors, angular locks and limits, linear locks and limits of the joints ``jc``
        (no body twice among them), updating the poses ``p``, ``r`` in place."""
        a, b = arr["la"][jc], arr["lb"][jc]
        wa, wb, ia, ib = inv_mass[a], inv_mass[b], inv_i[a], inv_i[b]
        stiff, damp = arr["stiffness"][jc], arr["damping"][jc]
        mv, mmax = arr["motor_v"][jc], arr["motor_max"][jc]
        driven = np.flatnonzero(((stiff > 0.0) | (damp > 0.0) | (mmax > 0.0)).any(axis=0))
        if len(driven) and prev is not None:
            coords, ra, rb, fa, _, g = js.coordinates(*self._poses(arr, p, r, jc))
            for dof in driven:  # at most six passes, each over all the colour's joints
                angular = dof >= 3
                n = g[:, :, dof - 3] if angular else fa[:, :, dof]
                if angular:
                    w = js.angular_inverse_mass(ia, n) + js.angular_inverse_mass(ib, n)
                    dc = js.wrap_angle(coords[:, dof] - prev[:, dof])
                else:
                    w = js.positional_inverse_mass(wa, ia, ra, n) + js.positional_inverse_mass(wb, ib, rb, n)
                    dc = coords[:, dof] - prev[:, dof]
                lam = js.spring_multiplier(coords[:, dof], dc, stiff[:, dof], damp[:, dof], w, h)
                lam = lam + js.motor_multiplier(dc, mv[:, dof], mmax[:, dof], w, h)
                impulse = lam[:, None] * n
                self._apply(
                    p,
                    r,
                    a,
                    b,
                    wa,
                    wb,
                    ia,
                    ib,
                    ra,
                    rb,
                    None if angular else impulse,
                    impulse if angular else None,
                )
        # Locks and limits, linear and angular, as one 6 x 6 block per joint: the rows are the pivot offsets
        # along A's axes and the Euler angles (their gradients per unit relative turn are the dual basis of
        # the rate axes g_k); locked rows stay active at zero error. Solved apart, the pivot's correction
        # turned a door about its hinge axis and undid the angle limit it met (90 degrees became 90.3).
        coords, ra, rb, fa, _, g = js.coordinates(*self._poses(arr, p, r, jc))
        lo, hi = arr["lower"][jc], arr["upper"][jc]
        excess = coords - np.clip(coords, lo, hi)
        active = (excess != 0.0) | (lo == hi)
        if active.any():
            rows = np.zeros((len(jc), 6, 6))
            rows[:, :3, :3], rows[:, 3:, 3:] = fa, js.dual_basis(g)
            impulse = js.block_impulse(js.joint_mass_matrix(wa, ia, ra, wb, ib, rb), rows, -excess, active)
            self._apply(p, r, a, b, wa, wb, ia, ib, ra, rb, impulse[:, :3], impulse[:, 3:])
            self.force[jc] = js.norms(impulse[:, :3]) / (h * h)
            self.torque[jc] = js.norms(impulse[:, 3:]) / (h * h)

    @staticmethod
    def _apply(
        p: FloatArray,
        r: FloatArray,
        a: IntArray,
        b: IntArray,
        wa: FloatArray,
        wb: FloatArray,
        ia: FloatArray,
        ib: FloatArray,
        ra: FloatArray,
        rb: FloatArray,
        push: FloatArray | None,
        turn: FloatArray | None,
    ) -> None:
        """Apply the impulse ``push`` (K, 3, XPBD units lambda n: moves B along it, A against it, at the
        pivots) and the angular impulse ``turn`` (K, 3: turns B about it, A against it) (Müller et al.
        2020, Eq. 6-9). A and B are distinct within a colour, so both turn in one call (the world slot may
        repeat: it never moves)."""
        tb = np.zeros_like(ra) if turn is None else turn.copy()
        ta = -tb
        if push is not None:
            tb += js.cross(rb, push)
            ta -= js.cross(ra, push)
            p[b] += wb[:, None] * push
            p[a] -= wa[:, None] * push
        ab = np.concatenate([a, b])
        spin = np.concatenate([np.einsum("kij,kj->ki", ia, ta), np.einsum("kij,kj->ki", ib, tb)])
        r[ab] = js.rotate(r[ab], spin)


def add_joint(
    solver: Solver,
    state: ParticleState,
    bodies: Sequence[Any],
    body_a: RigidBody,
    body_b: RigidBody | None,
    kind: str,
    options: Mapping[str, Any],
) -> Joint:
    """``World.add_joint(body_a, body_b=None, kind="HINGE", **options)``: join two rigid bodies, or one to
    the world (``body_b`` None; a kinematic body works as an animated anchor).

    Args:
        body_a, body_b: rigid bodies of this world (``body_b`` None: the world).
        kind: "FIXED", "POINT", "HINGE", "SLIDER", "PISTON", "GENERIC", "GENERIC_SPRING" or "MOTOR"
            (Blender's rigid body constraint types; see the module docstring for what each locks).
        pivot: (3,) world point, metres, fixed in both bodies from now on (default: A's centre of mass).
        axis: (3,) world direction of the kind's main axis: the hinge axis (the joint's Z), the slider,
            piston or motor axis (the joint's X); default (0, 0, 1).
        frame: (3, 3) world rotation whose columns are the joint's X, Y, Z axes (instead of ``axis``;
            a Blender constraint Empty's rotation).
        limits: {"lin_x" ... "ang_z": (lower, upper)}, metres or radians: the coordinate stays within
            them (lower == upper locks it); coordinates a kind leaves free are free without one.
        springs: {dof: (stiffness, damping)}: N/m and N s/m (linear), N m/rad and N m s/rad
            (angular), toward the coordinate's value now.
        motors: {dof: (target_velocity, max_force)}: m/s or rad/s, with at most max_force N (linear)
            or N m (angular).
        break_force: N; the joint breaks when its linear locks and limits need more in one small step
            (None or inf: unbreakable). Blender's breaking threshold is an impulse per Bullet step:
            break_force = threshold / step (``blender/joint_reader.py``).
        break_torque: N m, the same for the angular locks and limits (default: break_force's number,
            as Bullet compares every row with one threshold).
        disable_collisions: the two bodies do not collide while joined (default True, as Blender).
        name: optional label.
    """
    for body in (body_a, body_b):
        known = isinstance(body, RigidBody) and any(b is body for b in bodies)
        if not known and (body is not None or body is body_a):
            raise SimulationInputError(f"{body!r} is not a rigid body of this world: joints join those")
    if body_a is body_b:
        raise SimulationInputError("a joint joins two different bodies (body_b None: to the world)")
    solver.ensure_built()
    if solver.joints is None:
        solver.joints = JointSystem(solver.candidates.reset)
    return solver.joints.add(state, body_a, body_b, kind, options)


def _fit_rotations(offset: FloatArray, arr: dict[str, Any], previous: FloatArray) -> FloatArray:
    """(K, 3, 3) each joined body's rotation: the polar decomposition of sum m (x - p) q^T (shape
    matching's fit, mass-weighted) plus ``fit_bias`` times its ``previous`` rotation (K, 3, 3)."""
    body, mass_p, rest = arr["plocal"], arr["pmass"], arr["prest"]
    k = len(previous)
    a = arr["fit_bias"][:, None, None] * previous
    for i in range(3):  # nine sums, one np.bincount each
        wx = mass_p * offset[:, i]
        for j in range(3):
            a[:, i, j] += np.bincount(body, weights=wx * rest[:, j], minlength=k)
    return polar_rotations(a)


def _centres(x: FloatArray, body: IntArray, mass_p: FloatArray, mass: FloatArray) -> FloatArray:
    """(K, 3) mass-weighted centres of the particles ``x`` (P, 3) of bodies ``body`` (P,)."""
    k = len(mass)
    sums = np.stack([np.bincount(body, weights=mass_p * x[:, i], minlength=k) for i in range(3)], axis=1)
    return np.asarray(sums / mass[:, None], dtype=np.float64)


def _colours(la: IntArray, lb: IntArray, world: int) -> list[IntArray]:
    """Joints grouped so that no body is in two joints of a group (greedy, at build time; the world slot
    ``world`` never moves, so it may repeat): each group is then one vectorized Gauss-Seidel pass."""
    used: list[set[int]] = []
    colour = np.zeros(len(la), dtype=np.int64)
    for j, (a, b) in enumerate(zip(la.tolist(), lb.tolist(), strict=True)):
        ends = {a, b} - {world}
        c = next((c for c, u in enumerate(used) if not (u & ends)), len(used))
        if c == len(used):
            used.append(set())
        used[c] |= ends
        colour[j] = c
    return [np.flatnonzero(colour == c) for c in range(len(used))]
