# SPDX-License-Identifier: GPL-3.0-or-later
"""Force fields: Blender's Force, Wind, Vortex, Turbulence and Drag effectors acting on the particles.

A :class:`ForceField` holds one field's settings and pose (``World.add_force_field`` makes one; move it
with ``set_transform(M)`` and change it with ``configure(...)`` between steps, like a mesh collider).
:class:`FieldSystem` evaluates all fields of a world in the external-force stage of the step
(``Solver.small_step``, step 1), vectorized over the particles with a Python loop over the few fields.

The meaning of every setting follows Blender's effector code (``source/blender/blenkernel/intern/
effect.cc``: ``get_effector_data``, ``effector_falloff``, ``falloff_func``, ``do_physical_effector``),
with these documented differences (docs/physics.md, "Force fields"):

* Every kind's force vector ``E`` (newtons) at each particle pushes its *object as a whole*: particle i
  of a rigid or granular object b gets ``a_i = weight_b * E(x_i, v_i) / M_b`` (``M_b`` the object's free
  mass), as Blender's rigid body world applies the effectors at a body's centre as one central force
  (``rigidbody.cc``: ``BKE_effectors_apply`` then ``RB_body_apply_central_force``). A granular object
  counts as one object (its grains share the force by mass), so a single grain gets ``a = E / m``.
* Cloth feels Blender's cloth meaning (``implicit_blender.cc``, ``SIM_mass_spring_force_face_extern``):
  ``CLOTH_EFFECTOR_SCALE`` (0.02) times the force per square metre, so a vertex gets
  ``F_i = 0.02 A_i E(x_i)`` with ``A_i`` a third of its triangles' area (at the first step with fields).
  Blender's ``wind_factor`` (the normal-only part of a field on cloth) is not modelled (its default, 0).
* Wind is Blender's: a force ``strength * falloff`` newtons along the field's Z axis
  (``do_physical_effector``, ``PFIELD_WIND``), not an air speed; with Flow (``F -= flow * falloff * v``)
  an object tends to the speed ``strength / flow`` m/s.
* Drag follows Blender's code, not the names of its settings: ``F = -(linear_drag |v| + quadratic_drag) v``
  with both capped at 2 (``PFIELD_DRAG``: Blender's "Linear" multiplies |v|^2).
* ``vel_to_sec`` is Blender's ``EffectedPoint.vel_to_sec``: 1 (the default) keeps ``strength`` in newtons;
  Blender's rigid bodies and cloth evaluate fields with the scene's frame rate there
  (``pd_point_from_loc``), so every force is divided by it (a Force of 2 pushes a 1 kg rigid body at
  2/24 m/s^2 at 24 fps), except Flow and the new Vortex's -v, and Drag's ``linear_drag`` term grows by it.
  The Blender layer passes the frame rate, so fields move bodies as Blender's own do.
* Noise on the strength (``noise``) and Turbulence are deterministic value noise on an integer-hashed
  lattice seeded by ``seed`` (Blender: a per-evaluation random number and Perlin noise), so a run is
  bit-identical to the last.
* Velocity-proportional terms (Drag, Flow, the Vortex's -v) are integrated implicitly,
  ``v <- (v + h a) / (1 + h k)``, so strong drag on light particles cannot blow up.
* A field's pose and settings hold for a whole ``World.step`` (colliders interpolate theirs).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .errors import SimulationInputError
from .model import KIND_CLOTH
from .wind_air import wind_air_velocity

if TYPE_CHECKING:
    from .model import ParticleModel
    from .state import ParticleState

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

KINDS = ("FORCE", "WIND", "VORTEX", "TURBULENCE", "DRAG")
SHAPES = ("POINT", "LINE", "PLANE")
FALLOFF_TYPES = ("SPHERE", "TUBE", "CONE")
Z_DIRECTIONS = ("BOTH", "POSITIVE", "NEGATIVE")

# Blender's cloth: effector forces per square metre of cloth times this (effector_scale).
CLOTH_EFFECTOR_SCALE = 0.02
# Blender caps both drag coefficients at this (effect.cc, PFIELD_DRAG).
DRAG_CAP = 2.0
# Noise on the strength varies over this many seconds (one lattice step in time) and metres.
NOISE_TIME_CELL = 0.1
NOISE_SPACE_CELL = 1.0
# Blender's turbulence: BLI_noise_generic_turbulence(size, x, y, z, oct=2, hard=0): octaves 0..2.
TURBULENCE_OCTAVES = 2
_TINY = 1e-12

_SETTING_DEFAULTS: dict[str, Any] = {
    "strength": 1.0,
    "flow": 0.0,
    "shape": None,  # Blender's default per kind (PLANE for Wind and Vortex, POINT otherwise)
    "falloff_type": "SPHERE",
    "falloff_power": 0.0,
    "use_min_distance": False,
    "distance_min": 0.0,
    "use_max_distance": False,
    "distance_max": 0.0,
    "radial_falloff": 0.0,
    "use_radial_min": False,
    "radial_min": 0.0,
    "use_radial_max": False,
    "radial_max": 0.0,
    "z_direction": "BOTH",
    "noise": 0.0,
    "size": 0.0,
    "seed": 1,
    "linear_drag": 1.0,
    "quadratic_drag": 0.0,
    "use_global_coords": False,
    "enabled": True,
    # Blender's EffectedPoint.vel_to_sec: 1 for SI newtons; Blender's rigid bodies and cloth use the frame
    # rate (pd_point_from_loc), so their fields push with strength / fps and Drag's first term grows by fps.
    "vel_to_sec": 1.0,
}


def _number(value: Any, what: str, low: float = -np.inf) -> float:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise SimulationInputError(f"force field {what} must be a number, got {value!r}") from None
    if not np.isfinite(v) or v < low:
        bound = f" >= {low:g}" if np.isfinite(low) else ""
        raise SimulationInputError(f"force field {what} must be a finite number{bound}, got {value!r}")
    return v


def _choice(value: Any, what: str, options: Sequence[str]) -> str:
    v = str(value).upper()
    if v not in options:
        raise SimulationInputError(f"force field {what} must be one of {', '.join(options)}, got {value!r}")
    return v


def as_field_transform(matrix: ArrayLike) -> FloatArray:
    """A finite (4, 4) object-to-world matrix whose Z axis is not zero."""
    m = np.asarray(matrix, dtype=np.float64)
    if m.shape != (4, 4) or not np.all(np.isfinite(m)):
        raise SimulationInputError(f"force field transform must be a finite 4x4 matrix, got shape {m.shape}")
    if np.linalg.norm(m[:3, 2]) <= _TINY:
        raise SimulationInputError("force field transform has a zero Z axis (scale 0): give it a scale")
    return m.copy()


class ForceField:
    """One force field: kind, settings (Blender's names and meaning) and pose.

    Attributes:
        kind: FORCE, WIND, VORTEX, TURBULENCE or DRAG.
        name: optional label (the Blender layer uses the object's name).
        transform: (4, 4) object-to-world matrix; the field's origin is its translation, its
            direction ("normal") its Z axis.
        strength, flow, shape, falloff_type, falloff_power, use_min_distance, distance_min,
        use_max_distance, distance_max, radial_falloff, use_radial_min, radial_min, use_radial_max,
        radial_max, z_direction, noise, size, seed, linear_drag, quadratic_drag, use_global_coords:
            as Blender's ``FieldSettings`` of the same name (see the module docstring for the units).
        enabled: False makes the field do nothing.
    """

    def __init__(
        self, kind: str, transform: ArrayLike | None = None, name: str | None = None, **settings: Any
    ) -> None:
        self.kind = _choice(kind, "kind", KINDS)
        self.name = name
        self.transform = as_field_transform(np.eye(4) if transform is None else transform)
        for key, value in _SETTING_DEFAULTS.items():
            setattr(self, key, value)
        self.shape = "PLANE" if self.kind in ("WIND", "VORTEX") else "POINT"
        self.configure(**settings)

    # Declared for type checkers; set in __init__ from _SETTING_DEFAULTS.
    strength: float
    flow: float
    shape: str
    falloff_type: str
    falloff_power: float
    use_min_distance: bool
    distance_min: float
    use_max_distance: bool
    distance_max: float
    radial_falloff: float
    use_radial_min: bool
    radial_min: float
    use_radial_max: bool
    radial_max: float
    z_direction: str
    noise: float
    size: float
    seed: int
    linear_drag: float
    quadratic_drag: float
    use_global_coords: bool
    enabled: bool

    def configure(self, **settings: Any) -> None:
        """Change settings (names as the attributes); unknown names or bad values raise."""
        unknown = sorted(set(settings) - set(_SETTING_DEFAULTS))
        if unknown:
            raise SimulationInputError(
                f"unknown force field setting(s) {', '.join(unknown)}; known: {', '.join(_SETTING_DEFAULTS)}"
            )
        for key, value in settings.items():
            if key == "shape":
                # Blender's SURFACE and POINTS (distance to a mesh) are not supported: the object's origin.
                v = str(value).upper()
                self.shape = "POINT" if v in ("SURFACE", "POINTS") else _choice(v, key, SHAPES)
            elif key == "falloff_type":
                self.falloff_type = _choice(value, key, FALLOFF_TYPES)
            elif key == "z_direction":
                self.z_direction = _choice(value, key, Z_DIRECTIONS)
            elif key == "seed":
                self.seed = int(_number(value, key))
            elif isinstance(_SETTING_DEFAULTS[key], bool):
                setattr(self, key, bool(value))
            elif key in ("strength", "flow", "noise"):
                setattr(self, key, _number(value, key))
            elif key == "vel_to_sec":
                self.vel_to_sec = max(_number(value, key, 0.0), _TINY)
            else:
                setattr(self, key, _number(value, key, 0.0))

    def set_transform(self, matrix: ArrayLike) -> None:
        """Move the field (object-to-world 4x4); takes effect from the next step."""
        self.transform = as_field_transform(matrix)

    def __repr__(self) -> str:
        label = f" {self.name!r}" if self.name else ""
        return f"<ForceField {self.kind}{label} strength={self.strength:g}>"

    # ------------------------------------------------------------------ evaluation
    # Positions and velocities here are coordinate-major (3, N) contiguous arrays: NumPy 1.26 is many
    # times slower on (N, 3) x (3,) broadcasting (see fastops), and every row below is one fast pass.
    def frame(self) -> tuple[FloatArray, FloatArray]:
        """(origin (3,), unit Z axis (3,)) in world space."""
        m = self.transform
        z = m[:3, 2]
        return m[:3, 3].copy(), z / np.linalg.norm(z)

    def _relative(self, xt: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        """(r = x - origin (3, N), fac = r . n (N,), n (3,))."""
        center, nor = self.frame()
        r = xt - center[:, None]
        fac = nor[0] * r[0] + nor[1] * r[1] + nor[2] * r[2]
        return r, fac, nor

    def falloff(self, xt: FloatArray) -> FloatArray:
        """(N,) Blender's ``effector_falloff`` (without the effector weights) at positions xt (3, N)."""
        r, fac, nor = self._relative(xt)
        return self._falloff(r, fac, nor)

    def _falloff(self, r: FloatArray, fac: FloatArray, nor: FloatArray) -> FloatArray:
        if self.falloff_type == "SPHERE":
            out = self._dist(_length(self._vec_to_point(r, fac, nor)))
        elif self.falloff_type == "TUBE":
            radial = r - fac * nor[:, None]
            out = self._dist(np.abs(fac)) * self._rad(_length(radial))
        else:  # CONE: the angle from the Z axis, degrees
            cos = np.clip(fac / np.maximum(_length(r), _TINY), -1.0, 1.0)
            out = self._dist(np.abs(fac)) * self._rad(np.degrees(np.arccos(cos)))
        if self.z_direction == "POSITIVE":
            out = np.where(fac < 0.0, 0.0, out)
        elif self.z_direction == "NEGATIVE":
            out = np.where(fac > 0.0, 0.0, out)
        return np.asarray(out, dtype=np.float64)

    def _vec_to_point(self, r: FloatArray, fac: FloatArray, nor: FloatArray) -> FloatArray:
        """efd->vec_to_point of get_effector_data: from the field's nearest "location" to the point.

        POINT: from the origin. PLANE: along the normal from the XY plane (but Vortex measures from the
        Z axis, effect.cc: "for vortex the shape chooses between old / new force"). LINE: from the Z axis.
        """
        if self.shape == "POINT":
            return r
        along = fac * nor[:, None]
        if self.shape == "PLANE" and self.kind != "VORTEX":
            return along
        return r - along

    def _dist(self, d: FloatArray) -> FloatArray:
        return _falloff_func(
            d, self.use_min_distance, self.distance_min, self.use_max_distance, self.distance_max,
            self.falloff_power,
        )  # fmt: skip

    def _rad(self, d: FloatArray) -> FloatArray:
        return _falloff_func(
            d, self.use_radial_min, self.radial_min, self.use_radial_max, self.radial_max, self.radial_falloff
        )

    def strength_at(self, xt: FloatArray, time: float) -> FloatArray:
        """(N,) the strength with its noise: strength + noise * n(x, t), n in [-1, 1] (see module doc)."""
        s = np.full(xt.shape[1], float(self.strength))
        if self.noise != 0.0:
            cell = time / NOISE_TIME_CELL
            k = int(np.floor(cell))
            t = cell - k
            a, b = value_noise(xt / NOISE_SPACE_CELL, (self.seed * 7919 + k, self.seed * 7919 + k + 1))
            w = t * t * (3.0 - 2.0 * t)
            s += self.noise * (2.0 * (a + (b - a) * w) - 1.0)
        return s

    def effector(self, xt: FloatArray, vt: FloatArray, time: float) -> tuple[FloatArray, FloatArray]:
        """Blender's ``do_physical_effector`` for every kind, split in two.

        ``xt``, ``vt``: (3, N) positions and velocities. Returns (E (3, N) newtons, k (N,) kg/s) with the
        force E - k v: the velocity-proportional part (Drag, Flow, the plane Vortex's -v) is kept apart to
        be integrated implicitly.
        """
        n = xt.shape[1]
        r, fac, nor = self._relative(xt)
        f = self._falloff(r, fac, nor)
        on = f > 0.0  # effect.cc: the effector is skipped where its falloff is 0
        force = np.zeros((3, n))
        k = np.zeros(n)
        if not on.any():
            return force, k
        sf = self.strength_at(xt, time) * f
        if self.kind == "WIND":
            force = nor[:, None] * sf  # PFIELD_WIND: nor * strength * falloff
        elif self.kind == "FORCE":
            # force = normalize(vec_to_point) * strength * falloff: away from the origin (POINT), the
            # plane (PLANE) or the axis (LINE) for strength > 0.
            vec = self._vec_to_point(r, fac, nor)
            force = vec * (sf / np.maximum(_length(vec), _TINY))
        elif self.kind == "VORTEX":
            if self.shape == "POINT":
                # "old vortex": normalize(nor x vec_to_point) * strength * distance * falloff.
                vec = self._vec_to_point(r, fac, nor)
                tangent = _cross(nor, vec)
                force = tangent * (sf * _length(vec) / np.maximum(_length(tangent), _TINY))
            else:
                # "new vortex": temp = (nor x vec_to_point2) s f; force = nor x temp s f + temp - v.
                temp = _cross(nor, r) * sf
                force = np.asarray(_cross(nor, temp) * sf + temp, dtype=np.float64)
                k += on.astype(np.float64)  # the -v term (vel_to_sec = 1), not scaled by the falloff
        elif self.kind == "TURBULENCE":
            # Noise at vec_to_point2 + nor (field space), or the world position with use_global_coords;
            # one seeded noise per component (Blender: the same noise at permuted coordinates).
            p = xt if self.use_global_coords else r + nor[:, None]
            if self.size != 0.0:
                p = p / self.size
            force = (2.0 * np.stack(turbulence(p, self.seed)) - 1.0) * sf
        elif self.kind == "DRAG":
            # PFIELD_DRAG: -falloff |v| (min(f_strength, 2) |v| + min(f_damp, 2)) v_hat, where
            # linear_drag is f_strength and quadratic_drag f_damp (rna_object_force.cc).
            fac = _length(vt) * self.vel_to_sec
            k += f * (min(self.linear_drag, DRAG_CAP) * fac + min(self.quadratic_drag, DRAG_CAP))
        if self.kind != "DRAG" and self.flow != 0.0:
            k += self.flow * f  # effect.cc: total_force += -flow * falloff * vel
        # effect.cc: total_force += force / vel_to_sec (the new Vortex's -v vel_to_sec is the k above).
        return force / self.vel_to_sec, k


def _length(a: FloatArray) -> FloatArray:
    """(N,) lengths of the columns of a (3, N) array."""
    return np.asarray(np.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2]), dtype=np.float64)


