"""Bad input and faults in the core (issue 6): clear SimulationInputError messages, refusals before
allocating, solver blow-ups caught after a step with the last good state kept, and the security rules
(no pickle, only the ``files`` permission)."""

from __future__ import annotations

import re
import time
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from unified_particles.core import SimulationDivergedError, SimulationInputError, Snapshot, World
from unified_particles.core import world as world_module
from unified_particles.core.primitives import box_mesh, grid_mesh

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "unified_particles"


def scene(**settings: Any) -> tuple[World, dict[str, Any]]:
    """Ground, a rigid box, a pinned-free cloth and a few grains."""
    w = World(radius=0.1, **settings)
    w.add_collider_plane()
    v, f = box_mesh((0.6, 0.6, 0.6), (0.0, 0.0, 0.5))
    gv, gf = grid_mesh(1.0, 5, (2.0, 0.0, 0.5))
    bodies = {
        "box": w.add_rigid(v, f, name="Box"),
        "cloth": w.add_cloth(gv, gf, name="Sheet"),
        "sand": w.add_granular(np.array([[-2.0, 0.0, 0.5], [-2.0, 0.0, 0.75]]), name="Sand"),
    }
    return w, bodies


def assert_same_state(a: Snapshot, b: Snapshot) -> None:
    arrays_a, arrays_b = a.to_arrays(), b.to_arrays()
    assert arrays_a.keys() == arrays_b.keys()
    for key in arrays_a:
        np.testing.assert_array_equal(arrays_a[key], arrays_b[key], err_msg=key)


# ------------------------------------------------------------------------------------------- bad input

BOX_V, BOX_F = box_mesh((1.0, 1.0, 1.0))
GRID_V, GRID_F = grid_mesh(1.0, 4)


def _with_vertex(value: float) -> np.ndarray:
    v = BOX_V.copy()
    v[3, 1] = value
    return v


BAD_WORLDS: list[tuple[dict[str, Any], str]] = [
    ({"radius": 0.0}, "radius must be a finite number > 0"),
    ({"radius": -0.1}, "radius must be a finite number > 0"),
    ({"radius": float("nan")}, "radius"),
    ({"radius": "big"}, "radius must be a number"),
    ({"radius": 0.1, "gravity": (0.0, float("inf"), 0.0)}, "gravity must be 3 finite numbers"),
    ({"radius": 0.1, "gravity": (0.0, -9.81)}, "gravity must be 3 finite numbers"),
    ({"radius": 0.1, "substeps": 0}, "substeps must be a whole number >= 1"),
    ({"radius": 0.1, "iterations": 2.5}, "iterations must be a whole number >= 1"),
    ({"radius": 0.1, "relaxation": 3.0}, "relaxation must be in"),
    ({"radius": 0.1, "restitution": 1.5}, "restitution must be in"),
    ({"radius": 0.1, "damping": -1.0}, "damping must be >= 0"),
    ({"radius": 0.1, "max_speed": float("nan")}, "max_speed"),
    ({"radius": 0.1, "frobnicate": 1.0}, "unknown setting"),
]


