# SPDX-License-Identifier: GPL-3.0-or-later
"""Material mappings from what a user sets to what the core takes, and the material presets.

Cloth stiffness is shown as a factor from 0 (very soft) to 1 (inextensible) and mapped to XPBD
compliance on a log scale by :func:`stiffness_to_compliance`; the core derives from that compliance
how far pinned cloth may stretch (its tethers), on top of ``TETHER_GIVE``. ``PRESETS`` are named sets
of object settings (Cotton, Dry Sand, Steel, Water, ...); the liquids are the core's ``FLUID_PRESETS``.
No bpy: a base module of the Blender layer, used by the scene reader, the operators and the panels.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import FLUID_PRESETS, SOFT_PRESETS

# Compliance range of the stiffness factor: 0 -> 1e-1 m/N (very soft), 1 -> 0 (inextensible).
_COMPLIANCE_SOFT_EXPONENT = -1.0
_COMPLIANCE_STIFF_EXPONENT = -8.0


def stiffness_to_compliance(stiffness: float) -> float:
    """XPBD compliance (m/N) of a user stiffness factor in [0, 1]; logarithmic, 1 gives 0 (rigid)."""
    s = min(max(float(stiffness), 0.0), 1.0)
    if s >= 1.0:
        return 0.0
    exponent = _COMPLIANCE_SOFT_EXPONENT + s * (_COMPLIANCE_STIFF_EXPONENT - _COMPLIANCE_SOFT_EXPONENT)
    return float(10.0**exponent)


# Tether give of pinned cloth (fraction of its rest length), passed as ``World.add_cloth(tether_give=...)``.
# The core adds the stretch the cloth's own compliance allows under a heavy load (``compliant_strain``:
# compliance x 1000 N/m), so tethers bound only what lies beyond it: 2% for inextensible cloth (stiffness
# 1: denim, leather), 5% at 0.5, 80% at 0.3; below ~0.25 they no longer bind at all. One place derives
# the give: the core.
TETHER_GIVE = 0.02


# Soft pins: the spring of pin stiffness x weight 0 vibrates at SOFT_PIN_HZ_MIN, of 1 at SOFT_PIN_HZ_MAX
# (log scale between): 0.5 Hz hangs a cape 1 m below its anchor, 50 Hz holds it within 0.1 mm.
SOFT_PIN_HZ_MIN = 0.5
SOFT_PIN_HZ_MAX = 50.0


def soft_pin_frequency(stiffness: Any) -> Any:
    """Natural frequency, Hz, of a soft pin of stiffness ``stiffness`` (pin stiffness x vertex weight,
    0 - 1; scalar or array): SOFT_PIN_HZ_MIN x (SOFT_PIN_HZ_MAX / SOFT_PIN_HZ_MIN) ** stiffness. The core's
    spring is k = m (2 pi f)^2, so a vertex hangs g / (2 pi f)^2 below its anchor whatever its mass."""
    s = np.clip(np.asarray(stiffness, dtype=np.float64), 0.0, 1.0)
    return SOFT_PIN_HZ_MIN * (SOFT_PIN_HZ_MAX / SOFT_PIN_HZ_MIN) ** s


# Bending rigidity B of cloth (the core's ``add_cloth(bending_rigidity=...)``, isometric bending after Bergou
# et al. 2006): the Blender property is in micro newton metres, a range users can type (silk 3, leather 500).
# B is a material constant (moment per metre of width per unit curvature; Kawabata's KES-F B in
# gf cm^2/cm is 98.1 uN m), so a preset drapes alike at any mesh resolution (docs/physics.md).
MICRO_NEWTON_METRE = 1e-6


def bending_rigidity_si(micro_newton_metres: float) -> float:
    """Bending rigidity, N m, of the Blender property's value in uN m."""
    return float(micro_newton_metres) * MICRO_NEWTON_METRE


