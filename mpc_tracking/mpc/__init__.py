"""The spatial LTV-MPC: settings, the step type, the controller, its QP back ends (registered by
name, :mod:`mpc_tracking.mpc.backends`), its safeguards and the cvxpy reference backend.

The names below load on first use (``mpc_tracking._lazy``): importing a module of this package
(``mpc_tracking.mpc.settings``, say) does not import the controller, SciPy's sparse matrices or the
QP solvers; ``mpc_tracking.mpc.SpatialMPC`` does.
"""
from __future__ import annotations

import pkgutil
from typing import TYPE_CHECKING

from mpc_tracking._lazy import attach as _attach
from mpc_tracking._lazy import lazy_names as _lazy_names

if TYPE_CHECKING:  # what type checkers see; at run time the same names load lazily (``_LAZY``)
    from mpc_tracking.mpc.controller import SpatialMPC
    from mpc_tracking.mpc.safeguards import Safeguards
    from mpc_tracking.mpc.settings import MPCSettings, MPCSolution, Status
    from mpc_tracking.mpc.step import StepInput

#: public name -> the module it is defined in (imported on first access); kept equal to the
#: ``TYPE_CHECKING`` imports above by ``tests/test_lazy_import.py``
_LAZY = _lazy_names({
    "mpc_tracking.mpc.controller": "SpatialMPC",
    "mpc_tracking.mpc.safeguards": "Safeguards",
    "mpc_tracking.mpc.settings": "MPCSettings MPCSolution Status",
    "mpc_tracking.mpc.step": "StepInput",
})

__all__ = ["SpatialMPC", "MPCSettings", "MPCSolution", "Status", "StepInput", "Safeguards"]

#: the modules of this package, reachable as attributes (``mpc_tracking.mpc.qp``) without an explicit import
_SUBMODULES = frozenset(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))

if not TYPE_CHECKING:
    __getattr__, __dir__ = _attach(__name__, globals(), _LAZY, _SUBMODULES)
