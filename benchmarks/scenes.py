"""Standard benchmark scenes S1-S5 (issue 8): geometry in NumPy, shared by our solver and every peer.

Coordinates are SI, Z up. Every peer builds its objects from the arrays made here (Blender's cloth grid is
made with ``primitive_grid_add`` as a user would, and has the same 65x65 vertices), so all solvers see the
same geometry. Quality figures are computed by the functions at the bottom, the same code for every solver.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

FPS = 24
FRAMES = 48

# --------------------------------------------------------------------------------------------------------
# Mesh generators


def grid(n: int = 65, size: float = 2.0, z: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """An n x n vertex grid of side ``size`` centred on the origin at height z, as triangles (2 per quad).

    Vertex k = i * n + j sits at x = -size/2 + j * h, y = -size/2 + i * h (h = size / (n - 1)).
    """
    h = size / (n - 1)
    coords = -size / 2 + h * np.arange(n)
    yy, xx = np.meshgrid(coords, coords, indexing="ij")
    verts = np.stack([xx.ravel(), yy.ravel(), np.full(n * n, z)], axis=1)
    i, j = np.meshgrid(np.arange(n - 1), np.arange(n - 1), indexing="ij")
    a = (i * n + j).ravel()
    b, c, d = a + 1, a + n, a + n + 1
    faces = np.concatenate([np.stack([a, b, d], 1), np.stack([a, d, c], 1)])
    return verts, faces.astype(np.int64)


def grid_edges(n: int = 65) -> np.ndarray:
    """The quad edges of ``grid(n)`` (no diagonals): what a Blender grid has as edges. (2 n (n-1), 2)."""
    k = np.arange(n * n).reshape(n, n)
    horiz = np.stack([k[:, :-1].ravel(), k[:, 1:].ravel()], 1)
    vert = np.stack([k[:-1, :].ravel(), k[1:, :].ravel()], 1)
    return np.concatenate([horiz, vert])


def cube(side: float = 1.0, center=(0.0, 0.0, 0.0)) -> tuple[np.ndarray, np.ndarray]:
    """A closed, outward-facing triangulated cube (8 vertices, 12 triangles)."""
    s = side / 2
    v = np.array(
        [[x, y, z] for x in (-s, s) for y in (-s, s) for z in (-s, s)], dtype=np.float64
    ) + np.asarray(center, dtype=np.float64)
    # vertex index = 4*ix + 2*iy + iz
    quads = [
        (0, 1, 3, 2),  # -x
        (4, 6, 7, 5),  # +x
        (0, 4, 5, 1),  # -y
        (2, 3, 7, 6),  # +y
        (0, 2, 6, 4),  # -z
        (1, 5, 7, 3),  # +z
    ]
    f = []
    for a, b, c, d in quads:
        f += [(a, b, c), (a, c, d)]
    return v, np.array(f, dtype=np.int64)


def uv_sphere(radius: float = 1.0, segments: int = 32, rings: int = 16, center=(0.0, 0.0, 0.0)):
    """A closed UV sphere like Blender's default (32 segments, 16 rings), triangulated, outward normals."""
    cx, cy, cz = center
    theta = np.pi * np.arange(1, rings) / rings  # polar angle of inner rings
    phi = 2 * np.pi * np.arange(segments) / segments
    st, ct = np.sin(theta)[:, None], np.cos(theta)[:, None]
    ring_v = np.stack(
        [
            (st * np.cos(phi)).ravel(),
            (st * np.sin(phi)).ravel(),
            np.broadcast_to(ct, (rings - 1, segments)).ravel(),
        ],
        1,
    )
    verts = np.concatenate([[[0.0, 0.0, 1.0]], ring_v, [[0.0, 0.0, -1.0]]]) * radius + (cx, cy, cz)
    top, bottom = 0, len(verts) - 1

    def vid(r, s):
        return 1 + r * segments + (s % segments)

    faces = []
    for s in range(segments):
        faces.append((top, vid(0, s), vid(0, s + 1)))
        faces.append((bottom, vid(rings - 2, s + 1), vid(rings - 2, s)))
        for r in range(rings - 2):
            a, b = vid(r, s), vid(r, s + 1)
            c, d = vid(r + 1, s), vid(r + 1, s + 1)
            faces += [(a, c, d), (a, d, b)]
    return verts, np.array(faces, dtype=np.int64)


