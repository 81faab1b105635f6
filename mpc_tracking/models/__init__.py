"""Motion-model registry.

Built-in plants register by name at import; third-party plants register through the
entry-point group ``mpc_tracking.models`` (the entry point names a :class:`MotionModel`
subclass). A plugin whose entry point fails to import is reported (see :func:`plugin_errors`)
and skipped; the others stay usable.

The plants live in :mod:`mpc_tracking.models.plants`, the MPC's spatial prediction models in
:mod:`mpc_tracking.models.prediction`. The module paths of before that split
(``mpc_tracking.models.spatial_dynamic``, ``mpc_tracking.models.ackermann3d``, ...) still import:
each is an alias of the moved module (:data:`MOVED_MODULES`), the same module object.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import logging
import sys
from collections.abc import Mapping, Sequence
from importlib import metadata
from types import ModuleType
from typing import Any

from mpc_tracking.errors import ModelError, UnknownModelError
from mpc_tracking.models.base import MotionModel, Pose, Velocity
from mpc_tracking.models.plants.ackermann3d.batch import Ackermann3DBatch
from mpc_tracking.models.plants.ackermann3d.car import Ackermann3D
from mpc_tracking.models.plants.ackermann3d.params import Ackermann3DParams
from mpc_tracking.models.plants.kinematic_bicycle import KinematicBicycle
from mpc_tracking.models.plants.simple_car import SimpleCar
from mpc_tracking.models.plants.unicycle import Unicycle

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
    "MOVED_MODULES",
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


#: old module path -> where the module lives now (the old path imports the new module)
MOVED_MODULES: dict[str, str] = {
    f"{__name__}.{old}": f"{__name__}.{new}"
    for old, new in {
        "kinematic_bicycle": "plants.kinematic_bicycle",
        "unicycle": "plants.unicycle",
        "simple_car": "plants.simple_car",
        "ackermann3d": "plants.ackermann3d",
        "spatial_bicycle": "prediction.spatial_bicycle",
        "spatial_dynamic": "prediction.spatial_dynamic",
        "apriori": "prediction.apriori",
        "tyre_fit": "prediction.tyre_fit",
    }.items()
}


class _MovedModuleFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports an old module path of :data:`MOVED_MODULES` (or a submodule of one) as the moved module."""

    @staticmethod
    def _target(fullname: str) -> str | None:
        for old, new in MOVED_MODULES.items():
            if fullname == old or fullname.startswith(old + "."):
                return new + fullname[len(old):]
        return None

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if self._target(fullname) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        target = self._target(spec.name)
        if target is None:
            raise ImportError(f"{spec.name} is not a moved module", name=spec.name)
        return importlib.import_module(target)

    def exec_module(self, module: ModuleType) -> None:
        """The moved module has run already (``create_module`` imported it)."""


if not any(isinstance(finder, _MovedModuleFinder) for finder in sys.meta_path):
    sys.meta_path.insert(0, _MovedModuleFinder())  # before the path finder: no second copy of a submodule
