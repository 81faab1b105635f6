"""MPCSettings: one group of each kind, every field also readable and settable by its flat name."""
from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from dataclasses import Field, dataclass, field, fields
from functools import cached_property
from typing import Any

import numpy as np

from mpc_tracking.errors import SettingsError
from mpc_tracking.mpc.settings.checks import weight_matrix
from mpc_tracking.mpc.settings.cost import CostSettings
from mpc_tracking.mpc.settings.fields import document
from mpc_tracking.mpc.settings.grip import GripSettings
from mpc_tracking.mpc.settings.group import SettingsGroup
from mpc_tracking.mpc.settings.limits import LimitSettings
from mpc_tracking.mpc.settings.observer import ObserverSettings
from mpc_tracking.mpc.settings.prediction import PredictionSettings
from mpc_tracking.mpc.settings.qp import QPSettings
from mpc_tracking.mpc.settings.safeguards import SafeguardSettings

__all__ = ["MPCSettings", "SETTINGS_GROUPS", "settings_fields", "field_group"]

#: the groups of :class:`MPCSettings`: attribute name -> class, in declaration order
SETTINGS_GROUPS: dict[str, type[SettingsGroup]] = {
    "prediction": PredictionSettings, "cost": CostSettings, "limits": LimitSettings, "qp": QPSettings,
    "safeguards": SafeguardSettings, "observer": ObserverSettings, "grip": GripSettings,
}


def settings_fields() -> Iterator[tuple[str, Field]]:
    """``(group name, field)`` of every setting, in declaration order (the fields carry the docs)."""
    for name, cls in SETTINGS_GROUPS.items():
        for f in fields(cls):
            yield name, f


#: flat field name -> its group's attribute name
_GROUP_OF: dict[str, str] = {f.name: g for g, f in settings_fields()}


def field_group(name: str) -> str:
    """The group (attribute name) that holds the setting ``name`` (``"v_max"`` -> ``"limits"``)."""
    try:
        return _GROUP_OF[name]
    except KeyError:
        raise _unknown_setting(name) from None


def _unknown_setting(key: str, where: str = "MPCSettings") -> SettingsError:
    valid = list(_GROUP_OF) + list(SETTINGS_GROUPS)
    near = difflib.get_close_matches(str(key), valid, n=1)
    hint = f" (did you mean {near[0]!r}?)" if near else ""
    return SettingsError(f"{where}: unknown setting {key!r}{hint}")


