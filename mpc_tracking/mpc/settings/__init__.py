"""Settings and result types of the spatial MPC (kept apart from the QP machinery in :mod:`mpc_tracking.mpc`).

The settings come in seven groups, one frozen dataclass per concern (:data:`SETTINGS_GROUPS`):

=============================  ====================  =====================================================
group (attribute)              class                 fields
=============================  ====================  =====================================================
``prediction``                 PredictionSettings    horizon, step, prediction model, timing
``cost``                       CostSettings          weights, mode
``limits``                     LimitSettings         speed, steering, acceleration, corridor margin
``qp``                         QPSettings            QP solver and its tolerances, limits, warm start
``safeguards``                 SafeguardSettings     fallback, safe stop, rejoin
``observer``                   ObserverSettings      disturbance observer (offset-free tracking)
``grip``                       GripSettings          online grip estimation, noticing lost grip
=============================  ====================  =====================================================

Each field is declared once, in its group, with :func:`setting`: default, one-line description,
unit, allowed values or range. The validation, the docstrings (the ``Attributes`` sections are
generated from the declarations), the scenario schema (:mod:`mpc_tracking.scenario.schema`) and
``mpc-tracking check --keys`` all read that declaration. :class:`MPCSettings` holds one group of
each and keeps every field readable and settable by its flat name (``settings.v_max``,
``MPCSettings(v_max=12.0)``); field names are unique across the groups.

The modules of this package, by concept (every name below is importable from the package itself):
:mod:`~mpc_tracking.mpc.settings.fields` (declaring a field: :func:`setting`, :class:`Bounds`, the
generated docs), :mod:`~mpc_tracking.mpc.settings.checks` (the check of each field kind, weight
matrices), :mod:`~mpc_tracking.mpc.settings.group` (:class:`SettingsGroup`), one module per group
(``prediction``, ``cost``, ``limits``, ``qp``, ``safeguards``, ``observer``, ``grip``),
:mod:`~mpc_tracking.mpc.settings.mpc_settings` (:class:`MPCSettings`) and
:mod:`~mpc_tracking.mpc.settings.solution` (:class:`Status`, :class:`MPCSolution`). NumPy is the only
third-party import; the controller and the QP solvers are not imported.
"""
from __future__ import annotations

from mpc_tracking.mpc.settings.cost import MODES, CostSettings
from mpc_tracking.mpc.settings.fields import KINDS, Bounds, field_choices, field_doc, setting
from mpc_tracking.mpc.settings.grip import GripSettings
from mpc_tracking.mpc.settings.group import SettingsGroup
from mpc_tracking.mpc.settings.limits import LimitSettings
from mpc_tracking.mpc.settings.mpc_settings import SETTINGS_GROUPS, MPCSettings, field_group, settings_fields
from mpc_tracking.mpc.settings.observer import ObserverSettings
from mpc_tracking.mpc.settings.prediction import LINEARIZATIONS, MAX_HORIZON, PredictionSettings
from mpc_tracking.mpc.settings.qp import SOLVERS, WARM_STARTS, QPSettings
from mpc_tracking.mpc.settings.safeguards import SafeguardSettings
from mpc_tracking.mpc.settings.solution import MPCSolution, Status

__all__ = [
    "MPCSettings", "MPCSolution", "Status", "MODES", "LINEARIZATIONS", "WARM_STARTS", "SOLVERS", "MAX_HORIZON",
    "PredictionSettings", "CostSettings", "LimitSettings", "QPSettings", "SafeguardSettings", "ObserverSettings",
    "GripSettings", "SETTINGS_GROUPS", "SettingsGroup", "setting", "settings_fields", "field_choices", "field_doc",
    "field_group", "KINDS", "Bounds",
]
