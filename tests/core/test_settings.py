"""Every solver setting is declared once (core/settings.py), with label, range and a default in range."""

from __future__ import annotations

import math
from dataclasses import fields
from typing import Any

import numpy as np
import pytest

from unified_particles.core import SimulationInputError, SolverSettings, World
from unified_particles.core import world as world_module
from unified_particles.core.settings import SettingInfo, declared_settings, setting_info

NAMES = [f.name for f in fields(SolverSettings)]
DEFAULTS: dict[str, Any] = {name: default for name, default, _ in declared_settings()}
# Settings whose default None means "derived from something else" (the radius, the machine).
NONE_DEFAULTS = {"collision_margin", "memory_limit", "threads"}


@pytest.mark.parametrize("name", NAMES)
def test_every_setting_is_declared_with_label_description_and_a_default_in_range(name: str) -> None:
    info = setting_info(name)
    assert isinstance(info, SettingInfo)
    assert info.label.strip(), name
    assert info.label[0].isupper(), name
    assert info.description.strip(), name
    assert info.minimum <= info.maximum, name
    default = DEFAULTS[name]
    if default is None:
        assert name in NONE_DEFAULTS, f"{name} defaults to None but does not say what None means"
        assert "None" in info.description, name
        return
    assert info.minimum <= default <= info.maximum, (name, default, info.minimum, info.maximum)
    if math.isinf(default):
        assert math.isinf(info.maximum), f"{name} defaults to inf, so its maximum must be inf"
        assert info.ui_default is not None, f"{name}: Blender needs a finite default"


def test_declared_settings_lists_every_field_in_order() -> None:
    assert [name for name, _, _ in declared_settings()] == NAMES
    assert {"substeps", "iterations"} <= set(NAMES)


def test_solver_settings_is_one_class_wherever_it_is_imported_from() -> None:
    from unified_particles.core.settings import SolverSettings as declared

    assert SolverSettings is declared
    assert world_module.SolverSettings is declared


@pytest.mark.parametrize("name", NAMES)
def test_world_accepts_every_declared_setting(name: str) -> None:
    default = DEFAULTS[name]
    w = World(radius=0.05, **{name: default})
    assert getattr(w.settings, name) == default or (default is None and getattr(w.settings, name) is None)
    if name in ("substeps", "iterations"):
        w = World(radius=0.05, **{name: 3})
        assert getattr(w, name) == 3
        assert getattr(w.settings, name) == 3


def test_world_settings_take_the_given_values() -> None:
    values: dict[str, Any] = {"substeps": 2, "iterations": 3, "sleep_threshold": 0.1, "max_speed": 50.0}
    w = World(radius=0.05, **values)
    for name, value in values.items():
        assert getattr(w.settings, name) == value
    assert (w.substeps, w.iterations) == (2, 3)
    w.add_granular(np.zeros((1, 3)))
    w.step(1 / 24)  # runs with them


def test_unknown_setting_is_refused_with_the_known_names() -> None:
    with pytest.raises(
        SimulationInputError, match=r"unknown setting\(s\) bogus; known settings: .*sleep_threshold"
    ):
        World(radius=0.05, bogus=1.0)