def block_points(nx: int, ny: int, nz: int, pitch: float, bottom: float) -> np.ndarray:
    """Points on an nx x ny x nz lattice of the given pitch, centred in x/y, lowest layer at z=bottom."""
    xs = (np.arange(nx) - (nx - 1) / 2) * pitch
    ys = (np.arange(ny) - (ny - 1) / 2) * pitch
    zs = bottom + np.arange(nz) * pitch
    z, y, x = np.meshgrid(zs, ys, xs, indexing="ij")
    return np.stack([x.ravel(), y.ravel(), z.ravel()], 1)


# --------------------------------------------------------------------------------------------------------
# Scene definitions


@dataclass
class Scene:
    name: str
    title: str
    frames: int = FRAMES
    params: dict = field(default_factory=dict)


# S1: 65x65 cloth, 2 m, dropped from 1 m onto a sphere of radius 0.5 at the origin (its top at z = 0.5).
S1_N = 65
S1_SIZE = 2.0
S1_HEIGHT = 1.0
S1_SPHERE_R = 0.5
S1_SPHERE_CENTER = (0.0, 0.0, 0.0)
S1_RADIUS = S1_SIZE / (S1_N - 1) / 2  # particle radius: half the grid spacing (3.125 cm / 2)

# S2: 125 cubes of 0.5 m in a 5x5x5 block (5 cm gaps), lowest layer's bottom at z = 0.5, onto the ground.
S2_SIDE = 0.5
S2_COUNT = 5
S2_PITCH = 0.55
S2_BOTTOM = 0.5
S2_RADIUS = S2_SIDE / 6  # 3x3x3 particles per cube
# The Particle Radius a new Blender scene has (blender/properties.py): S2-auto's world radius.
DEFAULT_RADIUS = 0.05

# S3: 1000 grains of radius 5 cm, 10x10x10 block (1 cm gaps), lowest centres at z = 0.5.
S3_RADIUS = 0.05
S3_PITCH = 2.2 * S3_RADIUS
S3_BOTTOM = 0.5

# S4: grain blocks, same radius and spacing as S3.
S4_SIZES = {"10k": (25, 20, 20), "100k": (50, 50, 40), "1M": (100, 100, 100)}


# S6: a deforming collider of about 20,000 triangles (issue 12): a UV sphere of radius 1 m resting on the
# ground whose surface ripples every frame (a wave travelling around its x axis along the normals, 5 cm
# amplitude), with the S3 block of 1000 grains dropped onto its top. The mesh is passed to the collider
# every frame.
S6_SPHERE_R = 1.0
S6_SEGMENTS, S6_RINGS = 128, 80  # 2 * 128 * 79 = 20,224 triangles
S6_AMPLITUDE = 0.05
S6_BOTTOM = 2.3  # lowest grain centres, above the sphere's top (z = 2 + amplitude)


def s6_sphere():
    """The S6 collider, its poles on the x axis: the grains land where the triangles are regular, as on a
    character's body, not on a UV sphere's pole where 128 slivers meet."""
    v, f = uv_sphere(S6_SPHERE_R, S6_SEGMENTS, S6_RINGS)
    return v[:, [2, 1, 0]] * [1.0, 1.0, -1.0] + [0.0, 0.0, S6_SPHERE_R], f


def s6_deformed(vertices: np.ndarray, frame: int) -> np.ndarray:
    """The S6 sphere's vertices at ``frame``: pushed along their normals by a wave travelling around x."""
    center = np.array([0.0, 0.0, S6_SPHERE_R])
    normal = (vertices - center) / S6_SPHERE_R
    phase = 2.0 * np.pi * frame / FPS + 3.0 * np.arctan2(vertices[:, 1], vertices[:, 2] - S6_SPHERE_R)
    return vertices + (S6_AMPLITUDE * np.sin(phase))[:, None] * normal


# S7 and S8: dam breaks (issue 13). A column of water on the fill lattice (spacing 2r, exactly at rest
# density) stands one lattice spacing (2r) off the -x wall, the floor and both side walls of a closed
# tank of six plane colliders, twice its height and 8/3 of its length (SPlisHSPlasH's DamBreakModel.json
# proportions and gaps: its 4 x 1.5 x 3 m box, whose water starts off the walls: SPlisHSPlasH blows up
# with particles one radius from a wall); at frame 0 the dam is gone. Water particle radius 2.5 cm, as
# there. S7 at 10k and 100k particles is our solver alone (the 100k size times the 3 s/frame aim); S8,
# 30 x 28 x 30 = 25,200 particles in exactly the 4 x 1.5 x 3 m box, runs side by side with SPlisHSPlasH.
FLUID_RADIUS = 0.025
S7_SIZES = {"10k": (25, 20, 20), "100k": (50, 40, 50)}
S8_SIZE = (30, 28, 30)


