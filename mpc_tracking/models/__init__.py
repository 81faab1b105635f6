"""Motion-model registry.

Built-in plants register by name at import; third-party plants register through the
entry-point group ``mpc_tracking.models`` (the entry point names a :class:`MotionModel`
subclass). A plugin whose entry point fails to import is reported (see :func:`plugin_errors`)
and skipped; the others stay usable.
"""
from __future__ import annotations

import logging
from collections.abc import Mapping
from importlib import metadata
from typing import Any

from mpc_tracking.errors import ModelError, UnknownModelError
from mpc_tracking.models.ackermann3d.batch import Ackermann3DBatch
from mpc_tracking.models.ackermann3d.car import Ackermann3D
from mpc_tracking.models.ackermann3d.params import Ackermann3DParams
from mpc_tracking.models.base import MotionModel, Pose, Velocity
from mpc_tracking.models.kinematic_bicycle import KinematicBicycle
from mpc_tracking.models.simple_car import SimpleCar
from mpc_tracking.models.unicycle import Unicycle

__all__ = [
    "MotionModel",
    "Pose",
    "Velocity",
    "KinematicBicycle",
    "Unicycle",
    "SimpleCar",
    "Ackermann3D",
    "Ackermann3DParams",
    "Ackermann3DBatch",
    "reload_plugins",
    "register_model",
    "get_model",
    "create_model",
    "available_models",
    "plugin_errors",
    "ENTRY_POINT_GROUP",
]

logger = logging.getLogger(__name__)
ENTRY_POINT_GROUP = "mpc_tracking.models"
_BUILTIN: dict[str, type[MotionModel]] = {}
_PLUGINS: dict[str, type[MotionModel]] = {}
_PLUGIN_ERRORS: dict[str, str] = {}
_plugins_loaded = False


def register_model(cls: type[MotionModel], name: str | None = None) -> type[MotionModel]:
    """Register a :class:`MotionModel` subclass under ``name`` (default ``cls.name``); usable as decorator."""
    if not (isinstance(cls, type) and issubclass(cls, MotionModel)):
        raise ModelError(f"register_model: expected a MotionModel subclass, got {cls!r}")
    _BUILTIN[name or cls.name] = cls
    return cls


def _load_plugins() -> None:
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    try:
        eps = metadata.entry_points(group=ENTRY_POINT_GROUP)
    except Exception as exc:  # pragma: no cover - broken metadata
        _PLUGIN_ERRORS["<entry points>"] = str(exc)
        return
    for ep in eps:
        try:
            cls = ep.load()
            if not (isinstance(cls, type) and issubclass(cls, MotionModel)):
                raise TypeError(f"{ep.value} is not a MotionModel subclass")
        except Exception as exc:
            _PLUGIN_ERRORS[ep.name] = f"{type(exc).__name__}: {exc}"
            logger.warning("motion-model plugin %r (%s) failed to load: %s", ep.name, ep.value, exc)
            continue
        _PLUGINS[ep.name] = cls


def reload_plugins() -> None:
    """Forget and re-read the entry points (after installing a plugin in a running process)."""
    global _plugins_loaded
    _plugins_loaded = False
    _PLUGINS.clear()
    _PLUGIN_ERRORS.clear()
    _load_plugins()


def available_models() -> list[str]:
    """Names of all registered models, built-in and plugins, sorted."""
    _load_plugins()
    return sorted(set(_BUILTIN) | set(_PLUGINS))


def plugin_errors() -> dict[str, str]:
    """Plugins whose entry point failed to load: name -> reason."""
    _load_plugins()
    return dict(_PLUGIN_ERRORS)


def get_model(name: str) -> type[MotionModel]:
    """The model class registered as ``name``; unknown names list the known ones."""
    if name in _BUILTIN:
        return _BUILTIN[name]
    _load_plugins()
    if name in _PLUGINS:
        return _PLUGINS[name]
    msg = f"unknown motion model {name!r}; known models: {', '.join(available_models())}"
    if name in _PLUGIN_ERRORS:
        msg += f" (plugin {name!r} failed to load: {_PLUGIN_ERRORS[name]})"
    raise UnknownModelError(msg)


def create_model(
    name: str, params: Mapping[str, Any] | None = None, info: Mapping[str, Any] | None = None
) -> MotionModel:
    """Instantiate the model ``name`` with parameter overrides and an initial condition."""
    return get_model(name)(params=params, info=info)


for _cls in (KinematicBicycle, Unicycle, SimpleCar, Ackermann3D):
    register_model(_cls)
