"""Vectorized numpy stepping of many 3D Ackermann cars at once (structure of arrays).

The physics is the one of :class:`~mpc_tracking.models.plants.ackermann3d.car.Ackermann3D` (same equations,
same options from :class:`~mpc_tracking.models.plants.ackermann3d.params.Ackermann3DParams`); the single-car
plant uses a lean scalar path of the same equations and a test cross-checks the two.

Layout (n cars): ``p`` (3, n) world CG position [m]; ``R`` (3, 3, n) body -> world rotations;
``v`` (3, n) world CG velocity [m/s]; ``w`` (3, n) body angular velocity [rad/s]; ``omega`` (4, n)
wheel spin rates [rad/s] (FL, FR, RL, RR; positive rolls forward). Inputs: ``delta`` (n,) steering
[rad] and ``tau`` (4, n) wheel torques [N m] (driving torque masked by the drive layout; braking per ``brakes``).

``backend="numba"`` (the default ``"auto"`` when numba is installed) runs the substeps in the compiled kernel of
:mod:`~mpc_tracking.models.plants.ackermann3d.batch_numba` (same equations, states equal to ~1e-15 relative per step;
the first step compiles it or loads it from numba's cache); ``backend="numpy"`` keeps the code below.
"""
from __future__ import annotations

import numpy as np

from mpc_tracking.errors import ModelError
from mpc_tracking.models.integrators import orthonormalize, so3_exp
from mpc_tracking.models.plants.ackermann3d import batch_numba
from mpc_tracking.models.plants.ackermann3d.params import Ackermann3DParams

__all__ = ["Ackermann3DBatch", "ackermann_angles"]


def ackermann_angles(delta: np.ndarray, wheelbase: float, track: float) -> tuple[np.ndarray, np.ndarray]:
    """Front-left and front-right wheel angles [rad] for the bicycle steering angle ``delta``.

    ``delta_FL/FR = atan(L tan d / (L -/+ (W/2) tan d))`` -- correct for both turn directions
    (the inner wheel turns more), continuous through 0, mirror symmetric:
    ``FL(-d) = -FR(d)``.
    """
    t = np.tan(delta)
    hw = 0.5 * track
    return np.arctan2(wheelbase * t, wheelbase - hw * t), np.arctan2(wheelbase * t, wheelbase + hw * t)


