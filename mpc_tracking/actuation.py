"""Low-level actuation: maps MPC commands (v, delta) to each plant's own inputs.

An actuator is called once per simulation step (possibly several times per control step)::

    u = actuator(t, dt, v_cmd, delta_cmd, plant)

and may keep internal state (integrators, rate limiters); :meth:`Actuator.reset` clears it.
Plant and actuation are chosen independently of the MPC; :func:`default_actuator` picks the
natural one for a plant (a plant may name it in its ``default_actuator`` class attribute).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .errors import InputError

__all__ = ["Actuator", "DirectActuator", "ACTUATORS", "register_actuator", "default_actuator", "make_actuator"]


class Actuator:
    """Base class: passes (v, delta) through unchanged."""

    name = "direct"

    def reset(self, plant: Any) -> None:
        """Clear internal state before a run on ``plant``."""

    def __call__(self, t: float, dt: float, v_cmd: float, delta_cmd: float, plant: Any) -> np.ndarray:
        return np.array([v_cmd, delta_cmd], dtype=float)


class DirectActuator(Actuator):
    """The plant takes (v, delta) itself (kinematic bicycle, simple car)."""


ACTUATORS: dict[str, Callable[..., Actuator]] = {"direct": DirectActuator}


def register_actuator(name: str, factory: Callable[..., Actuator]) -> None:
    """Make an actuator available by name (for scenario files)."""
    ACTUATORS[name] = factory


def make_actuator(name: str, **params: Any) -> Actuator:
    """Create a registered actuator by name with keyword parameters."""
    try:
        factory = ACTUATORS[name]
    except KeyError:
        raise InputError(f"actuator: unknown name {name!r}; known: {sorted(ACTUATORS)}") from None
    try:
        return factory(**params)
    except TypeError as exc:
        raise InputError(f"actuator {name!r}: {exc}") from None


def default_actuator(plant: Any) -> Actuator:
    """The natural actuator for ``plant``: its ``default_actuator`` attribute, else direct."""
    name = getattr(plant, "default_actuator", "direct")
    return make_actuator(name)
