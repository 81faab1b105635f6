"""Parameter sets of the 3D rigid-body Ackermann car (:mod:`mpc_tracking.models.plants.ackermann3d.car`).

Two presets:

``rc_car``
    The 1:10 RC car of the reference data ``../shared/plants/ackermann3d/scenarios.json``
    (cornellev/ackermann-jax ``default_params()``): L = 0.26 m, W = 0.16 m, a = b = 0.13 m,
    h = 0.06 m, r = 0.03 m, m = 1.5 kg, I = diag(0.02, 0.02, 0.04) kg m^2, I_w = 2.25e-4 kg m^2,
    b_w = 7.5e-4 N m s, mu = 0.9, C_kappa = 30 N, C_alpha = 25 N/rad, k_n = 2000 N/m,
    c_n = 50 N s/m. Only ``eps_v`` differs: 0.2 m/s instead of the reference's 1e-3 m/s (our
    low-speed slip regularization, see :class:`Ackermann3DParams`).
``sedan``
    A mid-size sedan. Sources: mass m = 1573 kg, yaw inertia I_zz = 2873 kg m^2, CG to front
    axle a = 1.10 m, CG to rear axle b = 1.58 m and cornering stiffness C_alpha = 80 000 N/rad per
    tire are the example passenger car of R. Rajamani, *Vehicle Dynamics and Control*, 2nd ed.,
    Springer 2012 (lateral-dynamics examples, ch. 2-3); with tire load sensitivity the preset uses
    62 000 N/rad at the nominal load instead (below). **Estimates** (typical values, not from a
    single measured car): track W = 1.55 m, CG height h = 0.55 m above the contact points, wheel
    radius r = 0.31 m (205/55 R16), roll/pitch inertia I_xx = 550, I_yy = 2900 kg m^2, wheel spin
    inertia I_w = 1.0 kg m^2, bearing drag b_w = 0.05 N m s, longitudinal slip stiffness
    C_kappa = 100 000 N per unit slip (order of magnitude from Pacejka, *Tire and Vehicle
    Dynamics*), mu = 0.9 (dry asphalt), and a per-corner contact stiffness k_n = 35 000 N/m with
    c_n = 3500 N s/m, which lumps suspension and tire (about 1.5 Hz body bounce, damping ratio
    ~0.47), since the model has no suspension.

    Limit handling (issue 11): a road sedan understeers at the limit. Without tire load sensitivity
    and with equal corner springs the model held about 0.9 mu g on a 50 m circle and then spun (the
    lateral load transfer, split equally between the axles, saturated the light, driven rear axle).
    The preset therefore adds **estimates** within textbook ranges:

    * nominal tire load F_z0 = 4500 N (a 205/55 R16, load index 91, carries up to 6 kN; Magic Formula
      data sets use F_z0 ~ 4-5 kN, Pacejka 2012 ch. 4);
    * degressive cornering stiffness peaking at p_Ky2 = 1.5 F_z0 (Magic Formula ``K_y = p_Ky1 F_z0
      sin(2 atan(F_z / (p_Ky2 F_z0)))``, p_Ky2 ~ 1.5-2.5 in published data sets) with
      C_alpha(F_z0) = 62 000 N/rad, i.e. C_alpha / F_z ~ 14 /rad (0.24 /deg; Gillespie, *Fundamentals of
      Vehicle Dynamics*, 1992, ch. 10: cornering coefficients ~0.2 /deg for passenger tires), chosen so
      the understeer gradient in the linear range stays ~1 deg/g as with Rajamani's 80 000 N/rad
      (measured 0.87 deg/g on constant-radius runs, tests/models/plants/test_ackermann3d_limit.py);
    * friction load sensitivity k = 0.05 (mu drops 5 % per +100 % load; Magic Formula
      ``-p_Dy2 / p_Dy1`` ~ 0.05-0.15, Pacejka 2012; Milliken & Milliken, *Race Car Vehicle Dynamics*,
      1995, ch. 2, show the same trend);
    * a front anti-roll bar of 12 000 N/m (rear none): axle roll stiffnesses W^2 (k_n / 2 + k_arb)
      = 70.9 and 42.0 kN m/rad, 63 % front (road sedans ~55-70 % front), total roll gradient ~4.3
      deg/g (Gillespie: 3-7 deg/g for passenger cars).

    Measured on a 50 m circle with a 0.1 m/s^2 speed ramp (tests/models/plants/test_ackermann3d_limit.py): holds
    8.08 m/s^2 (0.915 mu g), then runs wide with |sideslip| < 3 deg instead of spinning.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace
from typing import Any

import numpy as np

from mpc_tracking.errors import ModelError

__all__ = ["Ackermann3DParams", "PRESETS", "DRIVE_MASKS", "MU_RANGE"]

#: the range a scheduled or patch friction coefficient must lie in, (low, high]
MU_RANGE = (0.0, 2.0)

DRIVE_MASKS = {"rwd": (0.0, 0.0, 1.0, 1.0), "fwd": (1.0, 1.0, 0.0, 0.0), "awd": (1.0, 1.0, 1.0, 1.0)}
_CHOICES = {
    "drive": tuple(DRIVE_MASKS),
    "brakes": ("all", "driven"),
    "friction_limit": ("clip", "smooth"),
    "slip_denominator": ("max", "sqrt"),
    "contact_damping": ("full", "compression"),
    "wheel_update": ("implicit", "explicit"),
    "brake_model": ("friction", "torque"),
}


@dataclass(frozen=True)
class Ackermann3DParams:
    """Parameters of the 3D Ackermann car (SI units). Wheel order FL, FR, RL, RR.

    Attributes
    ----------
    wheelbase, track : float
        L and W [m].
    cg_to_front : float
        a [m], CG to front axle; b = L - a is CG to rear axle (:attr:`cg_to_rear`).
    cg_height : float
        h [m], CG height above the wheel contact points (body frame z of the contacts is -h).
    wheel_radius : float
        r [m].
    mass : float
        Chassis mass m [kg].
    inertia : tuple of 3 float
        Principal body inertia (I_xx, I_yy, I_zz) [kg m^2] (body axes x forward, y left, z up).
    gravity : float
        g [m/s^2].
    wheel_inertia, wheel_damping : float
        I_w [kg m^2] and b_w [N m s/rad] of every wheel: I_w w' = tau - r F_x - b_w w.
    mu, c_kappa, c_alpha : float
        Friction coefficient [-], slip stiffness [N per unit slip], cornering stiffness [N/rad].
    eps_v : float
        Slip denominator floor eps [m/s]: kappa = (r w - v_t)/max(eps, |v_t|),
        alpha = atan2(v_n, max(eps, |v_t|)). Below eps the tire forces become linear in the slip
        *velocity* (a viscous law), which is our low-speed regularization: explicit integration
        of slip stiffness C/(m |v_t|) blows up or chatters as v -> 0, and the floor bounds it by
        C/(m eps), stable for the substep :attr:`max_substep`. It also makes standstill exact:
        zero slip velocity -> zero force, no creep.
    eps_force : float
        [N^2] regularizer of |F| in the smooth friction limit.
    k_n, c_n : float
        Contact stiffness [N/m] and damping [N s/m] per wheel: F_z = max(0, k_n d + c_n d').
    z0 : float
        Ground height [m].
    drive : {"rwd", "fwd", "awd"}
        Which wheels the (positive, driving) torque input reaches.
    brakes : {"all", "driven"}
        Where negative torque requests act: "all" wheels (friction brakes, as on a real car; the
        default), or only the "driven" ones like the driving torque (the reference model).
    brake_model : {"friction", "torque"}
        What a negative torque request is. "friction" (default): a brake of magnitude |tau| that opposes
        the wheel spin and holds a stopped wheel (Coulomb friction, integrated as a stick-slip clamp:
        per substep the brake removes at most ``h |tau| / I_w`` of wheel speed and never reverses it),
        so braking stops the car and cannot drive it backwards. "torque": the request is a signed motor
        torque like the driving one and reverses the wheel once it has stopped (the reference model).
    fz_nominal : float
        Nominal tire load F_z0 [N] of the load-sensitivity laws; 0 means the average static load m g / 4.
    c_alpha_peak_load : float
        Degressive cornering stiffness (Pacejka's Magic Formula ``K_y = p_Ky1 F_z0 sin(2 atan(F_z /
        (p_Ky2 F_z0)))``): 0 (default) keeps C_alpha constant; ``p > 0`` makes it
        ``C_alpha(F_z) = c_alpha sin(2 atan(F_z / (p F_z0))) / sin(2 atan(1 / p))``, so ``c_alpha`` is
        the stiffness at F_z0 and the stiffness peaks at F_z = p F_z0 (p = p_Ky2).
    mu_load : float
        Friction load sensitivity k [-]: ``mu(F_z) = mu max(0, 1 - k (F_z - F_z0) / F_z0)`` (Magic Formula
        ``mu_y = p_Dy1 + p_Dy2 dfz``, k = -p_Dy2 / p_Dy1); 0 (default) = constant mu.
    arb_front, arb_rear : float
        Anti-roll bar rates [N/m] of the front and rear axle: the bar adds ``k_arb (d_L - d_R)`` to the
        left and subtracts it from the right normal force of its axle (d = contact compressions, those
        out of contact count as 0), i.e. an axle roll stiffness ``W^2 (k_n / 2 + k_arb)`` [N m/rad]; a
        front-biased split puts the lateral load transfer on the front axle. 0 (default) = no bar.
    friction_limit : {"clip", "smooth"}
        "clip" (textbook) scales (F_x, F_y) back onto the friction circle only when |F| > mu F_z;
        "smooth" (reference) multiplies by mu F_z / sqrt(|F|^2 + eps_force + (mu F_z)^2).
    slip_squash : bool
        Reference option: kappa -> 2 tanh(kappa/2), alpha -> 0.5 tanh(alpha/0.5).
    slip_denominator : {"max", "sqrt"}
        "max": max(eps, |v_t|) (textbook); "sqrt": sqrt(v_t^2 + eps^2) for kappa and |v_t| + eps
        for alpha (reference).
    contact_damping : {"full", "compression"}
        Damping in both directions while in contact (textbook) or only while compressing (reference).
    wheel_update : {"implicit", "explicit"}
        "implicit" integrates the wheel spin linearly-implicitly in its own slip stiffness
        (removes the r^2 C_kappa / (I_w |v_t|) stiffness, the fastest mode at low speed);
        "explicit" is plain semi-implicit Euler (reference).
    float32_casts : bool
        Reference option: round the parameters to float32 as the reference's pytrees do.
    max_substep : float
        Longest internal integration step [s]; :meth:`stable_substep` gives the contact bound.
    auto_substep : bool
        Shorten the substep to :meth:`substep` (contact and low-speed slip stability bounds).
    lateral_force : float
        A constant external force [N] along the body's y axis (positive to the left), applied at the
        CG (no moment), e.g. a steady crosswind or a banked road: a disturbance for offset-free
        tracking tests. 0 (default) leaves the dynamics unchanged bit for bit.
    mu_schedule : tuple of (t [s], mu [-]) pairs
        Friction over time (rain): from each entry's time on, the road's friction is its ``mu``
        (piecewise constant; before the first entry it is :attr:`mu`). Times must not go backwards;
        every ``mu`` in (0, 2]. Empty (default): constant :attr:`mu`.
    mu_patches : tuple of (x [m], y [m], radius [m], mu [-]) quadruples
        Friction by place (a wet patch): while the CG is within ``radius`` of the world point
        ``(x, y)`` the road's friction is the patch's ``mu`` (the last listed patch that holds the
        CG wins; outside every patch the schedule's value). Radius >= 0, ``mu`` in (0, 2].
        :meth:`road_friction` gives the friction at a time and place; the plant holds it over each
        of its steps (evaluated at the step's start).
    """

    wheelbase: float = 0.26
    track: float = 0.16
    cg_to_front: float = 0.13
    cg_height: float = 0.06
    wheel_radius: float = 0.03
    mass: float = 1.5
    inertia: tuple = (0.02, 0.02, 0.04)
    gravity: float = 9.81
    wheel_inertia: float = 2.25e-4
    wheel_damping: float = 7.5e-4
    mu: float = 0.9
    c_kappa: float = 30.0
    c_alpha: float = 25.0
    eps_v: float = 0.2
    eps_force: float = 1e-8
    k_n: float = 2000.0
    c_n: float = 50.0
    z0: float = 0.0
    drive: str = "rwd"
    brakes: str = "all"
    friction_limit: str = "clip"
    slip_squash: bool = False
    slip_denominator: str = "max"
    contact_damping: str = "full"
    wheel_update: str = "implicit"
    brake_model: str = "friction"
    fz_nominal: float = 0.0
    c_alpha_peak_load: float = 0.0
    mu_load: float = 0.0
    arb_front: float = 0.0
    arb_rear: float = 0.0
    float32_casts: bool = False
    max_substep: float = 0.002
    auto_substep: bool = True
    lateral_force: float = 0.0
    mu_schedule: tuple = ()
    mu_patches: tuple = ()

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name in _FRICTION_TABLES:
                object.__setattr__(self, f.name, _FRICTION_TABLES[f.name](v))
            elif f.name in _CHOICES:
                if v not in _CHOICES[f.name]:
                    raise ModelError(f"ackermann3d: parameter {f.name} must be one of {_CHOICES[f.name]}, got {v!r}")
            elif f.name in ("slip_squash", "float32_casts", "auto_substep"):
                if not isinstance(v, (bool, np.bool_)):
                    raise ModelError(f"ackermann3d: parameter {f.name} must be True or False, got {v!r}")
            elif f.name == "inertia":
                arr = np.asarray(v, dtype=float).reshape(-1)
                if arr.size != 3 or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
                    raise ModelError("ackermann3d: parameter inertia must be 3 positive numbers (I_xx, I_yy, I_zz) "
                                     f"[kg m^2], got {v!r}")
                object.__setattr__(self, "inertia", tuple(float(a) for a in arr))
            else:
                try:
                    x = float(v)
                except (TypeError, ValueError):
                    raise ModelError(f"ackermann3d: parameter {f.name} must be a number, got {v!r}") from None
                if not np.isfinite(x):
                    raise ModelError(f"ackermann3d: parameter {f.name} must be finite, got {v!r}")
                object.__setattr__(self, f.name, x)
        positive = ("wheelbase", "track", "cg_height", "wheel_radius", "mass", "gravity", "wheel_inertia",
                    "c_kappa", "c_alpha", "eps_v", "k_n", "max_substep")
        for k in positive:
            if getattr(self, k) <= 0:
                raise ModelError(f"ackermann3d: parameter {k} must be > 0, got {getattr(self, k)!r}")
        for k in ("wheel_damping", "mu", "c_n", "eps_force", "fz_nominal", "c_alpha_peak_load", "mu_load",
                  "arb_front", "arb_rear"):
            if getattr(self, k) < 0:
                raise ModelError(f"ackermann3d: parameter {k} must be >= 0, got {getattr(self, k)!r}")
        if not 0 < self.cg_to_front < self.wheelbase:
            raise ModelError(
                f"ackermann3d: parameter cg_to_front must lie in (0, wheelbase = {self.wheelbase}), "
                f"got {self.cg_to_front!r}"
            )

    # ------------------------------------------------------------------ derived
    @property
    def varying_friction(self) -> bool:
        """True when the road's friction changes over time or place (:attr:`mu_schedule`, :attr:`mu_patches`)."""
        return bool(self.mu_schedule or self.mu_patches)

    def road_friction(self, t: float, x: float, y: float) -> float:
        """The road's friction coefficient [-] at time ``t`` [s] and world point ``(x, y)`` [m].

        :attr:`mu` unless a :attr:`mu_schedule` entry has started by ``t`` (the latest one's mu) or
        a :attr:`mu_patches` patch holds the point (the last listed one that does wins).

        Examples
        --------
        >>> P = Ackermann3DParams.sedan(mu_schedule=[[30.0, 0.6]], mu_patches=[[100.0, 0.0, 30.0, 0.5]])
        >>> P.road_friction(10.0, 0.0, 0.0), P.road_friction(31.0, 0.0, 0.0), P.road_friction(31.0, 90.0, 5.0)
        (0.9, 0.6, 0.5)
        """
        mu = self.mu
        for t_i, mu_i in self.mu_schedule:
            if t_i > t:
                break
            mu = mu_i
        for px, py, radius, mu_i in self.mu_patches:
            if (x - px) ** 2 + (y - py) ** 2 <= radius * radius:
                mu = mu_i
        return mu

    @property
    def cg_to_rear(self) -> float:
        """b = L - a [m]."""
        return self.wheelbase - self.cg_to_front

    def effective_torque(self, tau: np.ndarray) -> np.ndarray:
        """Wheel torques that reach the wheels (4, ...): driving torque only on driven wheels,
        braking (negative) torque on all wheels when ``brakes == "all"``."""
        tau = np.asarray(tau, dtype=float)
        mask = self.drive_mask.reshape((4,) + (1,) * (tau.ndim - 1))
        if self.brakes == "all":
            return np.where(tau < 0.0, tau, mask * tau)
        return mask * tau

    def split_torque(self, tau: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(drive, brake) torques (4, ...) [N m] from the requests ``tau``.

        With ``brake_model == "torque"`` drive is :meth:`effective_torque` (signed) and brake is 0; with
        ``"friction"`` drive is the positive part on the driven wheels and brake the magnitude
        (>= 0) of the negative part on the wheels ``brakes`` selects, applied against the wheel spin.
        """
        tau = np.asarray(tau, dtype=float)
        if self.brake_model == "torque":
            return self.effective_torque(tau), np.zeros_like(tau)
        mask = self.drive_mask.reshape((4,) + (1,) * (tau.ndim - 1))
        neg = np.where(tau < 0.0, -tau, 0.0)
        return mask * np.where(tau > 0.0, tau, 0.0), (neg if self.brakes == "all" else mask * neg)

    @property
    def nominal_load(self) -> float:
        """F_z0 [N] of the tire load-sensitivity laws (:attr:`fz_nominal`, or m g / 4 when that is 0)."""
        return self.fz_nominal if self.fz_nominal > 0 else 0.25 * self.mass * self.gravity

    def cornering_stiffness(self, fz: np.ndarray) -> np.ndarray:
        """C_alpha(F_z) [N/rad] at normal loads ``fz`` [N] (constant ``c_alpha`` unless :attr:`c_alpha_peak_load`)."""
        fz = np.asarray(fz, dtype=float)
        if self.c_alpha_peak_load <= 0:
            return np.full_like(fz, self.c_alpha)
        x = fz / (self.c_alpha_peak_load * self.nominal_load)
        x0 = 1.0 / self.c_alpha_peak_load
        return self.c_alpha * (x / (1.0 + x * x)) * ((1.0 + x0 * x0) / x0)

    def friction(self, fz: np.ndarray) -> np.ndarray:
        """mu(F_z) [-] at normal loads ``fz`` [N] (constant ``mu`` unless :attr:`mu_load`)."""
        fz = np.asarray(fz, dtype=float)
        f0 = self.nominal_load
        return np.maximum(self.mu * (1.0 - self.mu_load * (fz - f0) / f0), 0.0)

    @property
    def drive_mask(self) -> np.ndarray:
        """(4,) 1 for driven wheels (FL, FR, RL, RR)."""
        return np.array(DRIVE_MASKS[self.drive])

    @property
    def static_height(self) -> float:
        """CG height at rest [m] (:meth:`static_pose`); h - m g / (4 k_n) + z0 with the CG midway between the axles."""
        return self.static_pose()[0]

    def static_pose(self) -> tuple[float, float]:
        """Static equilibrium (CG height z [m], pitch [rad], positive nose down) standing on level ground.

        Each corner spring carries its static share of the weight (front ``m g b / (2 L)``, rear
        ``m g a / (2 L)``), so an off-centre CG pitches the body. With the pitch ``t = tan(theta)``,
        ``s, c = sin, cos`` and ``u = m g / (4 k_n) - s (a - b) / 2`` (mean compression), force and pitch
        moment balance give ``t = (a - b) m g / (4 k_n) / (h m g / (2 k_n) - L^2 / 2)`` and
        ``z = z0 + c h - u`` (exact, including the lever arms of the pitched contact points). The
        anti-roll bars carry no static load (the CG is on the centre line).
        """
        a, b, h, L = self.cg_to_front, self.cg_to_rear, self.cg_height, self.wheelbase
        W = self.mass * self.gravity
        t = (a - b) * W / (4.0 * self.k_n) / (h * W / (2.0 * self.k_n) - 0.5 * L * L)
        if t == 0.0:
            return self.z0 + self.cg_height - self.mass * self.gravity / (4.0 * self.k_n), 0.0
        th = float(np.arctan(t))
        s, c = np.sin(th), np.cos(th)
        u = W / (4.0 * self.k_n) - 0.5 * s * (a - b)
        return float(self.z0 + c * h - u), th

    def contact_points(self) -> np.ndarray:
        """Wheel contact points in the body frame, (4, 3) [m], order FL, FR, RL, RR."""
        a, b, w, h = self.cg_to_front, self.cg_to_rear, 0.5 * self.track, self.cg_height
        pts = np.array([[a, w, -h], [a, -w, -h], [-b, w, -h], [-b, -w, -h]])
        return pts.astype(np.float32).astype(float) if self.float32_casts else pts

    def stable_substep(self) -> float:
        """Largest step [s] for which semi-implicit Euler on the contact spring-damper is stable.

        The heave mode ``z'' = -w^2 z - d z'`` with ``w^2 = 4 k_n / m`` and ``d = 4 c_n / m`` under
        semi-implicit Euler has the characteristic polynomial ``l^2 - (2 - w^2 dt^2 - d dt) l + 1 - d dt``;
        it is stable iff ``w^2 dt^2 + 2 d dt < 4`` (Jury). Returns the positive root (0.0121 s for
        the RC car, the README's "about 0.012 s").
        """
        w2 = 4.0 * self.k_n / self.mass
        d = 4.0 * self.c_n / self.mass
        return float((-2.0 * d + np.sqrt(4.0 * d * d + 16.0 * w2)) / (2.0 * w2))

    def slip_stiffness(self) -> float:
        """Largest eigenvalue bound [1/s] of the tire-slip modes at the slip floor |v_t| = eps_v.

        Longitudinal ``C_kappa (4/m + r^2/I_w) / eps`` (the wheel term only with explicit wheels),
        lateral ``4 C_alpha / (m eps)``, yaw ``2 C_alpha (a^2 + b^2) / (I_zz eps)``.
        """
        wheel = 0.0 if self.wheel_update == "implicit" else self.wheel_radius**2 / self.wheel_inertia
        a, b = self.cg_to_front, self.cg_to_rear
        return max(self.c_kappa * (4.0 / self.mass + wheel), 4.0 * self.c_alpha / self.mass,
                   2.0 * self.c_alpha * (a * a + b * b) / self.inertia[2]) / self.eps_v

    def substep(self) -> float:
        """Internal step [s]: ``max_substep``, or with ``auto_substep`` at most half the contact bound
        :meth:`stable_substep` and ``0.5 / slip_stiffness()`` (explicit slip modes well inside stability)."""
        if not self.auto_substep:
            return self.max_substep
        return float(min(self.max_substep, 0.5 * self.stable_substep(), 0.5 / self.slip_stiffness()))

    def numeric(self) -> Ackermann3DParams:
        """This parameter set with the numbers rounded to float32 when :attr:`float32_casts` (else self)."""
        if not self.float32_casts:
            return self
        out: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name == "inertia":
                out[f.name] = tuple(float(np.float32(a)) for a in v)
            elif isinstance(v, float) and f.name not in ("max_substep",):
                out[f.name] = float(np.float32(v))
        return replace(self, **out)

    def replace(self, **changes: Any) -> Ackermann3DParams:
        """Copy with fields changed; unknown names list the valid ones."""
        valid = {f.name for f in fields(self)}
        for k in changes:
            if k not in valid:
                raise ModelError(f"ackermann3d: unknown parameter {k!r}; valid parameters: {sorted(valid)}")
        return replace(self, **changes)

    def as_dict(self) -> dict[str, Any]:
        """Plain dict of the fields."""
        return asdict(self)

    # ------------------------------------------------------------------ presets
    @classmethod
    def rc_car(cls, **changes: Any) -> Ackermann3DParams:
        """The RC car of the reference data, with our textbook model choices (see module doc)."""
        return cls().replace(**changes)

    @classmethod
    def rc_car_reference(cls, **changes: Any) -> Ackermann3DParams:
        """The RC car with the reference implementation's choices (smooth friction clip, tanh slip
        squashing, sqrt slip denominator with eps = 1e-3 m/s, compression-only damping, explicit wheels,
        float32 parameters, AWD mask = its "freefront" variant). Use with ``max_substep = 1e-3``."""
        base = dict(eps_v=1e-3, friction_limit="smooth", slip_squash=True, slip_denominator="sqrt",
                    contact_damping="compression", wheel_update="explicit", float32_casts=True,
                    drive="awd", brakes="driven", brake_model="torque", max_substep=1e-3, auto_substep=False)
        base.update(changes)
        return cls().replace(**base)

    @classmethod
    def sedan(cls, **changes: Any) -> Ackermann3DParams:
        """Mid-size sedan (Rajamani 2012 numbers plus documented estimates, see module doc)."""
        base = dict(wheelbase=2.68, track=1.55, cg_to_front=1.10, cg_height=0.55, wheel_radius=0.31,
                    mass=1573.0, inertia=(550.0, 2900.0, 2873.0), wheel_inertia=1.0, wheel_damping=0.05,
                    mu=0.9, c_kappa=1.0e5, c_alpha=6.2e4, eps_v=1.0, k_n=3.5e4, c_n=3.5e3, max_substep=0.002,
                    fz_nominal=4500.0, c_alpha_peak_load=1.5, mu_load=0.05, arb_front=1.2e4, arb_rear=0.0)
        base.update(changes)
        return cls().replace(**base)


def _friction_value(mu: float, where: str) -> float:
    """``mu`` checked to lie in (0, 2] (:data:`MU_RANGE`)."""
    if not (np.isfinite(mu) and MU_RANGE[0] < mu <= MU_RANGE[1]):
        raise ModelError(f"ackermann3d: {where}: mu must lie in ({MU_RANGE[0]:g}, {MU_RANGE[1]:g}], got {mu!r}")
    return float(mu)


def _rows(value: Any, name: str, width: int, layout: str) -> list[tuple[float, ...]]:
    """``value`` as rows of ``width`` finite numbers; a ModelError naming the entry otherwise."""
    if value is None:
        return []
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise ModelError(f"ackermann3d: parameter {name} must be a list of {layout} entries, got {value!r}")
    rows = []
    for i, entry in enumerate(value):
        try:
            row = tuple(float(a) for a in entry)
        except (TypeError, ValueError):
            row = ()
        if len(row) != width or not all(np.isfinite(row)):
            raise ModelError(f"ackermann3d: {name}[{i}] must be {width} finite numbers {layout}, got {entry!r}")
        rows.append(row)
    return rows


def _check_schedule(value: Any) -> tuple[tuple[float, float], ...]:
    """:attr:`Ackermann3DParams.mu_schedule` checked: [t, mu] rows, times not going backwards, mu in (0, 2]."""
    rows = _rows(value, "mu_schedule", 2, "[t [s], mu]")
    for i, (t, mu) in enumerate(rows):
        if i and t < rows[i - 1][0]:
            raise ModelError(f"ackermann3d: mu_schedule[{i}]: time {t:g} s goes backwards (the entry before "
                             f"starts at {rows[i - 1][0]:g} s); list the entries in time order")
        _friction_value(mu, f"mu_schedule[{i}]")
    return tuple((t, mu) for t, mu in rows)


def _check_patches(value: Any) -> tuple[tuple[float, float, float, float], ...]:
    """:attr:`Ackermann3DParams.mu_patches` checked: [x, y, radius, mu] rows, radius >= 0, mu in (0, 2]."""
    rows = _rows(value, "mu_patches", 4, "[x [m], y [m], radius [m], mu]")
    for i, (_x, _y, radius, mu) in enumerate(rows):
        if radius < 0:
            raise ModelError(f"ackermann3d: mu_patches[{i}]: radius must be >= 0 m, got {radius:g}")
        _friction_value(mu, f"mu_patches[{i}]")
    return tuple((x, y, r, mu) for x, y, r, mu in rows)


#: the friction tables of :class:`Ackermann3DParams` and their checks
_FRICTION_TABLES = {"mu_schedule": _check_schedule, "mu_patches": _check_patches}


PRESETS = {"rc_car": Ackermann3DParams.rc_car, "rc_car_reference": Ackermann3DParams.rc_car_reference,
           "sedan": Ackermann3DParams.sedan}