class Ackermann3DBatch:
    """``n`` independent 3D Ackermann cars stepped together.

    Parameters
    ----------
    params : Ackermann3DParams
    n : int
        Number of cars.
    backend : {"auto", "numpy", "numba"}
        How :meth:`step` integrates: ``"numpy"`` the vectorized code of this module, ``"numba"`` the compiled
        kernel (needs ``pip install "mpc_tracking[fast]"``; compiled or loaded from numba's cache on the first
        step), ``"auto"`` numba when it is installed, else numpy. :meth:`forces` is numpy in every case.
        The backend in use is :attr:`backend`.
    """

    def __init__(self, params: Ackermann3DParams, n: int, backend: str = "auto") -> None:
        if not isinstance(params, Ackermann3DParams):
            raise ModelError(f"Ackermann3DBatch: params must be Ackermann3DParams, got {type(params).__name__}")
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ModelError(f"Ackermann3DBatch: n must be an integer >= 1, got {n!r}")
        if params.varying_friction:
            raise ModelError("Ackermann3DBatch: mu_schedule / mu_patches (friction that varies) are not supported by "
                             "the batch; step single Ackermann3D plants instead, or leave them empty")
        self.params = params
        self.P = params.numeric()
        self.n = int(n)
        self.backend = batch_numba.resolve_backend(backend, "Ackermann3DBatch")
        self._numba = batch_numba.pack_constants(self.P) if self.backend == "numba" else None
        r = self.P.contact_points()
        self._rx, self._ry, self._rz = r[:, 0:1], r[:, 1:2], r[:, 2:3]
        self._mask = self.P.drive_mask[:, None]
        P = self.P
        self._arb = P.arb_front > 0 or P.arb_rear > 0
        f0 = P.nominal_load
        x0 = 1.0 / P.c_alpha_peak_load if P.c_alpha_peak_load > 0 else 1.0
        self._inv_pf0 = 1.0 / (P.c_alpha_peak_load * f0) if P.c_alpha_peak_load > 0 else 0.0
        self._ca_gain = P.c_alpha * (1.0 + x0 * x0) / x0  # same constants as the scalar path
        self._mu_a, self._mu_b = P.mu * (1.0 + P.mu_load), P.mu * P.mu_load / f0
        self._c = np.ones((4, self.n))
        self._s = np.zeros((4, self.n))
        self._RX = np.repeat(self._rx, self.n, axis=1)  # (4, n): avoids double broadcasting in the hot path
        self._RY = np.repeat(self._ry, self.n, axis=1)
        self._h_max = self.P.substep()
        self._delta = None
        self._steps = 0
        self._E = np.empty((3, 3, self.n))  # buffer for exp([w h]x)
        self.reset()

    # ------------------------------------------------------------------ state
    def reset(self, x=0.0, y=0.0, yaw=0.0, speed=0.0, z=None) -> None:
        """Put every car at its static equilibrium (:meth:`Ackermann3DParams.static_pose`: rest height and,
        for an off-centre CG, pitch), heading ``yaw`` [rad], rolling at ``speed`` [m/s] (scalars or (n,)).
        ``z`` [m] replaces the rest height of the CG."""
        n = self.n
        yaw = np.broadcast_to(np.asarray(yaw, dtype=float), (n,))
        speed = np.broadcast_to(np.asarray(speed, dtype=float), (n,))
        cz, sz = np.cos(yaw), np.sin(yaw)
        z_rest, pitch = self.params.static_pose()
        self.p = np.array([np.broadcast_to(x, (n,)), np.broadcast_to(y, (n,)),
                           np.broadcast_to(z_rest if z is None else z, (n,))], dtype=float)
        self.R = np.zeros((3, 3, n))
        if pitch == 0.0:
            self.R[0, 0], self.R[0, 1], self.R[1, 0], self.R[1, 1], self.R[2, 2] = cz, -sz, sz, cz, 1.0
            self.omega = np.tile(speed / self.P.wheel_radius, (4, 1))
        else:  # R = Rz(yaw) Ry(pitch), as the single car
            cp, sp = np.cos(pitch), np.sin(pitch)
            self.R[0, 0], self.R[0, 1], self.R[0, 2] = cz * cp, -sz, cz * sp
            self.R[1, 0], self.R[1, 1], self.R[1, 2] = sz * cp, cz, sz * sp
            self.R[2, 0], self.R[2, 2] = -sp, cp
            self.omega = np.tile(speed * cp / self.P.wheel_radius, (4, 1))
        self.v = np.array([speed * cz, speed * sz, np.zeros(n)])
        self.w = np.zeros((3, n))

    @property
    def yaw(self) -> np.ndarray:
        """(n,) yaw [rad] (ZYX)."""
        return np.arctan2(self.R[1, 0], self.R[0, 0])

    # ------------------------------------------------------------------ physics
    def _set_steering(self, delta: np.ndarray) -> None:
        """Fill the cos/sin of the wheel angles (front rows) for steering ``delta`` (n,)."""
        P = self.P
        c, s = self._c, self._s
        t = np.tan(delta)
        hw = 0.5 * P.track
        dl, dr = P.wheelbase - hw * t, P.wheelbase + hw * t
        if P.float32_casts or np.any(dl <= 0) or np.any(dr <= 0):
            dfl, dfr = ackermann_angles(delta, P.wheelbase, P.track)
            if P.float32_casts:
                dfl, dfr = dfl.astype(np.float32).astype(float), dfr.astype(np.float32).astype(float)
            c[0], c[1], s[0], s[1] = np.cos(dfl), np.cos(dfr), np.sin(dfl), np.sin(dfr)
            return
        # trig-free: tan of each wheel angle q = L t / (L -/+ (W/2) t) > -inf, both denominators > 0
        for row, den in ((0, dl), (1, dr)):
            q = P.wheelbase * t / den
            ic = 1.0 / np.sqrt(1.0 + q * q)
            c[row] = ic
            s[row] = q * ic

    def forces(self, delta: np.ndarray, tau: np.ndarray) -> dict[str, np.ndarray]:
        """Accelerations and tire forces at the current state.

        Parameters
        ----------
        delta : ndarray (n,)
            Steering angle [rad].
        tau : ndarray broadcastable to (4, n)
            Wheel torques [N m] before the drive mask.

        Returns
        -------
        dict
            ``dv`` (3, n) world [m/s^2], ``dw`` (3, n) body [rad/s^2], ``domega`` (4, n) [rad/s^2],
            ``Fx``, ``Fy``, ``Fz``, ``kappa``, ``alpha``, ``v_t`` (4, n) and ``wheel_gain`` (4, n) =
            d(r F_x)/d(omega) [N m s] used by the implicit wheel update.
        """
        self._set_steering(np.broadcast_to(np.asarray(delta, dtype=float), (self.n,)))
        self._delta = None
        drive, brake = self.P.split_torque(np.broadcast_to(np.asarray(tau, dtype=float), (4, self.n)))
        f = self._forces(drive)
        # friction brakes: continuous-time -T_b sign(omega) (step() integrates them as a stick-slip clamp)
        f["domega"] = f["domega"] - brake * np.sign(self.omega) / self.P.wheel_inertia
        return f

    def _forces(self, tau_masked: np.ndarray) -> dict[str, np.ndarray]:
        P = self.P
        R = self.R
        R00, R01 = R[0, 0], R[0, 1]
        R10, R11 = R[1, 0], R[1, 1]
        R20, R21, R22 = R[2, 0], R[2, 1], R[2, 2]
        wx, wy, wz = self.w
        rx, ry, rz = self._RX, self._RY, float(self._rz[0, 0])  # all contacts at body z = -h
        c, s = self._c, self._s
        # contact-point velocity in the body frame: R^T v + w x r
        vbx, vby, vbz = np.einsum("kin,kn->in", R, self.v)
        ux = (vbx + wy * rz) - wz * ry
        uy = (vby - wx * rz) + wz * rx
        uz = vbz + (wx * ry - wy * rx)
        v_t = c * ux + s * uy
        v_n = c * uy - s * ux
        # normal force (spring-damper along world z) while in contact
        d = (P.z0 - self.p[2] - R22 * rz) - (R20 * rx + R21 * ry)
        ddot = -(R20 * ux + R21 * uy + R22 * uz)
        if self._arb:  # anti-roll bars: k_arb (d_L - d_R) onto the left, off the right wheel of each axle
            dp = np.maximum(d, 0.0)
            bf, br = P.arb_front * (dp[0] - dp[1]), P.arb_rear * (dp[2] - dp[3])
            bar = np.array([bf, -bf, br, -br])
            if P.contact_damping == "full":
                Fz = np.maximum((P.k_n * d + P.c_n * ddot) + bar, 0.0)
            else:
                Fz = np.maximum((P.k_n * d + P.c_n * np.maximum(ddot, 0.0)) + bar, 0.0)
        elif P.contact_damping == "full":
            Fz = np.maximum(P.k_n * d + P.c_n * ddot, 0.0)
        else:
            Fz = P.k_n * d + P.c_n * np.maximum(ddot, 0.0)
        Fz *= d > 0
        # slip
        avt = np.abs(v_t)
        if P.slip_denominator == "max":
            den = np.maximum(avt, P.eps_v)
            den_a = den
        else:
            den = np.sqrt(v_t * v_t + P.eps_v * P.eps_v)
            den_a = avt + P.eps_v
        kappa = (P.wheel_radius * self.omega - v_t) / den
        alpha = np.arctan(v_n / den_a)  # = atan2(v_n, den_a) since den_a > 0
        dk = 1.0 / den
        if P.slip_squash:
            th = np.tanh(0.5 * kappa)
            kappa = 2.0 * th
            dk = dk * (1.0 - th * th)
            alpha = 0.5 * np.tanh(alpha / 0.5)
        Fx = P.c_kappa * kappa
        if P.c_alpha_peak_load > 0:  # degressive C_alpha(F_z)
            x = Fz * self._inv_pf0
            Fy = -(self._ca_gain * x / (1.0 + x * x)) * alpha
        else:
            Fy = -P.c_alpha * alpha
        Fmax = np.maximum(self._mu_a - self._mu_b * Fz, 0.0) * Fz if P.mu_load > 0 else P.mu * Fz  # mu(F_z)
        mag2 = Fx * Fx + Fy * Fy
        if P.friction_limit == "clip":
            scale = np.minimum(Fmax / np.sqrt(mag2 + 1e-300), 1.0)
        else:
            scale = np.minimum(Fmax / np.sqrt(mag2 + (P.eps_force + Fmax * Fmax)), 1.0)
        Fx *= scale
        Fy *= scale
        # body-frame force per wheel f_i = (gx, gy, 0) + Fz R^T e_z and its moment sum r_i x f_i about the CG
        gx = Fx * c - Fy * s
        gy = Fx * s + Fy * c
        Gx, Gy, Fzs = gx.sum(axis=0), gy.sum(axis=0), Fz.sum(axis=0)
        Mx, My = (rx * Fz).sum(axis=0), (ry * Fz).sum(axis=0)  # first moments of the normal loads
        tx = R22 * My - rz * (Gy + Fzs * R21)
        ty = rz * (Gx + Fzs * R20) - R22 * Mx
        tz = (rx * gy - ry * gx).sum(axis=0) + R21 * Mx - R20 * My
        im = 1.0 / P.mass
        if P.lateral_force:  # external lateral force at the CG (after the moments: it has none)
            Gy = Gy + P.lateral_force
        dv = np.array([(R00 * Gx + R01 * Gy) * im, (R10 * Gx + R11 * Gy) * im,
                       (R20 * Gx + R21 * Gy + Fzs) * im - P.gravity])
        I0, I1, I2 = P.inertia
        dw = np.array([(tx - (I2 - I1) * wy * wz) / I0, (ty - (I0 - I2) * wz * wx) / I1,
                       (tz - (I1 - I0) * wx * wy) / I2])
        domega = (tau_masked - P.wheel_radius * Fx - P.wheel_damping * self.omega) / P.wheel_inertia
        gain = (P.wheel_radius * P.wheel_radius * P.c_kappa) * scale * dk
        return {"dv": dv, "dw": dw, "domega": domega, "Fx": Fx, "Fy": Fy, "Fz": Fz, "kappa": kappa,
                "alpha": alpha, "v_t": v_t, "wheel_gain": gain}

    def step(self, dt: float, delta, tau) -> None:
        """Advance all cars by ``dt`` [s] in equal substeps <= ``params.substep()`` (inputs held).

        Parameters
        ----------
        dt : float
        delta : float or ndarray (n,)
            Steering angle [rad].
        tau : array_like, broadcastable to (4, n)
            Wheel torques [N m] (FL, FR, RL, RR), masked by the drive layout.
        """
        delta = np.asarray(delta, dtype=float)
        tau = np.asarray(tau, dtype=float)
        if tau.size == 1:
            tau = np.full((4, 1), float(tau.reshape(-1)[0]))
        elif tau.shape[0] != 4 or tau.size not in (4, 4 * self.n):
            raise ModelError(f"Ackermann3DBatch.step: tau must broadcast to (4, {self.n}), got shape {tau.shape}")
        tau = tau.reshape(4, -1)
        if not (np.isfinite(delta.sum()) and np.isfinite(tau.sum())):  # a NaN/inf anywhere makes the sum non-finite
            raise ModelError("Ackermann3DBatch.step: inputs must be finite")
        delta = np.broadcast_to(delta, (self.n,))
        k = max(1, int(np.ceil(dt / self._h_max - 1e-9)))
        h = dt / k
        if self._delta is None or not np.array_equal(delta, self._delta):
            self._set_steering(delta)
            self._delta = delta.copy()
        tau_m, brake = self.P.split_torque(tau)
        if self._numba is not None:
            self._substeps_numba(tau_m, brake, k, h, *self._numba)
        else:
            self._substeps_numpy(tau_m, brake, k, h)
        self._steps += k
        if self._steps >= 64:  # exp([w h]x) is orthogonal to rounding; re-orthonormalize every 64 substeps
            self.R = orthonormalize(self.R)
            self._steps = 0

    def _substeps_numpy(self, tau_m: np.ndarray, brake: np.ndarray, k: int, h: float) -> None:
        """``k`` substeps of ``h`` [s] in numpy; ``tau_m``, ``brake`` (4, n) or (4, 1) drive and brake torques [N m]."""
        P = self.P
        implicit = P.wheel_update == "implicit"
        Iw, bw, r = P.wheel_inertia, P.wheel_damping, P.wheel_radius
        has_brake = bool(np.any(brake > 0.0))
        c, s = self._c, self._s
        k1 = h / (r * Iw)
        for _ in range(k):
            f = self._forces(tau_m)
            dv = f["dv"]
            if implicit:  # linearly implicit in omega, with the chassis' velocity change (body frame)
                g = f["wheel_gain"]
                abx, aby = np.einsum("kin,kn->in", self.R[:, :2], dv)
                num = c * abx
                num += s * aby
                num *= k1 * g
                num += f["domega"]
                den = 1.0 + h * (g + bw) / Iw
                num /= den
                num *= h
                self.omega += num
                if has_brake:
                    self.omega = _brake_clamp(self.omega, h * brake / (Iw * den))
            else:
                self.omega += h * f["domega"]
                if has_brake:
                    self.omega = _brake_clamp(self.omega, h * brake / Iw)
            self.v += h * dv
            self.w += h * f["dw"]
            self.p += h * self.v
            self.R = np.einsum("ikn,kjn->ijn", self.R, _exp_small(h * self.w, self._E))

    def _substeps_numba(self, tau_m: np.ndarray, brake: np.ndarray, k: int, h: float, prm: np.ndarray,
                        flg: np.ndarray) -> None:
        """The same ``k`` substeps in the compiled kernel (:func:`batch_numba.step_batch`; ``prm``, ``flg`` from
        :func:`batch_numba.pack_constants`), in place."""
        for name in ("p", "R", "v", "w", "omega"):  # the kernel updates float64 C-contiguous arrays in place
            a = getattr(self, name)
            if a.dtype != np.float64 or not a.flags.c_contiguous or not a.flags.writeable:
                setattr(self, name, np.array(a, dtype=np.float64, order="C"))
        batch_numba.step_batch(self.p, self.R, self.v, self.w, self.omega, self._c, self._s, tau_m, brake, k, h,
                               prm, flg)