# ---------------------------------------------------------------------- the whole
@dataclass(frozen=True, init=False)
class MPCSettings:
    """Settings of :class:`~mpc_tracking.mpc.controller.SpatialMPC`, validated on construction.

    Seven groups (:data:`SETTINGS_GROUPS`), each a frozen dataclass: :attr:`prediction`
    (:class:`PredictionSettings`), :attr:`cost` (:class:`CostSettings`), :attr:`limits`
    (:class:`LimitSettings`), :attr:`qp` (:class:`QPSettings`), :attr:`safeguards`
    (:class:`SafeguardSettings`), :attr:`observer` (:class:`ObserverSettings`) and :attr:`grip`
    (:class:`GripSettings`); the cost
    they weigh is written out in :class:`CostSettings`. Every field
    is also an attribute of its own (``settings.v_max``, the same as ``settings.limits.v_max``),
    and the keyword arguments take flat names, groups (an instance or a mapping), or both for
    different groups. A bad value is a :class:`~mpc_tracking.errors.SettingsError` naming the
    field and its range; an unknown name suggests the nearest one.

    Parameters
    ----------
    prediction, cost, limits, qp, safeguards, observer, grip : group or mapping, optional
        A whole group (its fields not given by flat name take its values).
    **flat
        Any field by name (``horizon=20, v_max=12.0``).

    Examples
    --------
    >>> s = MPCSettings(horizon=20, limits=LimitSettings(v_max=12.0, a_y_max=3.0))
    >>> s.v_max, s.limits.v_max, s.prediction.horizon
    (12.0, 12.0, 20)
    >>> s == MPCSettings(horizon=20, v_max=12.0, a_y_max=3.0)
    True
    >>> s.replace(qp={"solver": "daqp"}).solver
    'daqp'
    """

    # The flat fields, one line each, group by group (a typed view for readers and type checkers:
    # the defaults come from the groups, where each field is declared and documented; an import-time
    # check, _check_flat_fields, keeps this list and the groups the same).
    # -- prediction
    horizon: int = PredictionSettings.horizon
    ds: float | None = PredictionSettings.ds
    prediction_model: str = PredictionSettings.prediction_model
    discretization: str = PredictionSettings.discretization
    linearization: str = PredictionSettings.linearization
    iterations: int = PredictionSettings.iterations
    control_period: float = PredictionSettings.control_period
    delay: float = PredictionSettings.delay
    # -- cost
    Q: Any = CostSettings.Q
    R: Any = CostSettings.R
    R_rate: Any = CostSettings.R_rate
    terminal_weight: float = CostSettings.terminal_weight
    slack_weight: float = CostSettings.slack_weight
    mode: str = CostSettings.mode
    time_weight: float = CostSettings.time_weight
    # -- limits
    v_min: float = LimitSettings.v_min
    v_max: float = LimitSettings.v_max
    delta_max: float = LimitSettings.delta_max
    a_y_max: float = LimitSettings.a_y_max
    accel_max: float = LimitSettings.accel_max
    decel_max: float = LimitSettings.decel_max
    power_per_mass: float = LimitSettings.power_per_mass
    delta_rate_max: float = LimitSettings.delta_rate_max
    corridor_margin: float = LimitSettings.corridor_margin
    friction_ellipse: bool = LimitSettings.friction_ellipse
    ellipse_cuts: bool = LimitSettings.ellipse_cuts
    steer_within_peak_slip: bool = LimitSettings.steer_within_peak_slip
    grip_fraction: float = LimitSettings.grip_fraction
    grip_defaults: bool = LimitSettings.grip_defaults
    # -- qp
    solver: str = QPSettings.solver
    warm_start: str = QPSettings.warm_start
    eps_abs: float = QPSettings.eps_abs
    eps_rel: float = QPSettings.eps_rel
    max_iter: int = QPSettings.max_iter
    max_solve_time: float = QPSettings.max_solve_time
    compiled: str = QPSettings.compiled
    blas_threads: int = QPSettings.blas_threads
    # -- safeguards
    max_fallback_steps: int = SafeguardSettings.max_fallback_steps
    brake_decel: float = SafeguardSettings.brake_decel
    rejoin: bool = SafeguardSettings.rejoin
    # -- observer
    disturbance_observer: bool = ObserverSettings.disturbance_observer
    disturbance_time_constant: float = ObserverSettings.disturbance_time_constant
    disturbance_max: float = ObserverSettings.disturbance_max
    # -- grip
    grip_estimation: bool = GripSettings.grip_estimation
    grip_mu: float | None = GripSettings.grip_mu
    grip_margin: float = GripSettings.grip_margin
    grip_sigma_max: float = GripSettings.grip_sigma_max
    grip_sigma_growth: float = GripSettings.grip_sigma_growth
    grip_slide_sideslip: float = GripSettings.grip_slide_sideslip
    grip_probe: bool = GripSettings.grip_probe
    grip_probe_time: float = GripSettings.grip_probe_time
    grip_brake_limit: float | None = GripSettings.grip_brake_limit
    grip_drive: str = GripSettings.grip_drive
    # -- derived (the weights as matrices, sized by the prediction model)
    Q_matrix: np.ndarray = field(init=False, repr=False, compare=False)
    R_matrix: np.ndarray = field(init=False, repr=False, compare=False)
    R_rate_matrix: np.ndarray = field(init=False, repr=False, compare=False)

    def __init__(self, *, prediction: PredictionSettings | Mapping[str, Any] | None = None,
                 cost: CostSettings | Mapping[str, Any] | None = None,
                 limits: LimitSettings | Mapping[str, Any] | None = None,
                 qp: QPSettings | Mapping[str, Any] | None = None,
                 safeguards: SafeguardSettings | Mapping[str, Any] | None = None,
                 observer: ObserverSettings | Mapping[str, Any] | None = None,
                 grip: GripSettings | Mapping[str, Any] | None = None, **flat: Any) -> None:
        given = {"prediction": prediction, "cost": cost, "limits": limits, "qp": qp, "safeguards": safeguards,
                 "observer": observer, "grip": grip}
        groups = _build_groups({k: v for k, v in given.items() if v is not None}, flat)
        for group in groups.values():
            for f in fields(group):
                object.__setattr__(self, f.name, getattr(group, f.name))
        self.__dict__.update(groups)  # the cached group properties below
        q_matrix = _q_matrix(self.Q, self.prediction_model)
        object.__setattr__(self, "Q_matrix", q_matrix)
        object.__setattr__(self, "R_matrix", self.cost.R_matrix)
        object.__setattr__(self, "R_rate_matrix", self.cost.R_rate_matrix)

    # the groups (set on construction; cached_property so that a copy made without __init__ rebuilds them)
    @cached_property
    def prediction(self) -> PredictionSettings:
        """Horizon, step, prediction model, linearization and timing (:class:`PredictionSettings`)."""
        return PredictionSettings(**self._values("prediction"))

    @cached_property
    def cost(self) -> CostSettings:
        """Weights and mode (:class:`CostSettings`)."""
        return CostSettings(**self._values("cost"))

    @cached_property
    def limits(self) -> LimitSettings:
        """Speed, steering, acceleration limits and corridor margin (:class:`LimitSettings`)."""
        return LimitSettings(**self._values("limits"))

    @cached_property
    def qp(self) -> QPSettings:
        """QP solver, tolerances, limits and warm start (:class:`QPSettings`)."""
        return QPSettings(**self._values("qp"))

    @cached_property
    def safeguards(self) -> SafeguardSettings:
        """Fallback, safe stop and rejoin (:class:`SafeguardSettings`)."""
        return SafeguardSettings(**self._values("safeguards"))

    @cached_property
    def observer(self) -> ObserverSettings:
        """The disturbance observer (:class:`ObserverSettings`)."""
        return ObserverSettings(**self._values("observer"))

    @cached_property
    def grip(self) -> GripSettings:
        """Online grip estimation (:class:`GripSettings`)."""
        return GripSettings(**self._values("grip"))

    def _values(self, group: str) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(SETTINGS_GROUPS[group])}

    def as_dict(self, grouped: bool = False) -> dict[str, Any]:
        """The settings as plain values: ``{name: value}``, or ``{group: {name: value}}`` when ``grouped``.

        Either form constructs equal settings again (``MPCSettings(**s.as_dict(grouped=True))``).
        """
        if grouped:
            return {g: self._values(g) for g in SETTINGS_GROUPS}
        return {name: getattr(self, name) for name in _GROUP_OF}

    def replace(self, **changes: Any) -> MPCSettings:
        """A copy with some fields changed, validated again.

        ``changes`` take flat names (``v_max=12.0``), whole groups (``limits=LimitSettings(...)``: the
        group's other fields take its values) or group mappings (``qp={"solver": "daqp"}``: only the
        fields named change).
        """
        for key in changes:
            if key not in _GROUP_OF and key not in SETTINGS_GROUPS:
                raise _unknown_setting(key)
        kept = self.as_dict()
        for group, value in changes.items():
            if group in SETTINGS_GROUPS:  # a whole group drops its fields, a mapping those it names
                names = value if isinstance(value, Mapping) else self._values(group)
                kept = {k: v for k, v in kept.items() if k not in names}
        return MPCSettings(**{**kept, **changes})