@dataclass(frozen=True)
class DamBreak:
    """A dam-break tank: the box [-length/2, length/2] x [-width/2, width/2] x [0, height] (Z up) and the
    water column's lattice counts; the column's outer particle centres 3r off the walls it faces."""

    nx: int
    ny: int
    nz: int
    radius: float = FLUID_RADIUS

    @property
    def column(self) -> tuple[float, float, float]:
        d = 2.0 * self.radius
        return self.nx * d, self.ny * d, self.nz * d

    @property
    def length(self) -> float:
        return self.column[0] * 8.0 / 3.0

    @property
    def gap(self) -> float:
        return 2.0 * self.radius

    @property
    def width(self) -> float:
        return self.column[1] + 2.0 * self.gap

    @property
    def height(self) -> float:
        return 2.0 * self.column[2]

    def points(self) -> np.ndarray:
        d, r = 2.0 * self.radius, self.radius
        p = block_points(self.nx, self.ny, self.nz, d, self.gap + r)
        p[:, 0] += -self.length / 2 + self.gap + r - p[:, 0].min()  # by the -x wall
        return p

    def planes(self) -> list[tuple[tuple[float, float, float], tuple[float, float, float]]]:
        """(point, inward normal) of the six walls."""
        hl, hw, h = self.length / 2, self.width / 2, self.height
        return [
            ((0.0, 0.0, 0.0), (0.0, 0.0, 1.0)),
            ((0.0, 0.0, h), (0.0, 0.0, -1.0)),
            ((-hl, 0.0, 0.0), (1.0, 0.0, 0.0)),
            ((hl, 0.0, 0.0), (-1.0, 0.0, 0.0)),
            ((0.0, -hw, 0.0), (0.0, 1.0, 0.0)),
            ((0.0, hw, 0.0), (0.0, -1.0, 0.0)),
        ]

    def outside(self, p: np.ndarray) -> float:
        """How far the farthest particle centre is outside the tank, metres (0 if none)."""
        lo = np.array([-self.length / 2, -self.width / 2, 0.0])
        hi = np.array([self.length / 2, self.width / 2, self.height])
        return float(max(0.0, (lo - p).max(), (p - hi).max()))

    def front(self, p: np.ndarray) -> float:
        """The surge front: distance from the -x wall of the farthest 99.9th-percentile particle, metres
        (a percentile, so one splashed droplet does not count)."""
        return float(np.percentile(p[:, 0], 99.9) + self.length / 2)


def s7_dam(size: str) -> DamBreak:
    return DamBreak(*S7_SIZES[size])


def s8_dam() -> DamBreak:
    return DamBreak(*S8_SIZE)


def s6_points() -> np.ndarray:
    return block_points(10, 10, 10, S3_PITCH, S6_BOTTOM)


def s1_cloth():
    return grid(S1_N, S1_SIZE, S1_HEIGHT)


# S9 (issue 22): mixed sizes, 10x apart: a bed of fine sand (r = 1 cm, 60 x 60 x 6 grains at the S3
# spacing, resting on the ground) with 4 coarse rocks dropped onto it: 0.6 m cubes of 10 cm particles (3 x 3
# x 3 each), lowest faces 0.3 m above the sand. S9-one is the same scene at one size: the rocks 0.06 m
# cubes of 1 cm particles (the same 27 each), so the two differ only in the rocks' particle size and the
# ms per particle compares the cost of mixing sizes.
S9_FINE = 0.01
S9_COARSE = 0.1
S9_SAND = (60, 60, 6)
S9_ROCKS = 2  # per side


def s9_sand() -> np.ndarray:
    nx, ny, nz = S9_SAND
    return block_points(nx, ny, nz, 2.2 * S9_FINE, S9_FINE)


def s9_rocks(one_size: bool) -> list[tuple[np.ndarray, np.ndarray]]:
    """The rocks' meshes: 0.6 m cubes (0.06 m for S9-one) in a 2 x 2 grid over the sand."""
    side = 6.0 * (S9_FINE if one_size else S9_COARSE)
    top = S9_FINE + (S9_SAND[2] - 1) * 2.2 * S9_FINE + S9_FINE
    pitch = S9_SAND[0] * 2.2 * S9_FINE / S9_ROCKS
    centers = block_points(S9_ROCKS, S9_ROCKS, 1, pitch, top + 0.3 + side / 2)
    return [cube(side, tuple(c)) for c in centers]


