"""Struck bodies and swept boards (issue 24, items 7 and 8).

Reference: an impact with a wall of infinite mass moving at u along its normal. Newton's law of
restitution gives the struck body's normal velocity after it, v' = u + e (u - v) (Goldstein, Classical
Mechanics, ch. 3; for a body at rest v' = (1 + e) u): with restitution 0 it leaves at the wall's speed,
never faster. Each scene below gained speed from nowhere before (core/struck.py): a box struck at
8 m/s left at 12.0 m/s (restitution 0), a kinematic paddle went through the box.

Tolerance: a contact counts from TOUCH_TOLERANCE_RADII radii off the surface, so within one small step
h a particle can be moved up to that much beyond the surface's own travel without any overlap left to
show for it: 0.1 r / h = 0.77 m/s at r = 2 cm, 24 fps and 16 small steps (measured excess: 0.46 m/s at
8 m/s, 0.01 at 12, 0.64 at 20, the stacks 0.59, 0.49 and 0.18, a kinematic paddle 0.14 and 0.02;
moving every particle of the boxes by up to 0.5 mm changes these by < 0.2 m/s; a kinematic paddle at
20 m/s 0.05, on the grid and nudged).
"""

from __future__ import annotations

import numpy as np
import pytest

from unified_particles.core import World, sweep
from unified_particles.core.primitives import box_mesh, grid_points
from unified_particles.core.solver import TOUCH_TOLERANCE_RADII

FPS = 24.0
R = 0.02
SMALL_STEP = 1.0 / (FPS * 16)  # default 4 substeps x 4 iterations
MARGIN = TOUCH_TOLERANCE_RADII * R / SMALL_STEP  # m/s, see the module docstring


def _paddle(
    speed: float,
    boxes: int = 1,
    restitution: float = 0.0,
    frames: int = 10,
    kinematic: bool = False,
    nudge_seed: int | None = None,
) -> float:
    """Largest centre speed (m/s, along the stroke) of ``boxes`` stacked 0.2 m boxes (r = 2 cm, density
    500, frictionless on a frictionless ground) struck by a paddle 0.05 x 0.6 m (0.3 m tall per box)
    moving at ``speed`` m/s along +x: a mesh collider moved by set_transform, or a kinematic body. With
    a seed every particle of the boxes is first moved by up to 0.5 mm."""
    w = World(radius=R, restitution=restitution)
    w.add_collider_plane(point=(0, 0, 0), normal=(0, 0, 1), friction=0.0)
    stack = [
        w.add_rigid(*box_mesh((0.2, 0.2, 0.2), center=(0, 0, 0.1 + 0.2 * k)), density=500.0, friction=0.0)
        for k in range(boxes)
    ]
    if nudge_seed is not None:
        x = w.positions
        x += np.random.default_rng(nudge_seed).uniform(-5e-4, 5e-4, x.shape)
        w.positions = x
    m = np.eye(4)
    m[:3, 3] = (-0.5, 0.0, 0.15 * boxes + 0.05)
    size = (0.05, 0.6, 0.3 * boxes)
    if kinematic:  # an animated rigid body: particles of infinite mass on a given path
        body = w.add_rigid(*box_mesh(size, center=m[:3, 3]), density=500.0, friction=0.0)
        w.set_kinematic(body, True)
    else:
        paddle = w.add_collider_mesh(*box_mesh(size), transform=m, friction=0.0)
    fastest = 0.0
    for k in range(1, frames + 1):
        if kinematic:
            t = np.eye(4)
            t[0, 3] = speed * k / FPS
            w.set_rigid_target(body, t)
        else:
            m[0, 3] = -0.5 + speed * k / FPS
            paddle.set_transform(m)
        w.step(1.0 / FPS)
        v = w.velocities
        fastest = max(fastest, *(float(v[b.indices, 0].mean()) for b in stack))
    return fastest


@pytest.mark.parametrize("speed", [8.0, 12.0, 20.0])
def test_struck_box_leaves_at_the_paddle_speed(speed: float) -> None:
    # Restitution 0: v' = u. It left at 12.0 and 18.0 m/s when struck at 8 and 12 before; at 20 m/s
    # the paddle went through it (8.3 m/s).
    assert _paddle(speed) == pytest.approx(speed, abs=MARGIN)


def test_struck_box_with_restitution_leaves_at_most_one_plus_e_times_the_speed() -> None:
    # v' = (1 + e) u relative to a wall of infinite mass (not e u: the wall keeps moving). The bound is
    # what holds for any contact geometry; the bounce itself depends on which particles touch first
    # (18.01 m/s here, 16.4 with the box's particles moved 0.1 mm), but it does bounce.
    e, u = 0.5, 12.0
    v = _paddle(u, restitution=e)
    assert u + MARGIN < v <= (1.0 + e) * u + MARGIN


