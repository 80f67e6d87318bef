# SPDX-License-Identifier: GPL-3.0-or-later
"""Every solver setting, declared once: name, default, label, unit and range.

:class:`SolverSettings` is the declaration. Each field carries a :class:`SettingInfo` in its
metadata, and everything else is derived from it:

* ``World(**settings)`` accepts exactly these names (plus ``radius`` and ``gravity``);
* the Blender scene properties and the rows of the sidebar's World and Advanced panels are built
  from the fields with ``panel`` set (``blender/settings_ui.py``);
* the Blender change detector (what re-simulates live and makes a bake Outdated) hashes them all.

Adding a setting is one field here plus the code that uses it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any, Literal

import numpy as np

from .errors import SimulationInputError

Panel = Literal["world", "advanced", ""]


@dataclass(frozen=True)
class SettingInfo:
    """How a setting is shown and bounded.

    Attributes:
        label: title-case name shown in Blender ("Sleep Threshold").
        description: one sentence a user can act on.
        unit: SI unit for docs and tooltips ("m/s", "1/s", "1/m"); "" for a plain number.
        minimum, maximum: the range the core accepts (inclusive).
        soft_maximum: the slider's end in Blender (None: ``maximum``).
        panel: "world" or "advanced" to show it in Blender's sidebar; "" for core-only settings.
        ui_default: the default of the Blender property when the core's cannot be one (infinity).
        ui_maximum: the Blender property's hard maximum when ``maximum`` is infinite.
        blender_unit: the FloatProperty ``unit`` ("VELOCITY", "LENGTH", "NONE").
        blender_subtype: the FloatProperty ``subtype`` ("FACTOR", "DISTANCE", "NONE").
    """

    label: str
    description: str
    unit: str = ""
    minimum: float = 0.0
    maximum: float = math.inf
    soft_maximum: float | None = None
    panel: Panel = ""
    ui_default: float | None = None
    ui_maximum: float | None = None
    blender_unit: str = "NONE"
    blender_subtype: str = "NONE"


def _setting(default: Any, **info: Any) -> Any:
    return field(default=default, metadata={"info": SettingInfo(**info)})


@dataclass
class SolverSettings:
    """Solver settings (keyword arguments of :class:`~unified_particles.core.World`), named after the
    paper and FleX. The metadata of each field (:class:`SettingInfo`) gives label, unit and range.

    Attributes:
        substeps, iterations: solver budget per frame; ``World.step`` runs substeps * iterations
            small steps of one iteration each. Default 4 and 4.
        stabilization_iterations: contact-only passes at the start of each frame that move both x
            and x*, removing overlap without turning it into velocity (paper Sec. 4.4). Default 1.
        relaxation: successive over-relaxation factor omega for Jacobi-averaged families (paper
            Eq. 11), 1..2. Default 1.0 (1.5 with shock propagation blew up a falling block of grains).
        shock_propagation: mass-scaling factor k, 1/m: contact masses m* = m exp(-k height) so
            lower particles in a stack act heavier (paper Sec. 4.3). Default 2 (0.5 let columns of
            five boxes creep and topple within 3 s). Any value > 0 also turns on the grains' support
            pass (``Solver._granular_support_pass``: each small step ends with a bottom-up sweep that
            stops grains moving into the grains below, so deep piles hold their height); 0 turns both
            off.
        sleep_threshold: particles slower than this (m/s) after a small step that touch something
            (or belong to a rigid body that does) are frozen for that step. Default 0 (off).
        liquid_density_passes: the most Jacobi passes of the liquids' density constraints per small
            step; passes repeat while the mean density error is above ``fluid.DENSITY_TOLERANCE`` (0.3 %,
            PCISPH's stopping rule) and the liquid is at rest (``fluid.REST_SHARE`` of it slower than
            ``fluid.REST_GH`` g h); a flowing liquid runs one. Default 4: a deep still tank keeps its
            level and calms down. 1: one pass always, as PBF with one iteration; a deep tank sits about
            1 % low and its surface keeps moving.
        rigid_sleep_threshold: rigid bodies whose particles have all been slower than this (m/s) for
            half a second while touching something, and all of whose neighbours have settled too, are
            held still (``core/sleep.py``); they wake when pushed past it, or when a moving collider,
            a force field, a joint or a rope acts on them. 0 turns it off. Default 0.05: about 2 g h at
            the default budget (h = 1/384 s), above a sleeping pile's own residual speed (at most
            0.74 g h in S2) and far below any motion one sees (docs/physics.md).
        max_speed: particle speed limit, m/s. Default inf (no limit).
        max_depenetration_speed: bodies that overlap another where they were built are pushed apart
            at most this fast, m/s (PhysX's max depenetration velocity; ``depenetration.py``); inf
            turns the cap off. Default 1.
        damping: velocity damping rate, 1/s (v *= exp(-damping dt)). Default 0 (no damping).
        restitution: coefficient of restitution for collider contacts, 0..1. Default 0.
        static_friction_scale: multiplies every contact's Coulomb coefficient (the mean of the two
            sides' ``friction``) for the sticking test. Default 1.0.
        dynamic_friction_scale: multiplies it for sliding (kinetic) friction. Default 1.0.
        collision_margin: extra distance, metres, for neighbour candidates; candidate pairs are
            reused across small steps until some particle moved more than half of it. Default None
            means one particle radius.
        max_mass_ratio: largest inverse-mass ratio between the two sides of a particle contact; the
            heavier side is made lighter beyond it so it cannot tunnel. Default 10.
        cloth_projection_iterations: conjugate-gradient iterations of the fast projection of the stiff
            cloth edges after each small step's stretch sweep (``projection.StretchProjection``, Goldenthal
            et al. 2007); 0 (the default) turns it off. 10 holds a hanging strip within 1 % of its length
            at the default budget, at about twice the cloth's solve time (docs/physics.md, item 10).
        cloth_coarse_correction: 1 (the default) adds the coarse correction of the stiff cloth edges
            before each small step's stretch sweep (``cloth_coarse.CoarseStretch``, a two-level solve: a
            hanging strip within 0.3 % of its catenary at the default budget, at about 1.4x a cloth's
            time); 0 turns it off, the fast stretch solve (docs/physics.md, *Cloth at the default
            budget*).
        rigid_contact_weight: extra shape-matching weight of a rigid particle that touches
            something, relative to its mass (so friction and contact corrections are not averaged
            away by the fit). Default 50.
        memory_limit: refuse to create more particles than fit in this many bytes (estimated at
            ``BYTES_PER_PARTICLE`` each). Default None means half the machine's physical memory.
        threads: threads for the large per-step passes (neighbour search, particle contacts; see
            core/parallel.py). Results are bit-identical whatever the count. None means every core
            this process may use (``parallel.default_threads``); small scenes run in one thread anyway.
            Default 1: on 2 cores the pool measured 0.94-0.97x at 100k grains (``make bench``), so it is
            opt-in until it pays.
    """

    substeps: int = _setting(
        4,
        label="Substeps",
        description="Solver steps per frame; more makes stiff cloth and fast objects more accurate",
        minimum=1,
        maximum=64,
        panel="world",
    )
    iterations: int = _setting(
        4,
        label="Iterations",
        description="Constraint iterations per substep",
        minimum=1,
        maximum=64,
        panel="world",
    )
    stabilization_iterations: int = _setting(
        1,
        label="Stabilization Iterations",
        description="Contact-only iterations per step that remove initial overlap without adding energy",
        maximum=32,
        panel="advanced",
    )
    relaxation: float = _setting(
        1.0,
        label="Relaxation",
        description="Over-relaxation factor of the averaged (Jacobi) constraint corrections",
        minimum=0.1,
        maximum=2.0,
        panel="advanced",
    )
    shock_propagation: float = _setting(
        2.0,
        label="Shock Propagation",
        description="Mass scaling with height in contacts (1/m); helps tall stacks rest, 0 turns it off",
        unit="1/m",
        maximum=100.0,
        soft_maximum=10.0,
        panel="advanced",
    )
    sleep_threshold: float = _setting(
        0.0,
        label="Sleep Threshold",
        description="Particles touching something and slower than this stop (m/s); 0 turns sleeping off",
        unit="m/s",
        maximum=10.0,
        panel="advanced",
        blender_unit="VELOCITY",
    )
    liquid_density_passes: int = _setting(
        4,
        label="Liquid Density Passes",
        description=(
            "Most passes of a liquid's density solve per small step (they repeat while the liquid is at "
            "rest and its mean density error is above 0.3 %; a flowing liquid runs one): 4 keeps deep "
            "still water level and calm; 1 makes a deep tank sit about 1 % low with a moving surface"
        ),
        minimum=1,
        maximum=16,
        panel="advanced",
    )
    rigid_sleep_threshold: float = _setting(
        0.05,
        label="Rigid Sleep Threshold",
        description="Rigid bodies resting on something, slower than this for half a second with all they "
        "touch, sleep (held still at almost no cost) until something hits, pushes or moves them (m/s); "
        "0: never sleep",
        unit="m/s",
        maximum=10.0,
        soft_maximum=1.0,
        panel="advanced",
        blender_unit="VELOCITY",
    )
    max_speed: float = _setting(
        math.inf,
        label="Max Speed",
        description="Particle speeds are clamped to this (m/s)",
        unit="m/s",
        minimum=0.01,
        panel="advanced",
        ui_default=100.0,
        ui_maximum=1e4,
        blender_unit="VELOCITY",
    )
    max_depenetration_speed: float = _setting(
        1.0,
        label="Max Separation Speed",
        description="Bodies overlapping at the start are pushed apart at most this fast (m/s)",
        unit="m/s",
        minimum=0.01,
        panel="advanced",
        ui_maximum=1e3,
        blender_unit="VELOCITY",
    )
    damping: float = _setting(
        0.0,
        label="Damping",
        description="Velocity damping rate (air drag), 1/s: speeds decay as exp(-damping * time); 0 is none",
        unit="1/s",
        maximum=100.0,
        soft_maximum=10.0,
        panel="advanced",
    )
    restitution: float = _setting(
        0.0,
        label="Restitution",
        description="Bounciness of contacts with colliders: 0 no bounce, 1 perfectly elastic",
        maximum=1.0,
        panel="advanced",
        blender_subtype="FACTOR",
    )
    static_friction_scale: float = _setting(
        1.0, label="Static Friction Scale", description="Multiplies every contact's sticking coefficient"
    )
    dynamic_friction_scale: float = _setting(
        1.0, label="Dynamic Friction Scale", description="Multiplies every contact's sliding coefficient"
    )
    collision_margin: float | None = _setting(
        None,
        label="Collision Margin",
        description="Extra neighbour search distance (m); None means one particle radius",
        unit="m",
    )
    max_mass_ratio: float = _setting(
        10.0,
        label="Max Mass Ratio",
        description="Largest inverse-mass ratio between the two sides of a particle contact",
        minimum=1.0,
    )
    rigid_contact_weight: float = _setting(
        50.0,
        label="Rigid Contact Weight",
        description="Extra shape-matching weight of rigid particles in contact",
    )
    cloth_projection_iterations: int = _setting(
        0,
        label="Cloth Projection Iterations",
        description=(
            "Conjugate-gradient iterations per small step of a global solve of the inextensible cloth edges "
            "(fast projection), 0: off; 10 holds long hanging cloth within 1% of its length at about twice "
            "the cloth's solve time"
        ),
        maximum=100,
    )
    cloth_coarse_correction: int = _setting(
        1,
        label="Converged Cloth Stretch",
        description=(
            "1: before each small step's stretch sweep, a coarse (patch-wise) solve of the inextensible "
            "cloth edges carries the cloth's weight to its supports in one step, so hanging cloth keeps its "
            "length (about 1.4x a cloth's time); 0: the fast solve, which lets long hanging cloth stretch "
            "a few per cent"
        ),
        maximum=1,
        panel="advanced",
    )
    memory_limit: float | None = _setting(
        None,
        label="Memory Limit",
        description="Refuse more particles than fit in this many bytes; None means half the machine's memory",
        unit="B",
    )
    threads: int | None = _setting(
        1,
        label="Threads",
        description="Threads for large scenes (same results with any count); None means every core (opt-in)",
        minimum=1,
    )

    def validate(self) -> None:
        if self.threads is not None and (
            isinstance(self.threads, bool)
            or not isinstance(self.threads, (int, np.integer))
            or self.threads < 1
        ):
            raise SimulationInputError(
                f"threads must be a whole number >= 1 (or None for every core), got {self.threads!r}"
            )
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None:
                continue
            if not isinstance(value, (int, float, np.integer, np.floating)) or isinstance(value, bool):
                raise SimulationInputError(f"setting {f.name} must be a number, got {value!r}")
            if np.isnan(value) or value < 0:
                raise SimulationInputError(f"setting {f.name} must be >= 0, got {value!r}")
            if f.name not in ("max_speed", "max_depenetration_speed", "memory_limit") and not np.isfinite(
                value
            ):
                raise SimulationInputError(f"setting {f.name} must be finite, got {value!r}")
        for name in ("substeps", "iterations", "liquid_density_passes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise SimulationInputError(f"{name} must be a whole number >= 1, got {value!r}")
        if int(self.stabilization_iterations) != self.stabilization_iterations:
            raise SimulationInputError("stabilization_iterations must be a whole number")
        if not 0.0 < self.relaxation <= 2.0:
            raise SimulationInputError(f"relaxation must be in (0, 2], got {self.relaxation}")
        if self.restitution > 1.0:
            raise SimulationInputError(f"restitution must be in [0, 1], got {self.restitution}")
        if self.max_mass_ratio < 1.0:
            raise SimulationInputError(f"max_mass_ratio must be >= 1, got {self.max_mass_ratio}")
        if self.max_speed <= 0.0:
            raise SimulationInputError(f"max_speed must be > 0, got {self.max_speed}")
        if self.max_depenetration_speed <= 0.0:
            value = self.max_depenetration_speed
            raise SimulationInputError(f"max_depenetration_speed must be > 0 (inf: no cap), got {value}")


def setting_info(name: str) -> SettingInfo:
    """The declaration of one setting (KeyError for an unknown name)."""
    for f in fields(SolverSettings):
        if f.name == name:
            info: SettingInfo = f.metadata["info"]
            return info
    raise KeyError(name)


def declared_settings() -> list[tuple[str, Any, SettingInfo]]:
    """(name, core default, info) of every setting, in declaration order (the panel's row order)."""
    return [(f.name, f.default, f.metadata["info"]) for f in fields(SolverSettings)]