def s1_sphere():
    return uv_sphere(S1_SPHERE_R, 32, 16, S1_SPHERE_CENTER)


def s2_cube_centers() -> np.ndarray:
    return block_points(S2_COUNT, S2_COUNT, S2_COUNT, S2_PITCH, S2_BOTTOM + S2_SIDE / 2)


def s3_points() -> np.ndarray:
    return block_points(10, 10, 10, S3_PITCH, S3_BOTTOM)


def s4_points(size: str) -> np.ndarray:
    nx, ny, nz = S4_SIZES[size]
    return block_points(nx, ny, nz, S3_PITCH, S3_BOTTOM)


# --------------------------------------------------------------------------------------------------------
# Quality figures (same code for every solver)


def edge_stretch(positions: np.ndarray, edges: np.ndarray, rest: np.ndarray) -> float:
    """Largest relative elongation of an edge, (length / rest) - 1 (0.1 = 10% stretch)."""
    d = positions[edges[:, 0]] - positions[edges[:, 1]]
    return float(np.max(np.linalg.norm(d, axis=1) / rest) - 1.0)


def convex_penetration(points: np.ndarray, verts: np.ndarray, faces: np.ndarray) -> float:
    """Deepest point inside a convex triangle mesh (0 if none): min over face planes of the depth."""
    a, b, c = verts[faces[:, 0]], verts[faces[:, 1]], verts[faces[:, 2]]
    n = np.cross(b - a, c - a)
    n /= np.linalg.norm(n, axis=1, keepdims=True)
    off = np.einsum("ij,ij->i", n, a)
    deepest = 0.0
    # in chunks, so the measurement adds little to the solver's peak memory
    for k in range(0, len(points), 256):
        # signed distance of each point to each face plane, positive outside
        sd = points[k : k + 256] @ n.T - off
        depth = -sd.max(axis=1)  # > 0 only when inside every plane
        deepest = max(deepest, float(depth.max()))
    return deepest


class Tracker:
    """Accumulates per-frame quality figures: max over frames of stretch and penetration, lowest z."""

    def __init__(self) -> None:
        self.max_stretch: float | None = None
        self.final_stretch: float | None = None
        self.max_penetration = 0.0
        self.lowest_z = float("inf")

    def stretch(self, value: float) -> None:
        self.max_stretch = value if self.max_stretch is None else max(self.max_stretch, value)
        self.final_stretch = value

    def penetration(self, value: float) -> None:
        self.max_penetration = max(self.max_penetration, float(value))

    def lowest(self, z: float) -> None:
        self.lowest_z = min(self.lowest_z, float(z))

    def as_dict(self) -> dict:
        return {
            "max_stretch": self.max_stretch,
            "final_stretch": self.final_stretch,
            "max_penetration": self.max_penetration,
            "lowest_z": self.lowest_z,
        }


# S10 (issue 26): soft bodies. Six 30 cm Jelly cubes (15^3 particles of 1 cm each, 20,250 in all) dropped
# in two rows onto four 20 cm steps (plane floor below, the steps are mesh colliders).
S10_RADIUS = 0.01
S10_SIDE = 0.3
S10_STEPS = 4


def s10_stairs() -> list[tuple[np.ndarray, np.ndarray]]:
    """The S10 stairs: four boxes 0.4 m deep (x), 1.4 m wide (y), 0.2 m higher each, rising towards -x."""
    from unified_particles.core.primitives import box_mesh

    out = []
    for k in range(S10_STEPS):
        h = 0.2 * (S10_STEPS - k)
        out.append(box_mesh((0.4, 1.4, h), (-0.4 * (S10_STEPS - k) + 0.2, 0.0, 0.5 * h)))
    return out


def s10_jellies() -> list[tuple[np.ndarray, np.ndarray]]:
    """The S10 jelly cubes: two rows of three over the top steps, staggered in height."""
    from unified_particles.core.primitives import box_mesh

    out = []
    for row, y in enumerate((-0.3, 0.3)):
        for k in range(3):
            x = -1.4 + 0.4 * k + 0.1 * row
            z = 0.2 * S10_STEPS + 0.25 + 0.35 * k + 0.15 * row
            out.append(box_mesh((S10_SIDE,) * 3, (x, y, z)))
    return out