def _cross(n: FloatArray, a: FloatArray) -> FloatArray:
    """(3, N) cross products n x a_i of a fixed (3,) vector with the columns of a (3, N) array."""
    return np.stack([n[1] * a[2] - n[2] * a[1], n[2] * a[0] - n[0] * a[2], n[0] * a[1] - n[1] * a[0]])


def _falloff_func(
    d: FloatArray, use_min: bool, dmin: float, use_max: bool, dmax: float, power: float
) -> FloatArray:
    """effect.cc ``falloff_func``: 0 beyond max, 1 within min, else (1 + d - min)^-power (min 0 if unused)."""
    if power != 0.0:
        out = np.power(np.maximum(1.0 + d - (dmin if use_min else 0.0), _TINY), -power)
    else:
        out = np.ones_like(d)
    if use_min:
        out = np.where(d < dmin, 1.0, out)
    if use_max:
        out = np.where(d > dmax, 0.0, out)
    return np.asarray(out, dtype=np.float64)


# ---------------------------------------------------------------------- deterministic noise
_HASH_PRIMES = (np.uint64(0x9E3779B185EBCA87), np.uint64(0xC2B2AE3D27D4EB4F), np.uint64(0x165667B19E3779F9))
# MurmurHash3's 64-bit finaliser (fmix64): every input bit reaches every output bit.
_FMIX = (np.uint64(0xFF51AFD7ED558CCD), np.uint64(0xC4CEB9FE1A85EC53))
_SHIFT = np.uint64(33)
_HASH_SEED_INT = 0x27D4EB2F165667C5
_MANTISSA = np.uint64((1 << 53) - 1)
_WORD = (1 << 64) - 1