def _brake_clamp(om: np.ndarray, lim: np.ndarray) -> np.ndarray:
    """Stick-slip friction brake: reduce |omega| by ``lim`` >= 0, stopping at 0 instead of reversing."""
    return np.where(om > lim, om - lim, np.where(om < -lim, om + lim, 0.0))


def _exp_small(phi: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """so3_exp for (3, n) rotation vectors, with the Taylor series when every angle is < 0.01 rad.

    ``out`` (3, 3, n) is filled and returned when given (no allocation of the result).
    """
    x, y, z = phi
    xx, yy, zz = x * x, y * y, z * z
    th2 = xx + yy + zz
    if float(th2.max()) >= 1e-4:
        return so3_exp(phi)
    E = np.empty((3, 3, phi.shape[1])) if out is None else out
    a = 1.0 - th2 * (1.0 / 6.0 - th2 / 120.0)  # sin(t)/t, error < t^6/5040 ~ 2e-16
    b = 0.5 - th2 * (1.0 / 24.0 - th2 / 720.0)  # (1 - cos t)/t^2
    ax, ay, az = a * x, a * y, a * z
    bx = b * x
    bxy, bxz, byz = bx * y, bx * z, b * y * z
    np.subtract(1.0, b * (yy + zz), out=E[0, 0])
    np.subtract(bxy, az, out=E[0, 1])
    np.add(bxz, ay, out=E[0, 2])
    np.add(bxy, az, out=E[1, 0])
    np.subtract(1.0, b * (xx + zz), out=E[1, 1])
    np.subtract(byz, ax, out=E[1, 2])
    np.subtract(bxz, ay, out=E[2, 0])
    np.add(byz, ax, out=E[2, 1])
    np.subtract(1.0, b * (xx + yy), out=E[2, 2])
    return E
