"""Lean scalar (pure-Python float) step of one 3D Ackermann car.

numpy has ~1 us overhead per call, which dominates a 4-wheel model; this module evaluates the
same equations as :meth:`Ackermann3DBatch.forces <mpc_tracking.models.plants.ackermann3d.batch.Ackermann3DBatch.forces>`
with :mod:`math` on a flat list of 22 floats, so one car steps from Python fast (a test
cross-checks the two). The state list is
``[px, py, pz, R00, R01, R02, R10, R11, R12, R20, R21, R22, vx, vy, vz, wx, wy, wz, oFL, oFR, oRL, oRR]``.
"""
from __future__ import annotations

import math

import numpy as np

from mpc_tracking.models.plants.ackermann3d.params import Ackermann3DParams

__all__ = ["ScalarConstants", "steering", "contact", "accelerations", "substep", "orthonormalize_list", "spin_sign"]


class ScalarConstants:
    """Parameters unpacked into plain floats for :func:`substep`."""

    def __init__(self, params: Ackermann3DParams) -> None:
        P = params.numeric()
        self.P = P
        self.pts = [tuple(float(a) for a in row) for row in P.contact_points()]
        self.mask = [float(a) for a in P.drive_mask]
        self.brake_all = P.brakes == "all"
        self.f32 = bool(P.float32_casts)
        self.full_damping = P.contact_damping == "full"
        self.max_den = P.slip_denominator == "max"
        self.squash = bool(P.slip_squash)
        self.clip = P.friction_limit == "clip"
        self.implicit = P.wheel_update == "implicit"
        self.friction_brakes = P.brake_model == "friction"
        # tire load sensitivity (off: the constant c_alpha, mu code path, bit for bit)
        f0 = P.nominal_load
        self.load_c = P.c_alpha_peak_load > 0
        self.load_mu = P.mu_load > 0
        self.inv_pf0 = 1.0 / (P.c_alpha_peak_load * f0) if self.load_c else 0.0
        x0 = 1.0 / P.c_alpha_peak_load if self.load_c else 1.0
        self.ca_gain = P.c_alpha * (1.0 + x0 * x0) / x0  # C(F_z) = ca_gain x / (1 + x^2), x = F_z / (p F_z0)
        self.mu_a, self.mu_b = P.mu * (1.0 + P.mu_load), P.mu * P.mu_load / f0  # mu(F_z) = max(0, mu_a - mu_b F_z)
        self.arb = (P.arb_front, P.arb_front, P.arb_rear, P.arb_rear)
        self.has_arb = P.arb_front > 0 or P.arb_rear > 0
        self.f_lat = P.lateral_force  # external body-y force at the CG [N] (0: the code path is unchanged)
        I0, I1, I2 = P.inertia
        self.consts = (P.wheel_radius, P.eps_v, P.k_n, P.c_n, P.mu, P.c_kappa, P.c_alpha, P.z0, P.eps_force,
                       P.wheel_inertia, P.wheel_damping, 1.0 / P.mass, P.gravity, I0, I1, I2)

    def set_friction(self, mu: float) -> None:
        """Use the road friction ``mu`` [-] from now on (a scheduled or patch value, see
        :meth:`Ackermann3DParams.road_friction`); the load-sensitivity law scales with it. Setting the
        preset's own ``mu`` gives the constants of the constructor bit for bit."""
        P = self.P
        if self.f32:
            mu = float(np.float32(mu))
        consts = list(self.consts)
        consts[4] = mu
        self.consts = tuple(consts)
        self.mu_a, self.mu_b = mu * (1.0 + P.mu_load), mu * P.mu_load / P.nominal_load

    def split(self, tau) -> tuple[list, list]:
        """(drive, brake) torques per wheel [N m] from the four requests (see ``Ackermann3DParams.split_torque``)."""
        mask = self.mask
        t0, t1, t2, t3 = tau
        if min(t0, t1, t2, t3) >= 0.0:  # no brake request (the common case, same result in every mode)
            return [mask[0] * t0, mask[1] * t1, mask[2] * t2, mask[3] * t3], [0.0, 0.0, 0.0, 0.0]
        if not self.friction_brakes:
            return [t if (self.brake_all and t < 0.0) else m * t for t, m in zip(tau, mask, strict=True)], [0.0] * 4
        drive = [m * t if t > 0.0 else 0.0 for t, m in zip(tau, mask, strict=True)]
        brake = [(-t if self.brake_all else -m * t) if t < 0.0 else 0.0 for t, m in zip(tau, mask, strict=True)]
        return drive, brake