def _build_groups(given: dict[str, Any], flat: Mapping[str, Any]) -> dict[str, SettingsGroup]:
    """One validated group each: a given group (instance or mapping) updated by the flat fields of it."""
    per_group: dict[str, dict[str, Any]] = {g: {} for g in SETTINGS_GROUPS}
    for key, value in flat.items():
        if key not in _GROUP_OF:
            raise _unknown_setting(key)
        per_group[_GROUP_OF[key]][key] = value
    return {g: _group(g, given.get(g), per_group[g]) for g in SETTINGS_GROUPS}


def _group(name: str, given: Any, flat: dict[str, Any]) -> SettingsGroup:
    """The group ``name`` from what was given for it (None, an instance or a mapping) and its flat fields."""
    cls = SETTINGS_GROUPS[name]
    if given is None:
        values: dict[str, Any] = {}
    elif isinstance(given, cls):
        values = {f.name: getattr(given, f.name) for f in fields(given)}
    elif isinstance(given, Mapping):
        values = dict(given)
        for key in values:
            if _GROUP_OF.get(key) != name:
                raise _unknown_setting(key, f"MPCSettings.{name}")
    else:
        raise SettingsError(f"MPCSettings.{name}: expected a {cls.__name__} or a mapping, got {given!r}")
    twice = sorted(set(flat) & set(values)) if given is not None else []
    if twice:
        raise SettingsError(f"MPCSettings: {twice[0]!r} given twice, by name and in {name}; give it once")
    try:
        return cls(**{**values, **flat})
    except SettingsError as exc:  # name the field as MPCSettings.<name>: the names are unique
        text = str(exc)
        renamed = "MPCSettings" + text[len(cls.__name__):] if text.startswith(cls.__name__) else text
        raise SettingsError(renamed) from None


def _q_matrix(Q: Any, prediction_model: str) -> np.ndarray:
    """Q as a matrix sized by the prediction model (3 weights also suit a model with more states)."""
    from mpc_tracking.models.prediction import prediction_model_sizes

    if prediction_model == "auto":  # either model: 3 weights, or the dynamic model's 6
        nx = 6 if np.size(Q) in (6, 36) else 3
    else:
        nx, _nu = prediction_model_sizes(prediction_model)
    n_q = nx if np.size(Q) in (nx, nx * nx) and nx != 3 else 3
    if nx != 3 and np.size(Q) not in (1, 3, 9, nx, nx * nx):
        raise SettingsError(f"MPCSettings.Q: expected 3 or {nx} weights for the {prediction_model} "
                            f"prediction model, got {np.size(Q)} values")
    return weight_matrix(Q, n_q, "MPCSettings.Q")


def _check_flat_fields() -> None:
    """The flat fields of MPCSettings are those of the groups, in their order, with their types and defaults."""
    flat = [(f.name, f.type, f.default) for f in fields(MPCSettings) if f.init]
    declared = [(f.name, f.type, f.default) for _g, f in settings_fields()]
    if flat != declared:
        diff = next((a, b) for a, b in zip([*flat, None], [*declared, None], strict=False) if a != b)
        raise TypeError(f"MPCSettings: the flat fields must list the groups' fields in order with the same "
                        f"type and default (MPCSettings has {diff[0]}, the groups {diff[1]}); add a new field to "
                        f"its group with setting(...) and one line 'name: type = Group.name' to MPCSettings")


_check_flat_fields()
document(MPCSettings, [f for _g, f in settings_fields()],
         intro="The fields, group by group (prediction, cost, limits, qp, safeguards, observer, grip):\n\n")
