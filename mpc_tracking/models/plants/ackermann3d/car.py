"""3D rigid-body Ackermann car with spring-damper ground contact and slipping tires.

State (22,): CG position ``p`` (world) [m], rotation ``R`` body -> world (row-major, 9), CG velocity
``v`` (world) [m/s], angular velocity ``w`` (body) [rad/s], wheel spin rates ``omega`` (4) [rad/s]
(FL, FR, RL, RR; positive rolls forward). Input (5,): bicycle steering angle ``delta`` [rad] and
four wheel torques [N m] (driving torque masked by the drive layout ``rwd``/``fwd``/``awd``;
negative torque is a friction brake, on every wheel unless ``brakes="driven"``, that stops but never
reverses a wheel; ``brake_model="torque"`` keeps the reference's signed torque).

Model, per wheel i with contact point r_i (body frame, z = -h):

* Ackermann front angles ``delta_FL/FR = atan(L tan d / (L -/+ (W/2) tan d))`` (both turn directions).
* Contact: penetration ``d = z0 - (p + R r_i)_z``, ``F_z = max(0, k_n d + c_n d')`` while ``d > 0``.
* Slip in the wheel frame (t along the wheel, n to its left): ``kappa = (r omega - v_t)/max(eps, |v_t|)``,
  ``alpha = atan2(v_n, max(eps, |v_t|))``; linear tires ``F_x = C_kappa kappa``, ``F_y = -C_alpha alpha``
  scaled back onto the friction circle ``sqrt(F_x^2 + F_y^2) <= mu F_z``.
* Optional (presets ``sedan``): anti-roll bars ``+-k_arb (d_L - d_R)`` on each axle's normal forces,
  tire load sensitivity ``C_alpha(F_z)`` (degressive) and ``mu(F_z)``.
* Newton-Euler: ``m v' = sum f_i + m g``, ``I w' = sum r_i x f_i - w x I w``; every wheel
  ``I_w omega' = tau - T_b sign(omega) - r F_x - b_w omega`` with friction brakes ``T_b`` (negative torque
  requests) that hold a stopped wheel (``brake_model="friction"``; ``"torque"`` = the reference's signed torque).
* Initial state: the static equilibrium (:meth:`Ackermann3DParams.static_pose
  <mpc_tracking.models.plants.ackermann3d.params.Ackermann3DParams.static_pose>`, pitched for an off-centre CG).
* Semi-implicit Euler with ``R <- R exp([w dt]x)`` in equal substeps no longer than
  :meth:`Ackermann3DParams.substep() <mpc_tracking.models.plants.ackermann3d.params.Ackermann3DParams.substep>`
  (``max_substep``, shortened to the contact and slip stability bounds), re-orthonormalized after every
  :meth:`Ackermann3D.step`; by default the wheel spin is linearly implicit in its slip stiffness.

Backends: the parameter ``backend`` (``"auto"`` | ``"numpy"`` | ``"numba"``) chooses how :meth:`Ackermann3D.step`
integrates: the pure-Python scalar path (:mod:`~mpc_tracking.models.plants.ackermann3d.scalar`) or the compiled kernel
(:mod:`~mpc_tracking.models.plants.ackermann3d.batch_numba`, ``pip install "mpc_tracking[fast]"``), same equations,
states equal to ~1e-15 relative per step. :meth:`xdot`, :meth:`tire_forces` and :meth:`energy` use the scalar path
always.
On the numba backend, :meth:`Ackermann3D.held_torque_stepper` runs a control period's steps behind the wheel-torque PI
actuator in one compiled call (:mod:`~mpc_tracking.models.plants.ackermann3d.held`), bitwise the numbers of single
steps.

Low-speed behaviour: the slip floor ``eps_v`` turns the tire law viscous below ``eps_v`` (bounded
stiffness, no chatter) and zero slip velocity gives zero force (no creep at standstill); the
implicit wheel update removes the stiffest (wheel-spin) mode. The reference implementation's
choices are options, see :class:`~mpc_tracking.models.plants.ackermann3d.params.Ackermann3DParams`.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import fields
from typing import Any, ClassVar

import numpy as np

from mpc_tracking.errors import ModelError, NonFiniteStateError
from mpc_tracking.models.base import MotionModel, Pose, Velocity
from mpc_tracking.models.plants.ackermann3d import batch_numba
from mpc_tracking.models.plants.ackermann3d.params import PRESETS, Ackermann3DParams
from mpc_tracking.models.plants.ackermann3d.scalar import (
    ScalarConstants,
    accelerations,
    contact,
    orthonormalize_list,
    steering,
    substep,
)

__all__ = ["Ackermann3D"]

_FIELD_DOCS = {
    "wheelbase": "L [m]", "track": "W [m]", "cg_to_front": "a, CG to front axle [m]",
    "cg_height": "h, CG above the contact points [m]", "wheel_radius": "r [m]", "mass": "m [kg]",
    "inertia": "(I_xx, I_yy, I_zz) [kg m^2]", "gravity": "g [m/s^2]", "wheel_inertia": "I_w [kg m^2]",
    "wheel_damping": "b_w [N m s]", "mu": "friction coefficient [-]", "c_kappa": "slip stiffness [N]",
    "c_alpha": "cornering stiffness [N/rad]", "eps_v": "slip denominator floor [m/s]",
    "eps_force": "smooth-limit regularizer [N^2]", "k_n": "contact stiffness [N/m]",
    "c_n": "contact damping [N s/m]", "z0": "ground height [m]", "drive": "rwd | fwd | awd",
    "brakes": "all | driven (wheels negative torque reaches)",
    "friction_limit": "clip | smooth", "slip_squash": "tanh slip squashing (bool)",
    "slip_denominator": "max | sqrt", "contact_damping": "full | compression",
    "wheel_update": "implicit | explicit", "float32_casts": "round params to float32 (bool)",
    "max_substep": "longest internal substep [s]",
    "auto_substep": "shorten substeps to the stability bounds (bool)",
    "brake_model": "friction | torque (negative torque: brake that holds at 0, or signed motor torque)",
    "fz_nominal": "nominal tire load F_z0 of the load-sensitivity laws [N]; 0 = m g / 4",
    "c_alpha_peak_load": "degressive C_alpha(F_z) peaking at this multiple of F_z0; 0 = constant",
    "mu_load": "friction load sensitivity k: mu (1 - k (F_z - F_z0) / F_z0); 0 = constant",
    "arb_front": "front anti-roll bar rate [N/m]", "arb_rear": "rear anti-roll bar rate [N/m]",
    "lateral_force": "constant external body-y force at the CG [N] (crosswind); 0 = none",
    "mu_schedule": "friction over time: list of [t [s], mu], from t on (rain); empty = constant mu",
    "mu_patches": "friction by place: list of [x [m], y [m], radius [m], mu] (wet patches, world frame)",
}
_WHEELS = ("FL", "FR", "RL", "RR")


class Ackermann3D(MotionModel):
    """3D Ackermann car (see module doc). Pose origin = CG, so ``reference_offset`` = b (CG to rear axle).

    Parameters are ``preset`` (``"rc_car"``, ``"rc_car_reference"``, ``"sedan"``), ``backend`` (``"auto"``,
    ``"numpy"``, ``"numba"``: see the module doc; the one in use is :attr:`backend`) plus any
    :class:`Ackermann3DParams` field to override the preset (``None`` = preset value).
    """

    name = "ackermann3d"
    STATE_NAMES = ("x", "y", "z", "R00", "R01", "R02", "R10", "R11", "R12", "R20", "R21", "R22",
                   "vx", "vy", "vz", "wx", "wy", "wz", *(f"omega_{w}" for w in _WHEELS))
    INPUT_NAMES = ("delta", *(f"tau_{w}" for w in _WHEELS))
    STATE_UNITS = ("m",) * 3 + ("-",) * 9 + ("m/s",) * 3 + ("rad/s",) * 3 + ("rad/s",) * len(_WHEELS)
    INPUT_UNITS = ("rad",) + ("N m",) * len(_WHEELS)
    PARAMS: ClassVar[dict[str, tuple[Any, str]]] = {
        "preset": ("rc_car", f"parameter set, one of {sorted(PRESETS)}"),
        "backend": ("auto", "step integrator: numpy (pure Python), numba (compiled, pip install "
                            "'mpc_tracking[fast]') or auto (numba when installed)")}
    PARAMS.update({f.name: (None, f"{_FIELD_DOCS[f.name]}; None = preset value") for f in fields(Ackermann3DParams)})
    default_actuator = "wheel_torque_pi"
    max_substep: float  # from the vehicle parameters (_check_params)
    integrator = "semi_implicit_euler_so3"

    def _check_params(self, p: dict[str, Any]) -> None:
        preset = p["preset"]
        if preset not in PRESETS:
            raise ModelError(f"{self.name}: unknown preset {preset!r}; expected one of {sorted(PRESETS)}")
        overrides = {k: v for k, v in p.items() if k not in ("preset", "backend") and v is not None}
        self.vehicle = PRESETS[preset](**overrides)
        self._K = ScalarConstants(self.vehicle)
        self.backend = batch_numba.resolve_backend(p["backend"], self.name)
        self._numba = batch_numba.pack_constants(self._K.P) if self.backend == "numba" else None
        self._kernel: Any = None  # the compiled single-car step, loaded on the first step
        self._loads_kernel: Any = None  # the compiled normal loads, loaded on the first call
        self._st_array: tuple[list, np.ndarray] | None = None  # (state list, its array) after a compiled step
        self._loads = np.empty(4)
        self._buf = np.empty(38)  # the compiled step's argument; holds the state between steps
        self.max_substep = self.vehicle.substep()
        self.reference_offset = self.vehicle.cg_to_rear
        self._mu_now = self.vehicle.mu  # the road friction the constants hold (mu_schedule, mu_patches)

    # ------------------------------------------------------------------ state
    def _initial_state(self, info: dict[str, float]) -> np.ndarray:
        P = self.vehicle
        yaw = info["yaw"]
        c, s, v = math.cos(yaw), math.sin(yaw), info["speed"]
        z, pitch = P.static_pose()
        if pitch == 0.0:
            om = v / P.wheel_radius
            self._st = [info["x"], info["y"], z + info["z"], c, -s, 0.0, s, c, 0.0, 0.0, 0.0, 1.0,
                        v * c, v * s, 0.0, 0.0, 0.0, 0.0, om, om, om, om]
        else:  # off-centre CG: start at the static pitch, R = Rz(yaw) Ry(pitch), wheels rolling without slip
            cp, sp = math.cos(pitch), math.sin(pitch)
            om = v * cp / P.wheel_radius
            self._st = [info["x"], info["y"], z + info["z"], c * cp, -s, c * sp, s * cp, c, s * sp, -sp, 0.0, cp,
                        v * c, v * s, 0.0, 0.0, 0.0, 0.0, om, om, om, om]
        self._delta = 0.0
        self._cs: tuple | None = None  # wheel steering (cos, sin) of self._delta, computed on the first step
        self._cs_flat: list[float] = []  # the same as [c_FL, c_FR, c_RL, c_RR, s_FL, ...] (numba backend)
        return np.array(self._st)

    @property
    def state(self) -> np.ndarray:
        """Full state (22,), ordered as :attr:`STATE_NAMES`."""
        return np.array(self._st)

    @state.setter
    def state(self, value: Any) -> None:
        x = np.asarray(value, dtype=float).reshape(-1)
        if x.size != 22 or not np.all(np.isfinite(x)):
            raise ModelError(f"{self.name}.state: expected 22 finite values {self.STATE_NAMES}")
        self._st = [float(a) for a in x]
        orthonormalize_list(self._st)

    @property
    def _state(self) -> np.ndarray:  # the base class reads/writes _state
        return np.array(self._st)

    @_state.setter
    def _state(self, value: np.ndarray) -> None:
        self._st = [float(a) for a in value]

    # ------------------------------------------------------------------ dynamics
    def step(self, t: float, dt: float, u: Any) -> np.ndarray:
        """Advance by ``dt`` [s] with u = (delta, tau_FL, tau_FR, tau_RL, tau_RR) held, in substeps."""
        if isinstance(u, np.ndarray):
            u = u.tolist()
        try:
            delta, t0, t1, t2, t3 = u
            delta, t0, t1, t2, t3 = float(delta), float(t0), float(t1), float(t2), float(t3)
        except (TypeError, ValueError):
            raise ModelError(f"{self.name}: expected 5 numeric inputs {self.INPUT_NAMES}, got {u!r}") from None
        if not math.isfinite(delta + t0 + t1 + t2 + t3):
            raise ModelError(f"{self.name}: input must be finite, got {list(u)}")
        if not (dt > 0 and math.isfinite(dt)):
            raise ModelError(f"{self.name}.step: dt must be a positive number of seconds, got {dt}")
        k = math.ceil(dt / self.max_substep - 1e-9) if dt > self.max_substep else 1
        h = dt / k
        if self.vehicle.varying_friction:
            self._use_friction(self.vehicle.road_friction(t, self._st[0], self._st[1]))
        st, K = self._st, self._K
        tau, brake = K.split((t0, t1, t2, t3))
        cs = self._cs
        if delta != self._delta or cs is None:
            cs = self._cs = steering(delta, K)
            self._cs_flat = [a[0] for a in cs] + [a[1] for a in cs]
        if self._numba is not None:  # the compiled kernel: k substeps and the re-orthonormalization, in place on x
            if self._kernel is None:
                self._kernel = batch_numba.load_kernels().step_single
            buf = self._buf  # state, wheel directions, torques (step_single's layout)
            cached = self._st_array
            if cached is None or cached[0] is not st:  # the state was set since the last step
                buf[:22] = st
            buf[22:30] = self._cs_flat
            buf[30:34] = tau
            buf[34:38] = brake
            self._kernel(buf, k, h, *self._numba)
            x = buf[:22].copy()  # the caller's
            self._st = st = x.tolist()
            self._st_array = (st, buf[:22])  # the state list and its array (the next step, normal_loads)
        else:
            x = None
            br = brake if any(brake) else None
            for _ in range(k):
                substep(st, cs, tau, h, K, br)
            orthonormalize_list(st)
        if not math.isfinite(sum(st)):
            raise NonFiniteStateError(f"{self.name}.step: the state became non-finite at t = {t + dt:.3f} s")
        self._delta = delta
        self.t = t + dt
        return np.array(st) if x is None else x

    def held_torque_stepper(self, actuator: Any) -> Callable[[float, float, int, float, float], float] | None:
        """``advance(t, dt, n, v_cmd, delta_cmd) -> t_end`` [s]: ``n`` steps of ``dt`` [s] behind the wheel-torque PI
        ``actuator`` (:class:`~mpc_tracking.actuation.WheelTorquePI`) with the command held, in one compiled call
        (:func:`~mpc_tracking.models.plants.ackermann3d.held.torque_pi_stepper`): the same numbers as ``n`` calls of
        ``step(t, dt, actuator(t, dt, v_cmd, delta_cmd, self))``, bitwise.

        None unless every step would run the compiled kernel anyway: the numba backend, this class's own
        :meth:`step`, :meth:`normal_loads` and friction update (not replaced on the object or in a subclass).
        """
        if (self._numba is None or type(self) is not Ackermann3D
                or any(k in self.__dict__ for k in ("step", "normal_loads", "_use_friction", "speed"))):
            return None
        from mpc_tracking.models.plants.ackermann3d.held import torque_pi_stepper

        return torque_pi_stepper(self, actuator)

    def _use_friction(self, mu: float) -> None:
        """Step on the road friction ``mu`` [-] (the scalar constants and the kernels' ``prm``) when it changed."""
        if mu != self._mu_now:
            self._mu_now = mu
            self._K.set_friction(mu)
            if self._numba is not None:
                batch_numba.set_friction(self._numba[0], mu, self._K.P)

    def road_friction(self, t: float | None = None) -> float:
        """The road's friction coefficient [-] under the car's CG at time ``t`` [s] (default: the plant's
        time): :attr:`Ackermann3DParams.mu` unless ``mu_schedule`` or ``mu_patches`` say otherwise
        (:meth:`Ackermann3DParams.road_friction`); logged by :func:`~mpc_tracking.simulate` as ``mu_true``."""
        return self.vehicle.road_friction(self.t if t is None else float(t), self._st[0], self._st[1])

    def xdot(self, x: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Right-hand side (22,) with ``R' = R [w]x`` (for generic integrators; :meth:`step` uses SO(3))."""
        st = [float(a) for a in np.asarray(x, dtype=float).reshape(-1)]
        uu = [float(a) for a in np.asarray(u, dtype=float).reshape(-1)]
        tau, brake = self._K.split(uu[1:5])
        dv, dw, dom, _ = accelerations(st, steering(uu[0], self._K), tau, self._K, brake=brake)
        acc = [*dv, *dw, *dom]
        R = np.array(st[3:12]).reshape(3, 3)
        w = np.array(st[15:18])
        W = np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])
        return np.concatenate([st[12:15], (R @ W).reshape(-1), acc])

    def tire_forces(self, delta: float | None = None) -> dict[str, np.ndarray]:
        """Per-wheel ``Fx``, ``Fy`` (wheel frame) and ``Fz`` (world z) [N], each (4,), at the current state."""
        forces: list = []
        delta = self._delta if delta is None else float(delta)
        accelerations(self._st, steering(delta, self._K), (0.0,) * 4, self._K, forces)
        out = np.array(forces)
        return {"Fx": out[:, 0], "Fy": out[:, 1], "Fz": out[:, 2]}

    def normal_loads(self) -> list[float]:
        """Normal force ``F_z`` [N] on each wheel (FL, FR, RL, RR) at the current state: ``tire_forces()["Fz"]``
        (which does not depend on the steering) without the tire forces, as floats."""
        if self._numba is None:
            return contact(self._st, self._K)[1]
        if self._loads_kernel is None:  # the same numbers compiled (to rounding: tests/models/plants)
            self._loads_kernel = batch_numba.load_kernels().normal_loads_single
        st, cached = self._st, self._st_array
        x = cached[1] if cached is not None and cached[0] is st else np.array(st)
        self._loads_kernel(x, *self._numba, self._loads)
        return self._loads.tolist()

    @property
    def wheel_speeds(self) -> list[float]:
        """Wheel spin rates ``omega`` [rad/s] (FL, FR, RL, RR), the last four states, as floats."""
        return self._st[18:22]

    # ------------------------------------------------------------------ outputs
    @property
    def rotation(self) -> np.ndarray:
        """Body -> world rotation (3, 3)."""
        return np.array(self._st[3:12]).reshape(3, 3)

    @property
    def pose(self) -> Pose:
        st = self._st
        return Pose(st[0], st[1], st[2], math.atan2(st[10], st[11]), -math.asin(max(-1.0, min(1.0, st[9]))),
                    math.atan2(st[6], st[3]))

    @property
    def velocity(self) -> Velocity:
        st = self._st
        return Velocity(np.array(st[12:15]), self.rotation @ np.array(st[15:18]))

    @property
    def speed(self) -> float:
        """Forward speed [m/s]: world velocity along the body x axis."""
        st = self._st
        return st[12] * st[3] + st[13] * st[6] + st[14] * st[9]

    def energy(self) -> float:
        """Total mechanical energy [J]: translation, body and wheel rotation, gravity, contact springs."""
        P, st = self.vehicle, self._st
        v2 = st[12] ** 2 + st[13] ** 2 + st[14] ** 2
        rot = sum(inertia * w * w for inertia, w in zip(P.inertia, st[15:18], strict=True))
        wheels = P.wheel_inertia * sum(o * o for o in st[18:22])
        R = self.rotation
        z = st[2] + R[2] @ P.contact_points().T
        d = np.maximum(P.z0 - z, 0.0)
        spring = 0.5 * P.k_n * float(np.sum(d**2))
        spring += 0.5 * (P.arb_front * (d[0] - d[1]) ** 2 + P.arb_rear * (d[2] - d[3]) ** 2)
        return 0.5 * P.mass * v2 + 0.5 * rot + 0.5 * wheels + P.mass * P.gravity * st[2] + spring