def steering(delta: float, K: ScalarConstants) -> tuple:
    """((cos, sin) of the four wheel angles) for the bicycle steering angle ``delta`` [rad].

    Ackermann: ``tan(delta_FL/FR) = L tan d / (L -/+ (W/2) tan d)``; the rear wheels do not steer.
    """
    P = K.P
    t = math.tan(delta)
    hw = 0.5 * P.track
    a = math.atan2(P.wheelbase * t, P.wheelbase - hw * t)
    b = math.atan2(P.wheelbase * t, P.wheelbase + hw * t)
    if K.f32:
        a, b = float(np.float32(a)), float(np.float32(b))
    return ((math.cos(a), math.sin(a)), (math.cos(b), math.sin(b)), (1.0, 0.0), (1.0, 0.0))


def spin_sign(om: float) -> float:
    """sign(omega) (0 at 0): the direction a friction brake opposes."""
    return 1.0 if om > 0.0 else (-1.0 if om < 0.0 else 0.0)


def contact(st: list, K: ScalarConstants) -> tuple[list, list]:
    """Per wheel: the contact point's velocity ``(u_x, u_y)`` in the body frame [m/s] and the normal
    force ``F_z`` [N] (spring-damper, anti-roll bars, never pulling) at state ``st``.

    Returns
    -------
    kin : list of 4 (u_x, u_y)
    loads : list of 4 floats
    """
    kn, cn, z0 = K.consts[2], K.consts[3], K.consts[7]
    pz = st[2]
    R00, R01, R02, R10, R11, R12, R20, R21, R22 = st[3:12]
    v0, v1, v2, wx, wy, wz = st[12:18]
    vbx = R00 * v0 + R10 * v1 + R20 * v2
    vby = R01 * v0 + R11 * v1 + R21 * v2
    vbz = R02 * v0 + R12 * v1 + R22 * v2
    kin = []
    depth = []
    normal = []  # vertical velocity of the contact point (world z) [m/s]
    for rx, ry, rz in K.pts:
        ux = vbx + (wy * rz - wz * ry)
        uy = vby + (wz * rx - wx * rz)
        uz = vbz + (wx * ry - wy * rx)
        kin.append((ux, uy))
        depth.append((z0 - pz) - (R20 * rx + R21 * ry + R22 * rz))
        normal.append(R20 * ux + R21 * uy + R22 * uz)
    has_arb = K.has_arb
    if has_arb:  # anti-roll bars: k_arb (d_L - d_R) onto the left, off the right wheel of each axle
        dp = [d if d > 0.0 else 0.0 for d in depth]
        bf, br = K.arb[0] * (dp[0] - dp[1]), K.arb[2] * (dp[2] - dp[3])
        bar = (bf, -bf, br, -br)
    full = K.full_damping
    loads = [0.0, 0.0, 0.0, 0.0]
    for i in range(4):
        d = depth[i]
        if d > 0.0:
            ddot = -normal[i]
            if full:
                Fz = kn * d + cn * ddot
                if has_arb:
                    Fz += bar[i]
                if Fz < 0.0:
                    Fz = 0.0
            else:
                Fz = kn * d + (cn * ddot if ddot > 0.0 else 0.0)
                if has_arb:
                    Fz += bar[i]
                    if Fz < 0.0:
                        Fz = 0.0
            loads[i] = Fz
    return kin, loads