def _seed_word(seed: int) -> np.uint64:
    return np.uint64(((seed & 0xFFFFFFFF) * _HASH_SEED_INT) & _WORD)  # Python ints: no overflow


def value_noise(p: FloatArray, seeds: Sequence[int]) -> list[FloatArray]:
    """Smooth value noise in [0, 1] at points p (3, N), one (N,) array per seed: hashed lattice values
    blended with smoothstep weights. The lattice point (i, j, k) hashes as fmix64(((i P0 + j) P1 + k) P2
    ^ seed), shared by the seeds up to the last step; integer arithmetic only (wrapping uint64), so it is
    the same on every machine and NumPy version."""
    base = np.floor(p)
    t = p - base
    w = t * t * (3.0 - 2.0 * t)
    cell = base.astype(np.int64)
    ints = [[(cell[a] + d).astype(np.uint64) for d in (0, 1)] for a in range(3)]  # wraps negatives
    weights = [[1.0 - w[a], w[a]] for a in range(3)]
    words = [_seed_word(s) for s in seeds]
    out = [np.zeros(p.shape[1]) for _ in seeds]
    for dx in (0, 1):
        hx = ints[0][dx] * _HASH_PRIMES[0]
        for dy in (0, 1):
            hxy = (hx + ints[1][dy]) * _HASH_PRIMES[1]
            wxy = weights[0][dx] * weights[1][dy]
            for dz in (0, 1):
                corner = (hxy + ints[2][dz]) * _HASH_PRIMES[2]
                weight = wxy * weights[2][dz]
                for target, word in zip(out, words, strict=True):
                    h = corner ^ word
                    h ^= h >> _SHIFT
                    h *= _FMIX[0]
                    h ^= h >> _SHIFT
                    h *= _FMIX[1]
                    h ^= h >> _SHIFT
                    target += weight * ((h & _MANTISSA).astype(np.float64) * (1.0 / float(1 << 53)))
    return out