@pytest.mark.slow
@pytest.mark.parametrize(("speed", "seed"), [(8.0, None), (12.0, None), (20.0, None), (20.0, 0), (20.0, 1)])
def test_box_struck_by_a_kinematic_paddle_leaves_at_its_speed(speed: float, seed: int | None) -> None:
    # The same paddle as an animated rigid body: it went through the box before (the box left at 0 and
    # 1.3 m/s): its particles' paths were not swept against the box's. At 20 m/s (2.6 radii per small
    # step) it went through until a carried particle moved its whole body (sweep._carry): the box left
    # at 2.5 m/s on the grid, and 11-14 m/s with the box's particles moved by up to 0.5 mm; now 20.05
    # on the grid and with three nudges, 8.00 and 12.00 at the lower speeds.
    assert _paddle(speed, kinematic=True, nudge_seed=seed) == pytest.approx(speed, abs=MARGIN)


@pytest.mark.slow
@pytest.mark.parametrize("speed", [8.0, 20.0])
def test_struck_stack_leaves_at_the_paddle_speed(speed: float) -> None:
    # Three stacked boxes and a paddle three times as tall: 11.4 m/s at 8 before; at 20 the paddle went
    # through them (7.5 m/s).
    assert _paddle(speed, boxes=3) == pytest.approx(speed, abs=MARGIN)


def test_limit_fast_paths_carries_a_particle_an_immovable_one_overtakes() -> None:
    # A kinematic particle moving 10 r along x from -5 r through a particle at rest at the origin: the
    # resting one is carried to where the other ends its step plus their offset at the touch,
    # (2 - overlap) r ahead of it, instead of being left where the kinematic one passes through it.
    x = np.array([[0.0, 0.0, 0.0], [-5 * R, 0.0, 0.0]])
    x_pred = np.array([[0.0, 0.0, 0.0], [5 * R, 0.0, 0.0]])
    movable = np.array([True, False])
    assert sweep.limit_fast_paths(x, x_pred, R, movable=movable) == 1
    gap = (2.0 - sweep.SWEPT_OVERLAP_RADII) * R
    np.testing.assert_allclose(x_pred[0], [5 * R + gap, 0.0, 0.0], atol=1e-12)
    np.testing.assert_array_equal(x_pred[1], [5 * R, 0.0, 0.0])


def _board_behind(speed: float, nudge_seed: int | None, substeps: int = 4) -> int:
    """The issue's board: a 2 cm board 0.4 m wide, reaching 2 cm into the ground, swept along it at ``speed``
    m/s through 25 grains (r = 1 cm) resting on it in a 5 x 5 square, until it is 0.3 m past them; with a
    seed each grain is first moved by up to 10 um sideways (another CPU's rounding moves them less).
    Returns the grains in the board's path (|y| < 0.2 m + r) whose centre is less than r (less the touch
    tolerance) ahead of its front face: left behind, or on their way through it."""
    fps, r = 24.0, 0.01
    w = World(radius=r, substeps=substeps)
    w.add_collider_plane(point=(0, 0, 0), normal=(0, 0, 1), friction=0.5)
    pts = grid_points((5, 5, 1), 2 * r, (-4 * r, -4 * r, r))
    if nudge_seed is not None:
        pts[:, :2] += np.random.default_rng(nudge_seed).uniform(-1e-5, 1e-5, (len(pts), 2))
    w.add_granular(pts, friction=0.5)
    m = np.eye(4)
    m[:3, 3] = (-0.3, 0.0, 0.04)
    board = w.add_collider_mesh(*box_mesh((0.02, 0.4, 0.12)), transform=m, friction=0.5)
    for k in range(1, int(np.ceil(0.6 / speed * fps)) + 2):
        m[0, 3] = -0.3 + speed * k / fps
        board.set_transform(m)
        w.step(1.0 / fps)
    x = w.positions
    in_path = np.abs(x[:, 1]) < 0.2 + r
    behind = x[:, 0] < m[0, 3] + 0.01 + r * (1.0 - TOUCH_TOLERANCE_RADII) - 1e-6
    return int((in_path & behind).sum())


@pytest.mark.parametrize("speed", [8.0, 20.0])
def test_board_swept_through_grains_leaves_none_behind(speed: float) -> None:
    # Reference: a moving wall of infinite mass carries what it meets; no grain may stay behind its
    # front face. Default budget, on the grid and with 8 nudges of 10 um: before, 24 and 25 were left
    # behind at 8 and 20 m/s; then 0-9 and 1-9; then 0 at 8 m/s and at 20 m/s 1 in 2 of 9 runs (held
    # out of the board at the step's end by the closest face: out of its back once the particle contacts
    # had pushed it past the mid-plane). Now 0 in every run: the hold at the step's end is swept from
    # the step's start (struck.hold_grains_out_at_end), so a grain goes back out the face it crossed.
    # Roots before: the frame-start stabilization met the colliders in their end pose, and the particle
    # contacts and the grain support pass pushed grains deep into the board after its hold. Three runs
    # each: the grid and two nudges.
    assert max(_board_behind(speed, seed) for seed in (None, 0, 1)) == 0