@pytest.mark.parametrize(("kwargs", "match"), BAD_WORLDS)
def test_bad_world_settings_are_refused_with_the_reason(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(SimulationInputError, match=match):
        World(**kwargs)


BAD_BODIES: list[tuple[str, Callable[[World], Any], str]] = [
    ("empty rigid", lambda w: w.add_rigid(np.zeros((0, 3)), np.zeros((0, 3), int)), "no vertices"),
    ("rigid without faces", lambda w: w.add_rigid(BOX_V, np.zeros((0, 3), int)), "no faces"),
    ("nan rigid", lambda w: w.add_rigid(_with_vertex(np.nan), BOX_F), "NaN or infinite"),
    ("inf cloth", lambda w: w.add_cloth(GRID_V + np.array([0.0, 0.0, np.inf]), GRID_F), "NaN or infinite"),
    ("enormous rigid", lambda w: w.add_rigid(_with_vertex(1e9), BOX_F), "from the origin"),
    ("flat rigid", lambda w: w.add_rigid(GRID_V, GRID_F), "cloth"),
    ("all degenerate faces", lambda w: w.add_rigid(BOX_V, [[0, 0, 1], [2, 2, 2]]), "degenerate"),
    ("collapsed cloth", lambda w: w.add_cloth(np.ones((4, 3)), [[0, 1, 2], [0, 2, 3]]), "zero area"),
    ("face index out of range", lambda w: w.add_cloth(GRID_V, GRID_F + 100), "out of range"),
    ("negative face index", lambda w: w.add_cloth(GRID_V, GRID_F - 100), "negative"),
    ("quads instead of triangles", lambda w: w.add_cloth(GRID_V, [[0, 1, 2, 3]]), "triangulate"),
    ("pin out of range", lambda w: w.add_cloth(GRID_V, GRID_F, pinned=[99]), "pinned"),
    ("zero density", lambda w: w.add_rigid(BOX_V, BOX_F, density=0.0), "density"),
    ("negative friction", lambda w: w.add_granular([[0, 0, 1]], friction=-1.0), "friction"),
    ("cohesion above 1", lambda w: w.add_granular([[0, 0, 1]], cohesion=2.0), "cohesion"),
    ("nan grains", lambda w: w.add_granular([[0, 0, np.nan]]), "NaN"),
    (
        "collider of nothing",
        lambda w: w.add_collider_mesh(np.zeros((0, 3)), np.zeros((0, 3), int)),
        "no vertices",
    ),
    (
        "nan collider pose",
        lambda w: w.add_collider_mesh(BOX_V, BOX_F, transform=np.full((4, 4), np.nan)),
        "transform",
    ),
    ("zero plane normal", lambda w: w.add_collider_plane(normal=(0, 0, 0)), "normal"),
    ("zero time step", lambda w: w.step(0.0), "dt"),
    ("nan time step", lambda w: w.step(float("nan")), "dt"),
]


@pytest.mark.parametrize(("what", "action", "match"), BAD_BODIES, ids=[b[0] for b in BAD_BODIES])
def test_bad_bodies_are_refused_and_leave_the_world_usable(
    what: str, action: Callable[[World], Any], match: str
) -> None:
    w, _ = scene()
    before = w.state()
    with pytest.raises(SimulationInputError, match=match):
        action(w)
    assert_same_state(w.state(), before)
    w.step(1 / 24)  # nothing was half-added
    assert np.all(np.isfinite(w.positions))


def test_state_writes_with_nan_or_wrong_shape_are_refused() -> None:
    w, _ = scene()
    with pytest.raises(SimulationInputError, match="finite"):
        w.positions = np.full_like(w.positions, np.nan)
    with pytest.raises(SimulationInputError, match="finite"):
        w.velocities = np.zeros((3, 3))
    other, _ = scene()
    other.add_granular([[5.0, 5.0, 5.0]])
    with pytest.raises(SimulationInputError, match="particles"):
        w.set_state(other.state())
    with pytest.raises(SimulationInputError, match="not a World snapshot"):
        w.set_state({"positions": w.positions})


# ------------------------------------------------------------------------------------------- resources


@pytest.mark.parametrize("kind", ["rigid", "granular", "cloth"])
def test_too_many_particles_are_refused_within_a_second_with_a_radius_that_fits(kind: str) -> None:
    limit = 2e6  # bytes: about 1,700 particles
    w = World(radius=0.002, memory_limit=limit)
    v, f = box_mesh((1.0, 1.0, 1.0))
    gv, gf = grid_mesh(1.0, 60)
    grains = np.random.default_rng(1).random((5000, 3))
    add = {
        "rigid": lambda world: world.add_rigid(v, f),
        "granular": lambda world: world.add_granular(grains),
        "cloth": lambda world: world.add_cloth(gv, gf),
    }[kind]
    began = time.perf_counter()
    with pytest.raises(SimulationInputError) as info:
        add(w)
    assert time.perf_counter() - began < 1.0
    message = str(info.value)
    assert re.search(r"would make [\d,]+ particles \(about [\d.]+ GB", message), message
    assert "memory limit of 0.0 GB" in message
    suggested = float(re.search(r"radius of at least ([\d.e+-]+) m", message).group(1))  # type: ignore[union-attr]
    assert suggested > 0.002
    if kind == "rigid":  # the suggested radius fits (cloth and grains keep their count: fewer objects)
        fits = World(radius=suggested * 1.01, memory_limit=limit)
        body = fits.add_rigid(v, f)
        assert len(body.indices) * world_module.BYTES_PER_PARTICLE <= limit


def test_absurd_radius_on_a_huge_mesh_is_refused_before_allocating() -> None:
    w = World(radius=1e-4)  # default limit: half the machine's memory
    v, f = box_mesh((100.0, 100.0, 100.0))
    began = time.perf_counter()
    with pytest.raises(SimulationInputError, match="use a particle radius of at least"):
        w.add_rigid(v, f)
    assert time.perf_counter() - began < 1.0
    assert w.particle_count == 0


# -------------------------------------------------------------------------------------------- blow-up


def test_explosive_velocities_stop_the_step_and_keep_the_last_good_state() -> None:
    w, bodies = scene()
    for _ in range(3):
        w.step(1 / 24)
    w.velocities[bodies["cloth"].indices[0]] = (0.0, 0.0, 1e7)  # e.g. a script, or a bad constraint
    before = w.state()
    frame, time_before = w.frame, w.time
    with pytest.raises(SimulationDivergedError) as info:
        w.step(1 / 24)
    error = info.value
    assert isinstance(error, SimulationInputError)  # the Blender layer reports it like any input error
    assert error.body_names == ("Sheet",)
    assert error.particle_count >= 1
    message = str(error)
    assert "'Sheet'" in message
    assert "speeds above 10000 m/s" in message
    assert "substeps (now 4)" in message
    assert f"relaxation (now {w.settings.relaxation:g})" in message
    assert "max_speed" in message
    assert_same_state(w.state(), before)  # exactly the last good state
    assert (w.frame, w.time) == (frame, time_before)
    w.velocities[bodies["cloth"].indices[0]] = 0.0  # the cause is fixed: stepping goes on
    w.step(1 / 24)
    assert np.all(np.isfinite(w.positions))


def test_nan_from_inside_the_solver_is_caught_and_named(monkeypatch: pytest.MonkeyPatch) -> None:
    w, bodies = scene()
    w.step(1 / 24)
    before = w.state()
    original = World._small_step
    box = bodies["box"].indices

    def nan_in_box(self: World, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        self.positions[box[2]] = np.nan

    monkeypatch.setattr(World, "_small_step", nan_in_box)
    with np.errstate(invalid="ignore", over="ignore"), pytest.raises(SimulationDivergedError) as info:
        w.step(1 / 24)
    assert "'Box'" in str(info.value)
    assert "NaN or infinite positions" in str(info.value)
    assert "Box" in info.value.body_names
    assert_same_state(w.state(), before)


def test_an_exception_caused_by_a_blow_up_becomes_a_divergence_error(monkeypatch: pytest.MonkeyPatch) -> None:
    w, bodies = scene()
    before = w.state()
    sand = bodies["sand"].indices

    def crashes(self: World, *args: Any, **kwargs: Any) -> None:
        self.positions[sand[0]] = np.inf
        raise ValueError("cannot convert float infinity to integer")  # as a grid search would

    monkeypatch.setattr(World, "_small_step", crashes)
    with pytest.raises(SimulationDivergedError, match="'Sand'"):
        w.step(1 / 24)
    assert_same_state(w.state(), before)


def test_a_genuine_bug_in_the_step_is_not_disguised(monkeypatch: pytest.MonkeyPatch) -> None:
    w, _ = scene()

    def buggy(self: World, *args: Any, **kwargs: Any) -> None:
        raise KeyError("a programming error")

    monkeypatch.setattr(World, "_small_step", buggy)
    with pytest.raises(KeyError):
        w.step(1 / 24)


def test_fast_but_legal_motion_is_not_a_blow_up() -> None:
    w = World(radius=0.05, gravity=(0.0, 0.0, 0.0), max_speed=5e4)
    w.add_granular([[0.0, 0.0, 0.0]])
    w.velocities[0] = (2e4, 0.0, 0.0)  # above the default limit, below 10x this world's max_speed
    w.step(1 / 24)
    assert w.positions[0, 0] == pytest.approx(2e4 / 24)
    w.positions[0] = (0.9995e6, 0.0, 0.0)  # but leaving the 1e6 m world is a blow-up
    with pytest.raises(SimulationDivergedError, match="positions beyond 1e\\+06 m"):
        w.step(1 / 24)


# ------------------------------------------------------------------------------------------- security


def _package_sources() -> list[Path]:
    files = sorted(PACKAGE.rglob("*.py"))
    assert len(files) > 10
    return files


def test_nothing_is_ever_loaded_with_pickle() -> None:
    forbidden = re.compile(
        r"^\s*(import|from)\s+(pickle|cPickle|dill|shelve|marshal|joblib)\b|allow_pickle\s*=\s*True"
        r"|pickle\.loads?\(|\.load\(.*mmap_mode",
        re.MULTILINE,
    )
    loads = re.compile(r"np\.load\(([^)]*)\)")
    for path in _package_sources():
        text = path.read_text(encoding="utf-8")
        assert not forbidden.search(text), f"{path}: {forbidden.search(text)}"
        for call in loads.finditer(text):
            assert "allow_pickle=False" in call.group(1), f"{path}: np.load without allow_pickle=False"


def test_manifest_asks_only_for_file_access_with_its_reason() -> None:
    manifest = tomllib.loads((REPO / "blender_manifest.toml").read_text(encoding="utf-8"))
    permissions = manifest["permissions"]
    assert set(permissions) == {"files"}
    reason = permissions["files"]
    assert isinstance(reason, str)
    assert 0 < len(reason) <= 64
    assert "cache" in reason.lower()
    assert not reason.endswith((".", "!", "?"))


def test_no_network_or_subprocess_in_the_extension() -> None:
    """The manifest claims only file access: the package must not open sockets or run programs."""
    forbidden = re.compile(
        r"^\s*(import|from)\s+(socket|urllib|http|requests|ftplib|smtplib)\b|subprocess\.|os\.system\(",
        re.MULTILINE,
    )
    for path in _package_sources():
        text = path.read_text(encoding="utf-8")
        assert not forbidden.search(text), f"{path}: {forbidden.search(text)}"