def accelerations(st: list, cs: tuple, tau, K: ScalarConstants, forces: list | None = None,
                  brake=None):
    """Accelerations at state ``st`` with wheel directions ``cs`` (from :func:`steering`) and drive torques ``tau``.

    ``tau`` are the torques that reach the wheels (``K.split(...)[0]``). Friction brakes are applied by
    :func:`substep` as a stick-slip clamp; ``brake`` (4 magnitudes [N m]), when given, adds their
    continuous-time effect ``-T_b sign(omega)`` to ``dom`` (for :meth:`Ackermann3D.xdot`).

    Returns
    -------
    dv : tuple (3,)
        World CG acceleration [m/s^2].
    dw : tuple (3,)
        Body angular acceleration [rad/s^2].
    dom : list (4,)
        Wheel spin accelerations [rad/s^2].
    gains : list (4,)
        d(r F_x)/d(omega) [N m s] per wheel, for the implicit wheel update.
    forces : list, optional
        If given, (F_x, F_y, F_z) per wheel are appended to it.
    """
    r, eps, _, _, mu, ck, ca, _, epsf, Iw, bw, im, g, I0, I1, I2 = K.consts  # contact() uses k_n, c_n, z0
    R00, R01, _, R10, R11, _, R20, R21, R22 = st[3:12]
    wx, wy, wz = st[15:18]
    max_den, squash, clip = K.max_den, K.squash, K.clip
    Gx = Gy = Fzs = tx = ty = tz = 0.0
    dom = [0.0, 0.0, 0.0, 0.0]
    gains = [0.0, 0.0, 0.0, 0.0]
    kin, loads = contact(st, K)
    for i in range(4):
        rx, ry, rz = K.pts[i]
        c, s = cs[i]
        ux, uy = kin[i]
        Fz = loads[i]
        vt = c * ux + s * uy
        vn = c * uy - s * ux
        avt = vt if vt >= 0.0 else -vt
        if max_den:
            den = avt if avt > eps else eps
            den_a = den
        else:
            den = math.sqrt(vt * vt + eps * eps)
            den_a = avt + eps
        om = st[18 + i]
        kappa = (r * om - vt) / den
        alpha = math.atan(vn / den_a)  # = atan2(vn, den_a), den_a > 0
        dk = 1.0 / den
        if squash:
            th = math.tanh(0.5 * kappa)
            kappa = 2.0 * th
            dk *= 1.0 - th * th
            alpha = 0.5 * math.tanh(alpha / 0.5)
        Fx = ck * kappa
        if K.load_c:  # degressive C_alpha(F_z)
            x = Fz * K.inv_pf0
            Fy = -(K.ca_gain * x / (1.0 + x * x)) * alpha
        else:
            Fy = -ca * alpha
        if K.load_mu:  # mu(F_z) = max(0, mu (1 - k (F_z - F_z0) / F_z0))
            mu_i = K.mu_a - K.mu_b * Fz
            Fmax = (mu_i if mu_i > 0.0 else 0.0) * Fz
        else:
            Fmax = mu * Fz
        mag2 = Fx * Fx + Fy * Fy
        if clip:
            if mag2 > Fmax * Fmax:
                scale = Fmax / math.sqrt(mag2)
                Fx *= scale
                Fy *= scale
                dk *= scale
        else:
            scale = Fmax / math.sqrt(mag2 + epsf + Fmax * Fmax)
            if scale < 1.0:
                Fx *= scale
                Fy *= scale
                dk *= scale
        if forces is not None:
            forces.append((Fx, Fy, Fz))
        gx = Fx * c - Fy * s
        gy = Fx * s + Fy * c
        fbx = gx + Fz * R20
        fby = gy + Fz * R21
        fbz = Fz * R22
        tx += ry * fbz - rz * fby
        ty += rz * fbx - rx * fbz
        tz += rx * fby - ry * fbx
        Gx += gx
        Gy += gy
        Fzs += Fz
        t_i = tau[i] if brake is None else tau[i] - brake[i] * spin_sign(om)
        dom[i] = (t_i - r * Fx - bw * om) / Iw
        gains[i] = r * r * ck * dk
    if K.f_lat:  # external lateral force at the CG: no moment about it
        Gy += K.f_lat
    dv = ((R00 * Gx + R01 * Gy) * im, (R10 * Gx + R11 * Gy) * im, (R20 * Gx + R21 * Gy + Fzs) * im - g)
    dw = ((tx - (I2 - I1) * wy * wz) / I0, (ty - (I0 - I2) * wz * wx) / I1, (tz - (I1 - I0) * wx * wy) / I2)
    return dv, dw, dom, gains