def turbulence(p: FloatArray, seed: int, components: int = 3) -> list[FloatArray]:
    """Blender's ``BLI_noise_generic_turbulence`` (octaves 0..2, soft) on value noise, in [0, 1]: one
    (N,) array per component, each its own seeded noise, at points p (3, N)."""
    totals = [np.zeros(p.shape[1]) for _ in range(components)]
    amp, scale = 1.0, 1.0
    for octave in range(TURBULENCE_OCTAVES + 1):
        seeds = [seed * 31 + 101 * octave + 7 * c for c in range(components)]
        for total, noise in zip(totals, value_noise(scale * p, seeds), strict=True):
            total += amp * noise
        amp *= 0.5
        scale *= 2.0
    norm = float(1 << TURBULENCE_OCTAVES) / float((1 << (TURBULENCE_OCTAVES + 1)) - 1)
    return [total * norm for total in totals]


# ---------------------------------------------------------------------- the system
class FieldSystem:
    """All force fields of a world, per-body field weights and cloth triangles; applies them per step.

    ``bodies`` is the world's list of body handles (``indices``, ``kind``); per-particle arrays derived
    from them are rebuilt when the particles or the weights change.
    """

    def __init__(self, bodies: Sequence[Any], radius: float, clock: Callable[[], float]) -> None:
        self.fields: list[ForceField] = []
        self.clock = clock  # the world's time at the start of the frame, s
        self.bodies = bodies
        self.radius = radius
        # id(body handle) -> {None: All, kind: that kind's weight} (default 1 each)
        self.weights: dict[int, dict[str | None, float]] = {}
        self.sources: dict[int, frozenset[str]] = {}  # id(body) -> the only field names acting on it
        self.cloth_triangles: list[IntArray] = []  # (F, 3) global particle indices per cloth
        self._cache_key: tuple[Any, ...] = ()
        self._derived: dict[str, Any] = {}

    def _check(self, body: Any) -> None:
        if not any(b is body for b in self.bodies):
            raise SimulationInputError(f"{body!r} is not a body of this world")

    def set_weight(self, body: Any, weight: float, kind: str | None = None) -> None:
        self._check(body)
        key = None if kind is None else _choice(kind, "weight kind", KINDS)
        self.weights.setdefault(id(body), {})[key] = _number(weight, "weight", 0.0)
        self._cache_key = ()

    def weight(self, body: Any, kind: str | None = None) -> float:
        return self.weights.get(id(body), {}).get(kind, 1.0)

    def set_sources(self, body: Any, names: Iterable[str] | None) -> None:
        self._check(body)
        if names is None:
            self.sources.pop(id(body), None)
        else:
            self.sources[id(body)] = frozenset(str(n) for n in names)

    def reset(self) -> None:
        """Masses or cloth triangles changed in place (a cloth tore, core/tearing.py)."""
        self._cache_key = ()

    def add_cloth(self, indices: IntArray, triangles: IntArray) -> None:
        self.cloth_triangles.append(np.asarray(triangles, dtype=np.int64) + int(indices[0]))
        self._cache_key = ()

    def _arrays(self, model: ParticleModel, xt: FloatArray, active: BoolArray) -> dict[str, Any]:
        """Per-particle: body number, weight, force-to-acceleration scale; per body and kind: weights.

        A body's mass is that of its live particles: an inflow's free slots (``Fluid.emit``) weigh
        nothing, else a field pushed a first poured layer as if every reserved slot were already
        there (an inflow reserving 100 times its first frame's particles: a 100 times weaker push)."""
        n = model.particle_count
        key = (n, len(self.bodies), id(model.particle_inv_mass), active.tobytes())
        if key == self._cache_key:
            return self._derived
        body_of = np.zeros(n, np.int64)
        weight = np.ones(n)
        nb = len(self.bodies)
        kind_weight = np.ones((len(KINDS), nb))
        for b, body in enumerate(self.bodies):  # a loop over bodies, not particles
            body_of[body.indices] = b
            weight[body.indices] = self.weight(body)
            kind_weight[:, b] = [self.weight(body, k) for k in KINDS]
        w = model.particle_inv_mass
        mass = np.divide(1.0, w, out=np.zeros(n), where=(w > 0.0) & active)
        body_mass = np.bincount(body_of, weights=mass, minlength=nb)
        scale = weight / np.maximum(body_mass[body_of], _TINY)  # w_b / M_b per particle
        tris = np.concatenate(self.cloth_triangles) if self.cloth_triangles else np.zeros((0, 3), np.int64)
        if len(tris):
            # Cloth: F_i = 0.02 A_i E (Blender's face_extern), A_i a third of the area of its triangles.
            a, b_, c = (xt[:, tris[:, k]] for k in range(3))
            area = 0.5 * _length(_cross_columns(b_ - a, c - a))
            vertex_area = np.bincount(tris.ravel(), weights=np.repeat(area / 3.0, 3), minlength=n)
            cloth = np.flatnonzero(model.particle_kind == KIND_CLOTH)
            scale[cloth] = np.divide(
                CLOTH_EFFECTOR_SCALE * vertex_area[cloth] * weight[cloth],
                mass[cloth],
                out=np.zeros(len(cloth)),
                where=mass[cloth] > 0.0,
            )
        self._derived = {"body_of": body_of, "weight": weight, "scale": scale, "kind_weight": kind_weight}
        self._cache_key = key
        return self._derived

    def _field_weight(self, field: ForceField, d: dict[str, Any]) -> FloatArray:
        """(N,) the weight of one field on each particle: its body's weight times its weight of the
        field's kind, 0 for bodies whose sources leave this field out."""
        per_body = d["kind_weight"][KINDS.index(field.kind)].copy()
        if self.sources:
            for b, body in enumerate(self.bodies):  # a loop over bodies, not particles
                allowed = self.sources.get(id(body))
                if allowed is not None and field.name not in allowed:
                    per_body[b] = 0.0
        return np.asarray(per_body[d["body_of"]], dtype=np.float64)

    def apply(
        self,
        state: ParticleState,
        model: ParticleModel,
        h: float,
        time_in_frame: float,
        air: BoolArray | None = None,
    ) -> FloatArray | None:
        """v <- (v + h a) / (1 + h k) for every dynamic particle, a and k summed over the fields. On the
        ``air`` vertices (N,) (cloth that feels the air) Wind fields are an air velocity instead of a
        force: returns it, (N, 3) m/s (:mod:`.wind_air`), or None without Wind fields there."""
        active = [f for f in self.fields if f.enabled]
        if not active or model.particle_count == 0:
            return None
        time = self.clock() + time_in_frame
        x, v = state.positions, state.velocities
        xt, vt = np.ascontiguousarray(x.T), np.ascontiguousarray(v.T)
        d = self._arrays(model, xt, state.active)
        dynamic = model.particle_dynamic & (d["weight"] > 0.0) & state.active
        if not dynamic.any():
            return None
        acc = np.zeros_like(xt)
        damp = np.zeros(xt.shape[1])
        wind = None
        for field in active:
            force, k = field.effector(xt, vt, time)
            weight = self._field_weight(field, d)
            scale = d["scale"] * weight
            if field.kind == "WIND" and air is not None:
                wind = np.zeros_like(xt) if wind is None else wind
                wind += force * (weight * d["weight"] * air)
                scale = np.where(air, 0.0, scale)
            acc += force * scale
            damp += scale * k
        keep = np.where(dynamic, 1.0, 0.0)
        factor = keep / (1.0 + h * damp)
        for axis in range(3):  # column by column: see fastops on (N, 3) broadcasting
            v[:, axis] = np.where(dynamic, (vt[axis] + h * acc[axis]) * factor, vt[axis])
        return None if wind is None else np.ascontiguousarray(wind_air_velocity(wind).T)


def _cross_columns(p: FloatArray, q: FloatArray) -> FloatArray:
    """(3, N) column-wise cross products of two (3, N) arrays."""
    return np.stack([p[1] * q[2] - p[2] * q[1], p[2] * q[0] - p[0] * q[2], p[0] * q[1] - p[1] * q[0]])
