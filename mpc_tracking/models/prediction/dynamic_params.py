"""Parameters of the spatial dynamic bicycle (:mod:`~mpc_tracking.models.prediction.spatial_dynamic`): the car's
mass, inertia, geometry and tyre curves, validated on construction, and the slip angle where a magic-formula tyre
peaks.

The model's equations, its state and its discretization are in
:mod:`~mpc_tracking.models.prediction.spatial_dynamic`, which re-exports both names (``spatial_dynamic.DynamicParams``
is the path the rest of the package and the documentation use).

>>> p = DynamicParams.bmw_320i()
>>> round(p.wheelbase, 3), [round(a, 4) for a in p.peak_slip_angles]
(2.579, [0.149, 0.149])
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mpc_tracking.errors import ModelError

__all__ = ["DynamicParams", "peak_slip"]

_INF = float("inf")
#: field -> (lower bound, lower bound allowed, upper bound, upper bound allowed, unit)
_RANGES: dict[str, tuple[float, bool, float, bool, str]] = {
    "mass": (0.0, False, _INF, False, "kg"),
    "I_z": (0.0, False, _INF, False, "kg m^2"),
    "l_f": (0.0, False, _INF, False, "m"),
    "l_r": (0.0, False, _INF, False, "m"),
    "h_cg": (0.0, True, _INF, False, "m"),
    "mu": (0.0, False, _INF, False, "-"),
    "tyre_B_f": (0.0, False, _INF, False, "1/rad"),
    "tyre_C_f": (0.0, False, 2.0, False, "-"),
    "tyre_B_r": (0.0, False, _INF, False, "1/rad"),
    "tyre_C_r": (0.0, False, 2.0, False, "-"),
    "tyre_D_f": (0.0, False, _INF, False, "-"),
    "tyre_D_r": (0.0, False, _INF, False, "-"),
    "tyre_E_f": (-_INF, False, 1.0, True, "-"),
    "tyre_E_r": (-_INF, False, 1.0, True, "-"),
    "v_floor": (0.0, False, _INF, False, "m/s"),
    "v_blend_low": (0.0, False, _INF, False, "m/s"),
    "v_blend_high": (0.0, False, _INF, False, "m/s"),
    "tau_kin": (0.0, False, _INF, False, "s"),
    "g": (0.0, False, _INF, False, "m/s^2"),
}


def _range_text(lo: float, lo_ok: bool, hi: float, hi_ok: bool) -> str:
    left = ("[" if lo_ok else "(") + (f"{lo:g}" if np.isfinite(lo) else "-inf")
    right = (f"{hi:g}" if np.isfinite(hi) else "inf") + ("]" if hi_ok else ")")
    return f"a number in {left}, {right}"


@dataclass(frozen=True)
class DynamicParams:
    """Parameters of the spatial dynamic bicycle, validated on construction.

    Attributes
    ----------
    mass : float
        Vehicle mass m [kg], > 0.
    I_z : float
        Yaw moment of inertia about the CG [kg m²], > 0.
    l_f : float
        CG to front axle [m], > 0.
    l_r : float
        CG to rear axle [m], > 0 (the reference point of ``e_y``, ``e_psi`` is the rear axle).
    h_cg : float
        CG height above ground for the longitudinal load transfer [m], >= 0.
    mu : float
        Tyre-road friction coefficient [-], > 0: the peak lateral force of an axle is ``D mu F_z``.
    tyre_B_f, tyre_B_r : float
        Pacejka stiffness factor B of the front / rear axle [1/rad], > 0.
    tyre_C_f, tyre_C_r : float
        Pacejka shape factor C [-], in (0, 2) (the force keeps the sign of the slip angle).
    tyre_E_f, tyre_E_r : float
        Pacejka curvature factor E [-], <= 1 (default 0).
    tyre_D_f, tyre_D_r : float
        Peak factor of each axle [-], > 0 (default 1): the axle's peak force is ``D mu F_z``. An
        axle whose wheels share the load unequally in a corner (lateral load transfer with
        load-sensitive tyres) peaks below ``mu F_z``; ``D_f < D_r`` makes the front axle saturate
        first, as a road car that understeers at the limit.
    v_floor : float
        Floor of ``v_x`` wherever it divides [m/s], > 0 (default 0.5).
    v_blend_low, v_blend_high : float
        Below ``v_blend_low`` the velocity dynamics are the kinematic bicycle's, above
        ``v_blend_high`` the tyre model's, smootherstep in between [m/s];
        ``2 v_floor <= v_blend_low < v_blend_high`` (defaults 2 and 5).
    tau_kin : float
        Time constant with which the kinematic part pulls ``v_y``, ``r`` onto their kinematic
        values [s], > 0 (default 0.1).
    g : float
        Gravitational acceleration [m/s²], > 0 (default 9.81, as CommonRoad).
    """

    mass: float
    I_z: float
    l_f: float
    l_r: float
    h_cg: float
    mu: float
    tyre_B_f: float
    tyre_C_f: float
    tyre_B_r: float
    tyre_C_r: float
    tyre_E_f: float = 0.0
    tyre_E_r: float = 0.0
    tyre_D_f: float = 1.0
    tyre_D_r: float = 1.0
    v_floor: float = 0.5
    v_blend_low: float = 2.0
    v_blend_high: float = 5.0
    tau_kin: float = 0.1
    g: float = 9.81

    def __post_init__(self) -> None:
        for name, (lo, lo_ok, hi, hi_ok, unit) in _RANGES.items():
            v = getattr(self, name)
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and bool(np.isfinite(v))
            ok = ok and (v >= lo if lo_ok else v > lo) and (v <= hi if hi_ok else v < hi)
            if not ok:
                raise ModelError(
                    f"DynamicParams.{name}: expected {_range_text(lo, lo_ok, hi, hi_ok)} [{unit}], got {v!r}"
                )
        if self.v_blend_low < 2.0 * self.v_floor:
            raise ModelError(
                f"DynamicParams.v_blend_low: expected >= 2 v_floor = {2.0 * self.v_floor:g} [m/s] "
                f"(the tyre model must see the unfloored v_x), got {self.v_blend_low!r}"
            )
        if self.v_blend_high <= self.v_blend_low:
            raise ModelError(
                f"DynamicParams.v_blend_high: expected > v_blend_low = {self.v_blend_low:g} [m/s], "
                f"got {self.v_blend_high!r}"
            )

    @classmethod
    def bmw_320i(cls) -> DynamicParams:
        """The BMW 320i sedan of CommonRoad (vehicle id 2).

        Source: the PyPI package ``commonroad-vehicle-models`` 3.0.2 (module ``vehiclemodels``),
        files ``parameters/parameters_vehicle2.yaml`` (m, I_z, a = l_f, b = l_r, h_cg) and
        ``parameters/parameters_tire.yaml`` (MF lateral coefficients p_cy1, p_dy1, p_ey1, p_ky1,
        shared by all CommonRoad vehicles). B follows CommonRoad's ``formula_lateral`` with
        ``K_y = p_ky1 F_z``: ``B = |p_ky1| / (p_cy1 p_dy1)``, i.e. cornering stiffness ``21.92 F_z``
        [N/rad] per axle, the same as its single-track model's ``mu C_S F_z``. CommonRoad's
        single-track model uses the sprung-mass CG height ``h_s = 0.61373004`` m for the load
        transfer; this preset uses the total-mass CG height ``h_cg``. Blend speeds are this module's
        defaults. The body is 4.508 m x 1.61 m (not part of these parameters).
        """
        # commonroad-vehicle-models 3.0.2, vehiclemodels/parameters/parameters_tire.yaml
        p_cy1, p_dy1, p_ey1, p_ky1 = 1.3507, 1.0489, -0.0074722, -21.92
        b = -p_ky1 / (p_cy1 * p_dy1)
        # commonroad-vehicle-models 3.0.2, vehiclemodels/parameters/parameters_vehicle2.yaml
        return cls(
            mass=1093.2952334674046,  # m
            I_z=1791.5995300122856,  # I_z
            l_f=1.1561957064,  # a
            l_r=1.4227170936,  # b
            h_cg=0.5748689544000001,  # h_cg
            mu=p_dy1,
            tyre_B_f=b,
            tyre_C_f=p_cy1,
            tyre_E_f=p_ey1,
            tyre_B_r=b,
            tyre_C_r=p_cy1,
            tyre_E_r=p_ey1,
        )

    @property
    def wheelbase(self) -> float:
        """L = l_f + l_r [m]."""
        return self.l_f + self.l_r

    @property
    def static_loads(self) -> tuple[float, float]:
        """Normal loads (F_zf, F_zr) at ``a_x = 0`` [N]."""
        L = self.wheelbase
        return self.mass * self.g * self.l_r / L, self.mass * self.g * self.l_f / L

    @property
    def peak_slip_angles(self) -> tuple[float, float]:
        """Slip angles (front, rear) [rad] at which each axle's lateral force peaks (:func:`peak_slip`; inf for an
        axle whose force does not peak)."""
        return (peak_slip(self.tyre_B_f, self.tyre_C_f, self.tyre_E_f),
                peak_slip(self.tyre_B_r, self.tyre_C_r, self.tyre_E_r))

    @property
    def cornering_stiffness(self) -> tuple[float, float]:
        """Axle cornering stiffnesses (C_αf, C_αr) = B C D mu F_z at the static loads [N/rad]."""
        fzf, fzr = self.static_loads
        return (self.tyre_B_f * self.tyre_C_f * self.tyre_D_f * self.mu * fzf,
                self.tyre_B_r * self.tyre_C_r * self.tyre_D_r * self.mu * fzr)


def peak_slip(B: float, C: float, E: float = 0.0) -> float:
    """Slip angle [rad] at which the magic formula's lateral force peaks.

    The force ``D mu F_z sin(C atan(psi))``, ``psi = B alpha - E (B alpha - atan(B alpha))``, peaks where
    ``C atan(psi) = pi / 2``, i.e. ``psi = tan(pi / (2 C))``; ``psi`` rises with ``alpha`` for ``E <= 1``, so the
    peak is unique (``tan(pi / (2 C)) / B`` for ``E = 0``). Beyond it the force falls: more slip gives less force.
    Independent of ``mu`` and ``D``; with the cornering stiffness ``B C D mu F_z`` held, it scales with ``mu``
    (as the grip estimate scales ``B`` and ``D``).

    Parameters
    ----------
    B : float
        Stiffness factor [1/rad], > 0.
    C : float
        Shape factor [-], in (0, 2).
    E : float
        Curvature factor [-], <= 1.

    Returns
    -------
    float
        The peak slip angle [rad]; ``inf`` where the force has no peak below 90 deg of slip (``C <= 1``: it
        rises towards ``D mu F_z`` without one).

    Examples
    --------
    >>> round(peak_slip(10.0, 1.3), 4)                       # tan(pi / 2.6) / 10
    0.2637
    >>> peak_slip(10.0, 1.0)
    inf
    """
    if C <= 1.0:
        return float("inf")
    target = float(np.tan(0.5 * np.pi / C))
    if E == 0.0:
        return target / B

    def psi(a: float) -> float:
        ba = B * a
        return float(ba - E * (ba - np.arctan(ba)))

    lo, hi = 0.0, 0.5 * np.pi
    if psi(hi) < target:
        return float("inf")
    for _ in range(100):  # bisection: psi is increasing for E <= 1
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if psi(mid) < target else (lo, mid)
    return 0.5 * (lo + hi)