def substep(st: list, cs: tuple, tau, h: float, K: ScalarConstants, brake=None) -> None:
    """One semi-implicit Euler substep of length ``h`` [s], in place on the state list ``st``.

    ``tau`` are the drive torques and ``brake`` (optional) the friction-brake magnitudes [N m] per wheel
    (:meth:`ScalarConstants.split`). The brake is a stick-slip clamp after the free wheel update: it
    removes at most ``h T_b / (I_w D)`` of wheel speed (D the implicit update's denominator, 1 if
    explicit) and stops the wheel at 0 instead of reversing it -- the implicit (exact Coulomb) solution.
    """
    dv, dw, dom, gains = accelerations(st, cs, tau, K)
    r, Iw, bw = K.consts[0], K.consts[9], K.consts[10]
    R00, R01, R02, R10, R11, R12, R20, R21, R22 = st[3:12]
    if K.implicit:
        # linearly implicit in omega, with the chassis' velocity change over the step (body frame)
        abx = R00 * dv[0] + R10 * dv[1] + R20 * dv[2]
        aby = R01 * dv[0] + R11 * dv[1] + R21 * dv[2]
        for i in range(4):
            c, s = cs[i]
            g = gains[i]
            den = 1.0 + h * (g + bw) / Iw
            om = st[18 + i] + h * (dom[i] + g / (r * Iw) * h * (c * abx + s * aby)) / den
            if brake is not None and brake[i] > 0.0:
                lim = h * brake[i] / (Iw * den)
                om = om - lim if om > lim else (om + lim if om < -lim else 0.0)
            st[18 + i] = om
    else:
        for i in range(4):
            om = st[18 + i] + h * dom[i]
            if brake is not None and brake[i] > 0.0:
                lim = h * brake[i] / Iw
                om = om - lim if om > lim else (om + lim if om < -lim else 0.0)
            st[18 + i] = om
    vx = st[12] + h * dv[0]
    vy = st[13] + h * dv[1]
    vz = st[14] + h * dv[2]
    x = st[15] + h * dw[0]
    y = st[16] + h * dw[1]
    z = st[17] + h * dw[2]
    st[12:18] = (vx, vy, vz, x, y, z)
    st[0] += h * vx
    st[1] += h * vy
    st[2] += h * vz
    # R <- R exp([w h]x), Rodrigues
    x, y, z = x * h, y * h, z * h
    th2 = x * x + y * y + z * z
    if th2 < 1e-4:  # Taylor series, error < th^6 / 5040 ~ 2e-16
        a = 1.0 - th2 * (1.0 / 6.0 - th2 / 120.0)
        b = 0.5 - th2 * (1.0 / 24.0 - th2 / 720.0)
    else:
        th = math.sqrt(th2)
        a = math.sin(th) / th
        b = (1.0 - math.cos(th)) / th2
    xx, yy, zz = x * x, y * y, z * z
    bxy, bxz, byz = b * x * y, b * x * z, b * y * z
    ax, ay, az = a * x, a * y, a * z
    E00, E01, E02 = 1.0 - b * (yy + zz), bxy - az, bxz + ay
    E10, E11, E12 = bxy + az, 1.0 - b * (xx + zz), byz - ax
    E20, E21, E22 = bxz - ay, byz + ax, 1.0 - b * (xx + yy)
    st[3:12] = (
        R00 * E00 + R01 * E10 + R02 * E20, R00 * E01 + R01 * E11 + R02 * E21, R00 * E02 + R01 * E12 + R02 * E22,
        R10 * E00 + R11 * E10 + R12 * E20, R10 * E01 + R11 * E11 + R12 * E21, R10 * E02 + R11 * E12 + R12 * E22,
        R20 * E00 + R21 * E10 + R22 * E20, R20 * E01 + R21 * E11 + R22 * E21, R20 * E02 + R21 * E12 + R22 * E22,
    )


def orthonormalize_list(st: list) -> None:
    """Gram-Schmidt on the rows of the rotation stored in ``st[3:12]`` (in place)."""
    a0, a1, a2, b0, b1, b2 = st[3:9]
    n = 1.0 / math.sqrt(a0 * a0 + a1 * a1 + a2 * a2)
    a0, a1, a2 = a0 * n, a1 * n, a2 * n
    d = a0 * b0 + a1 * b1 + a2 * b2
    b0, b1, b2 = b0 - d * a0, b1 - d * a1, b2 - d * a2
    n = 1.0 / math.sqrt(b0 * b0 + b1 * b1 + b2 * b2)
    b0, b1, b2 = b0 * n, b1 * n, b2 * n
    st[3:12] = (a0, a1, a2, b0, b1, b2, a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0)