# Presets: (identifier, label, role, values). Densities in kg/m^3, cloth mass per area in kg/m^2, bending
# rigidity in uN m. The cloth rigidities are KES-F bending rigidities B of those fabrics (Kawabata, "The
# Standardization and Analysis of Hand Evaluation", 2nd ed., Textile Machinery Society of Japan, 1980;
# Kawabata and Niwa, J. Text. Inst. 80(1), 19-50, 1989): thin silks 0.01-0.05 gf cm^2/cm, cotton
# shirtings 0.05-0.2, denims 0.5-3, garment leather several; the rubber sheet's is the plate formula
# E t^3 / (12 (1 - nu^2)) of a 1 mm sheet of E = 1.5 MPa, nu = 0.5 (Timoshenko and Woinowsky-Krieger,
# Theory of Plates and Shells). Checked on the Cusick drape test against the drape coefficients measured
# for those fabrics (silk 0.2-0.4, cotton 0.4-0.7, denim 0.6-0.9, leather 0.8-1; Cusick, J. Text. Inst.
# 56, T596, 1965; Hu and Chan, Text. Res. J. 68(1), 57-64, 1998): tests/core/test_drape_presets.py.
# ``bend_stiffness`` is the legacy bending's (``bending_model`` STIFFNESS, files made before B existed).
PRESETS: list[tuple[str, str, str, dict[str, Any]]] = [
    (
        "COTTON",
        "Cotton",
        "CLOTH",
        {
            "area_density": 0.15,
            "friction": 0.5,
            "stretch_stiffness": 0.95,
            "bend_stiffness": 0.35,
            "bending_model": "RIGIDITY",
            "bending_rigidity": 18.0,  # 0.18 gf cm^2/cm: a cotton shirting (drape 0.44 at the default budget)
        },
    ),
    (
        "SILK",
        "Silk",
        "CLOTH",
        {
            "area_density": 0.06,
            "friction": 0.25,
            "stretch_stiffness": 0.9,
            "bend_stiffness": 0.1,
            "bending_model": "RIGIDITY",
            "bending_rigidity": 3.0,  # 0.03 gf cm^2/cm: a crepe de chine
        },
    ),
    (
        "DENIM",
        "Denim",
        "CLOTH",
        {
            "area_density": 0.40,
            "friction": 0.6,
            "stretch_stiffness": 1.0,
            "bend_stiffness": 0.55,
            "bending_model": "RIGIDITY",
            "bending_rigidity": 120.0,  # 1.2 gf cm^2/cm: a 12 oz denim
        },
    ),
    (
        "LEATHER",
        "Leather",
        "CLOTH",
        {
            "area_density": 0.80,
            "friction": 0.7,
            "stretch_stiffness": 1.0,
            "bend_stiffness": 0.75,
            "bending_model": "RIGIDITY",
            "bending_rigidity": 500.0,  # 5 gf cm^2/cm: a 1 mm garment leather
        },
    ),
    (
        "RUBBER_SHEET",
        "Rubber Sheet",
        "CLOTH",
        {
            "area_density": 1.20,
            "friction": 0.9,
            "stretch_stiffness": 0.6,
            "bend_stiffness": 0.3,
            "bending_model": "RIGIDITY",
            "bending_rigidity": 170.0,  # a 1 mm sheet: E t^3 / (12 (1 - nu^2))
        },
    ),
    # Grains: static friction (sticking contacts; a friction angle of 35 degrees for 0.7, as dense quartz
    # sand), a sliding friction 0.3 times it and rolling resistance. The grains carry no rotation, so what
    # real flowing grains do by rolling (resisted only by their shape: rolling resistance) they do by
    # sliding; the lower sliding friction stands in for it. Calibrated on Dry Sand against two
    # experiments at once (docs/physics.md, "column collapse"): a released column runs out as far as Lube
    # et al. 2004's law (2.58 R0, 2.23-2.54 nudged, against 2.26 at H0 = 2 R0; full sliding friction ran
    # out 1.26) and a poured pile stands at 32.5 degrees, inside real dry sand's 30-35
    # (tests/core/test_granular_pile.py, test_granular_support.py). The others by the same ratios;
    # Gravel, angular, rolls less (1.5: a poured pile stands at 38.5 degrees, within angular gravel's
    # ~35-45 in the same review, Al-Hashemi & Al-Amoudi 2018).
    (
        "DRY_SAND",
        "Dry Sand",
        "GRANULAR",
        {
            "density": 1600.0,
            "friction": 0.7,
            "kinetic_friction": 0.21,
            "rolling_friction": 1.15,
            "cohesion": 0.0,
        },
    ),
    (
        "WET_SAND",
        "Wet Sand",
        "GRANULAR",
        {
            "density": 1900.0,
            "friction": 0.8,
            "kinetic_friction": 0.24,
            "rolling_friction": 1.15,
            "cohesion": 0.3,
        },
    ),
    (
        "GRAVEL",
        "Gravel",
        "GRANULAR",
        {
            "density": 1800.0,
            "friction": 0.7,
            "kinetic_friction": 0.21,
            "rolling_friction": 1.5,
            "cohesion": 0.0,
        },
    ),
    (
        "SNOW",
        "Snow",
        "GRANULAR",
        {
            "density": 300.0,
            "friction": 0.5,
            "kinetic_friction": 0.15,
            "rolling_friction": 1.15,
            "cohesion": 0.4,
        },
    ),
    ("WOOD", "Wood", "RIGID", {"density": 700.0, "friction": 0.5}),
    ("STEEL", "Steel", "RIGID", {"density": 7850.0, "friction": 0.4}),
    ("RUBBER", "Rubber", "RIGID", {"density": 1100.0, "friction": 0.9}),
]
# Liquids (Fluid and Inflow objects): the core's FLUID_PRESETS (Water, Honey, Oil, Slime) under the
# object's property names (the liquid's cohesion is ``fluid_cohesion``; grains have their own).
_FLUID_PROPERTY = {"cohesion": "fluid_cohesion"}
PRESETS += [
    (ident, ident.title(), "FLUID", {_FLUID_PROPERTY.get(k, k): float(v) for k, v in values.items()})
    for ident, values in FLUID_PRESETS.items()
]
# Soft bodies: the core's SOFT_PRESETS (Jelly, Rubber, Flesh, Foam, Clay) under the object's property names.
_SOFT_PROPERTY = {"stiffness": "soft_stiffness"}
PRESETS += [
    (
        f"SOFT_{ident}",
        ident.title(),
        "SOFT",
        {"plastic_yield": 0.0, **{_SOFT_PROPERTY.get(k, k): float(v) for k, v in values.items()}},
    )
    for ident, values in SOFT_PRESETS.items()
]
# A balloon: a light, stretchy closed skin held at its volume (core/balloon.py); latex-like friction.
PRESETS.append(
    (
        "BALLOON",
        "Balloon",
        "CLOTH",
        {
            "area_density": 0.1,
            "friction": 0.6,
            "stretch_stiffness": 0.5,
            "bending_model": "RIGIDITY",
            "bending_rigidity": 1.0,
            "bend_stiffness": 0.1,
            "use_pressure": True,
            "inflation": 1.0,
        },
    )
)
# Roles that take another role's presets: an inflow pours a liquid.
_PRESET_ROLE = {"INFLOW": "FLUID"}
PRESET_ITEMS = [(ident, label, f"{role.title()} preset: {label}") for ident, label, role, _ in PRESETS]


def presets_for_role(role: str) -> list[tuple[str, str]]:
    """(identifier, label) of the presets that apply to ``role``."""
    role = _PRESET_ROLE.get(role, role)
    return [(ident, label) for ident, label, preset_role, _ in PRESETS if preset_role == role]


def apply_preset(settings: Any, preset: str) -> bool:
    """Set ``settings`` (an object's PropertyGroup) to ``preset``; False if it does not fit its role."""
    for ident, _label, role, values in PRESETS:
        if ident == preset:
            if _PRESET_ROLE.get(settings.role, settings.role) != role:
                return False
            for name, value in values.items():
                setattr(settings, name, value)
            return True
    raise KeyError(preset)
