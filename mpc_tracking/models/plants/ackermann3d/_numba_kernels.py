"""numba kernels of the 3D Ackermann car (imported lazily by :mod:`.batch_numba`; importing this module needs numba).

The equations are those of :meth:`Ackermann3DBatch._forces
<mpc_tracking.models.plants.ackermann3d.batch.Ackermann3DBatch._forces>` and :meth:`Ackermann3DBatch.step
<mpc_tracking.models.plants.ackermann3d.batch.Ackermann3DBatch.step>`, term by term and mostly in the same order of
floating-point operations, written one car at a time: a car's state stays in registers for all the substeps of a
step. Deliberate differences, all at rounding level (a few 1e-16 relative per substep):

* divisions by the inertias and by the slip denominator are multiplications by their reciprocals (1 ulp);
* the friction-circle scale is exactly 1 without its square root when |F|^2 < 0.999999 (mu F_z)^2;
* ``exp([w h]x)`` takes the Taylor series per car when that car's rotation angle is small; the numpy batch decides
  for all cars at once (both are the exponential map to ~2e-16; the scalar path decides per car too);
* ``tanh`` and ``arctan`` come from libm, numpy's from its own vectorized code (last-bit differences);
* the re-orthonormalization of ``R`` stays outside the kernel (the caller's, as in the numpy batch), except in the
  single-car entry point, which re-orthonormalizes after every step as the scalar path does.

Compiler options of every kernel: ``cache=True, nogil=True, error_model="numpy", fastmath=False`` (IEEE arithmetic;
x / 0 gives inf or nan as in numpy, no exception). Every constant comes in the float array ``prm`` and every option
in the integer array ``flg`` (:data:`~mpc_tracking.models.plants.ackermann3d.batch_numba.PRM_NAMES`, ``FLG_NAMES``), so
one compiled kernel serves every parameter set and the on-disk cache stays valid.
"""
from __future__ import annotations

import math

import numba as nb
import numpy as np

# Positions in prm / flg. Literals on purpose: numba's on-disk cache is keyed on this file only, so a change of the
# layout must edit this file; batch_numba.load_kernels checks LAYOUT against PRM_NAMES / FLG_NAMES.
_R, _EPS, _KN, _CN, _MU, _CK, _CA, _Z0, _EPSF, _IW, _BW, _MASS, _G = range(13)
_I0, _I1, _I2, _INV_PF0, _CA_GAIN, _MU_A, _MU_B, _ARB_F, _ARB_R, _FLAT, _RZ = range(13, 24)
_RX, _RY = 24, 28  # four wheels each, FL FR RL RR
_FULL, _MAXDEN, _SQUASH, _CLIP, _IMPLICIT, _ARB, _LOADC, _LOADMU = range(8)
LAYOUT = {
    "prm": {"wheel_radius": _R, "eps_v": _EPS, "k_n": _KN, "c_n": _CN, "mu": _MU, "c_kappa": _CK, "c_alpha": _CA,
            "z0": _Z0, "eps_force": _EPSF, "wheel_inertia": _IW, "wheel_damping": _BW, "mass": _MASS, "gravity": _G,
            "I_xx": _I0, "I_yy": _I1, "I_zz": _I2, "inv_pf0": _INV_PF0, "ca_gain": _CA_GAIN, "mu_a": _MU_A,
            "mu_b": _MU_B, "arb_front": _ARB_F, "arb_rear": _ARB_R, "lateral_force": _FLAT, "contact_z": _RZ,
            **{f"r{a}_{w}": base + i for a, base in (("x", _RX), ("y", _RY))
               for i, w in enumerate(("FL", "FR", "RL", "RR"))}},
    "flg": {"full_damping": _FULL, "max_denominator": _MAXDEN, "slip_squash": _SQUASH, "clip": _CLIP,
            "implicit_wheels": _IMPLICIT, "anti_roll_bars": _ARB, "load_c_alpha": _LOADC, "load_mu": _LOADMU},
}



@nb.njit(cache=True, nogil=True, error_model="numpy", fastmath=False)
def _advance(p, R, v, w, om, c, s, tau, brake, nsub, h, prm, flg):  # pragma: no cover - compiled
    """``nsub`` substeps of length ``h`` [s] of every car (column j of the state arrays), in place.

    ``c``, ``s`` (4, n) wheel directions; ``tau``, ``brake`` (4, n) or (4, 1) drive and brake torques [N m].
    The constants are unpacked once, then each car's state stays in registers for its ``nsub`` substeps.
    """
    r, eps, kn, cn, mu, ck, ca = prm[_R], prm[_EPS], prm[_KN], prm[_CN], prm[_MU], prm[_CK], prm[_CA]
    z0, epsf, Iw, bw, g = prm[_Z0], prm[_EPSF], prm[_IW], prm[_BW], prm[_G]
    I0, I1, I2 = prm[_I0], prm[_I1], prm[_I2]
    inv_pf0, ca_gain, mu_a, mu_b = prm[_INV_PF0], prm[_CA_GAIN], prm[_MU_A], prm[_MU_B]
    arb_f, arb_r, f_lat, rz = prm[_ARB_F], prm[_ARB_R], prm[_FLAT], prm[_RZ]
    full, max_den, squash, clip = flg[_FULL] != 0, flg[_MAXDEN] != 0, flg[_SQUASH] != 0, flg[_CLIP] != 0
    implicit, has_arb, load_c, load_mu = flg[_IMPLICIT] != 0, flg[_ARB] != 0, flg[_LOADC] != 0, flg[_LOADMU] != 0
    im = 1.0 / prm[_MASS]
    k1 = h / (r * Iw)
    rrck = r * r * ck
    dI0, dI1, dI2 = I2 - I1, I0 - I2, I1 - I0
    iI0, iI1, iI2, iIw = 1.0 / I0, 1.0 / I1, 1.0 / I2, 1.0 / Iw  # x / I -> x * (1 / I): within 1 ulp
    scratch = np.empty(28)
    d = scratch[0:4]
    ux = scratch[4:8]
    uy = scratch[8:12]
    uz = scratch[12:16]
    fx = scratch[16:20]
    gain = scratch[20:24]
    o = scratch[24:28]

    per_car = tau.shape[1] > 1
    for j in range(p.shape[1]):
        jt = j if per_car else 0
        px, py, pz = p[0, j], p[1, j], p[2, j]
        R00, R01, R02 = R[0, 0, j], R[0, 1, j], R[0, 2, j]
        R10, R11, R12 = R[1, 0, j], R[1, 1, j], R[1, 2, j]
        R20, R21, R22 = R[2, 0, j], R[2, 1, j], R[2, 2, j]
        v0, v1, v2 = v[0, j], v[1, j], v[2, j]
        wx, wy, wz = w[0, j], w[1, j], w[2, j]
        for i in range(4):
            o[i] = om[i, j]
        for _ in range(nsub):
            # contact-point velocities in the body frame (R^T v + w x r) and penetrations
            vbx = R00 * v0 + R10 * v1 + R20 * v2
            vby = R01 * v0 + R11 * v1 + R21 * v2
            vbz = R02 * v0 + R12 * v1 + R22 * v2
            zc = (z0 - pz) - R22 * rz
            for i in range(4):
                rx, ry = prm[_RX + i], prm[_RY + i]
                ux[i] = (vbx + wy * rz) - wz * ry
                uy[i] = (vby - wx * rz) + wz * rx
                uz[i] = vbz + (wx * ry - wy * rx)
                d[i] = zc - (R20 * rx + R21 * ry)
            bf = br = 0.0
            if has_arb:  # anti-roll bars on the compressions of the wheels in contact
                dp0 = d[0] if not d[0] < 0.0 else 0.0
                dp1 = d[1] if not d[1] < 0.0 else 0.0
                dp2 = d[2] if not d[2] < 0.0 else 0.0
                dp3 = d[3] if not d[3] < 0.0 else 0.0
                bf, br = arb_f * (dp0 - dp1), arb_r * (dp2 - dp3)
            Gx = Gy = Fzs = Mx = My = tzs = 0.0
            for i in range(4):
                rx, ry = prm[_RX + i], prm[_RY + i]
                ci, si = c[i, j], s[i, j]
                uxi, uyi, uzi, di = ux[i], uy[i], uz[i], d[i]
                v_t = ci * uxi + si * uyi
                v_n = ci * uyi - si * uxi
                # normal force: spring-damper along world z while in contact
                ddot = -(R20 * uxi + R21 * uyi + R22 * uzi)
                if not full and ddot < 0.0:
                    ddot = 0.0
                Fz = kn * di + cn * ddot
                if has_arb:
                    Fz = Fz + (bf if i == 0 else (-bf if i == 1 else (br if i == 2 else -br)))
                if (has_arb or full) and Fz < 0.0:
                    Fz = 0.0
                Fz = Fz * (1.0 if di > 0.0 else 0.0)
                # slip
                avt = abs(v_t)
                if max_den:
                    den = avt if not avt < eps else eps
                    den_a = den
                else:
                    den = math.sqrt(v_t * v_t + eps * eps)
                    den_a = avt + eps
                dk = 1.0 / den
                kappa = (r * o[i] - v_t) * dk  # numpy: / den (within 1 ulp)
                alpha = np.arctan(v_n * dk if max_den else v_n / den_a)
                if squash:
                    th = np.tanh(0.5 * kappa)
                    kappa = 2.0 * th
                    dk = dk * (1.0 - th * th)
                    alpha = 0.5 * np.tanh(alpha / 0.5)
                Fx = ck * kappa
                if load_c:  # degressive C_alpha(F_z)
                    x = Fz * inv_pf0
                    Fy = -(ca_gain * x / (1.0 + x * x)) * alpha
                else:
                    Fy = -ca * alpha
                if load_mu:  # mu(F_z)
                    mu_i = mu_a - mu_b * Fz
                    Fmax = (mu_i if not mu_i < 0.0 else 0.0) * Fz
                else:
                    Fmax = mu * Fz
                mag2 = Fx * Fx + Fy * Fy
                if clip:
                    # inside the circle by more than rounding the numpy expression min(Fmax / sqrt(...), 1) is 1 exactly
                    scale = 1.0 if mag2 < 0.999999 * (Fmax * Fmax) else Fmax / math.sqrt(mag2 + 1e-300)
                else:
                    scale = Fmax / math.sqrt(mag2 + (epsf + Fmax * Fmax))
                if scale > 1.0:
                    scale = 1.0
                Fx = Fx * scale
                Fy = Fy * scale
                gx = Fx * ci - Fy * si
                gy = Fx * si + Fy * ci
                Gx += gx
                Gy += gy
                Fzs += Fz
                Mx += rx * Fz
                My += ry * Fz
                tzs += rx * gy - ry * gx
                fx[i] = Fx
                gain[i] = rrck * scale * dk
            tx = R22 * My - rz * (Gy + Fzs * R21)
            ty = rz * (Gx + Fzs * R20) - R22 * Mx
            tz = tzs + R21 * Mx - R20 * My
            if f_lat != 0.0:
                Gy = Gy + f_lat
            dv0 = (R00 * Gx + R01 * Gy) * im
            dv1 = (R10 * Gx + R11 * Gy) * im
            dv2 = (R20 * Gx + R21 * Gy + Fzs) * im - g
            dw0 = (tx - dI0 * wy * wz) * iI0
            dw1 = (ty - dI1 * wz * wx) * iI1
            dw2 = (tz - dI2 * wx * wy) * iI2
            # wheel spin: linearly implicit in the slip stiffness (with the chassis' velocity change) or explicit
            abx = R00 * dv0 + R10 * dv1 + R20 * dv2
            aby = R01 * dv0 + R11 * dv1 + R21 * dv2
            for i in range(4):
                omi = o[i]
                domega = (tau[i, jt] - r * fx[i] - bw * omi) * iIw
                bi = brake[i, jt]
                if implicit:
                    gi = gain[i]
                    den = 1.0 + h * (gi + bw) * iIw
                    omi = omi + (((c[i, j] * abx + s[i, j] * aby) * (k1 * gi) + domega) / den) * h
                    lim = h * bi / (Iw * den) if bi > 0.0 else 0.0
                else:
                    omi = omi + h * domega
                    lim = h * bi * iIw
                if bi > 0.0:  # stick-slip friction brake: |omega| shrinks by lim, stops at 0
                    omi = omi - lim if omi > lim else (omi + lim if omi < -lim else 0.0)
                o[i] = omi
            v0 += h * dv0
            v1 += h * dv1
            v2 += h * dv2
            wx += h * dw0
            wy += h * dw1
            wz += h * dw2
            px += h * v0
            py += h * v1
            pz += h * v2
            # R <- R exp([w h]x)
            x, y, z = h * wx, h * wy, h * wz
            xx, yy, zz = x * x, y * y, z * z
            th2 = xx + yy + zz
            if th2 < 1e-4:  # Taylor series (error < th^6 / 5040 ~ 2e-16), as _exp_small
                a = 1.0 - th2 * (1.0 / 6.0 - th2 / 120.0)
                b = 0.5 - th2 * (1.0 / 24.0 - th2 / 720.0)
                ax, ay, az = a * x, a * y, a * z
                bx = b * x
                bxy, bxz, byz = bx * y, bx * z, b * y * z
                E00, E01, E02 = 1.0 - b * (yy + zz), bxy - az, bxz + ay
                E10, E11, E12 = bxy + az, 1.0 - b * (xx + zz), byz - ax
                E20, E21, E22 = bxz - ay, byz + ax, 1.0 - b * (xx + yy)
            else:  # Rodrigues, as integrators.so3_exp
                th = math.sqrt(th2)
                a = math.sin(th) / th
                b = (1.0 - math.cos(th)) / (th * th)
                E00, E01, E02 = 1.0 - b * (yy + zz), -a * z + b * x * y, a * y + b * x * z
                E10, E11, E12 = a * z + b * x * y, 1.0 - b * (xx + zz), -a * x + b * y * z
                E20, E21, E22 = -a * y + b * x * z, a * x + b * y * z, 1.0 - b * (xx + yy)
            R00, R01, R02 = (R00 * E00 + R01 * E10 + R02 * E20, R00 * E01 + R01 * E11 + R02 * E21,
                             R00 * E02 + R01 * E12 + R02 * E22)
            R10, R11, R12 = (R10 * E00 + R11 * E10 + R12 * E20, R10 * E01 + R11 * E11 + R12 * E21,
                             R10 * E02 + R11 * E12 + R12 * E22)
            R20, R21, R22 = (R20 * E00 + R21 * E10 + R22 * E20, R20 * E01 + R21 * E11 + R22 * E21,
                             R20 * E02 + R21 * E12 + R22 * E22)
        p[0, j], p[1, j], p[2, j] = px, py, pz
        R[0, 0, j], R[0, 1, j], R[0, 2, j] = R00, R01, R02
        R[1, 0, j], R[1, 1, j], R[1, 2, j] = R10, R11, R12
        R[2, 0, j], R[2, 1, j], R[2, 2, j] = R20, R21, R22
        v[0, j], v[1, j], v[2, j] = v0, v1, v2
        w[0, j], w[1, j], w[2, j] = wx, wy, wz
        for i in range(4):
            om[i, j] = o[i]


_A1 = nb.float64[:, ::1]
_A2 = nb.float64[:, :, ::1]
_V = nb.float64[::1]


@nb.njit(nb.void(_A1, _A2, _A1, _A1, _A1, _A1, _A1, _A1, _A1, nb.int64, nb.float64, _V, nb.int64[::1]),
          cache=True, nogil=True, error_model="numpy", fastmath=False)
def step_batch(p, R, v, w, om, c, s, tau, brake, nsub, h, prm, flg):  # pragma: no cover - compiled
    """``nsub`` substeps of length ``h`` [s] of every car, in place (see :func:`mpc_tracking.models.plants.ackermann3d.
    batch_numba.step_batch` for the shapes)."""
    _advance(p, R, v, w, om, c, s, tau, brake, nsub, h, prm, flg)


@nb.njit(nb.void(_V, nb.int64, nb.float64, _V, nb.int64[::1]), cache=True, nogil=True, error_model="numpy",
          fastmath=False)
def step_single(buf, nsub, h, prm, flg):  # pragma: no cover - compiled
    """``nsub`` substeps of one car, then Gram-Schmidt on the rows of ``R`` as
    :func:`~mpc_tracking.models.plants.ackermann3d.scalar.orthonormalize_list`, in place on ``buf`` (38,): the state
    (22,) in the flat layout of :class:`~mpc_tracking.models.plants.ackermann3d.car.Ackermann3D`, then cos and sin of
    the four wheel angles, then the drive and the brake torques [N m] of the four wheels (one array: one conversion
    and one argument fewer per call)."""
    x = buf[0:22]
    u = buf[22:38]
    p = x[0:3].reshape((3, 1))
    R = x[3:12].reshape((3, 3, 1))
    v = x[12:15].reshape((3, 1))
    w = x[15:18].reshape((3, 1))
    om = x[18:22].reshape((4, 1))
    c = u[0:4].reshape((4, 1))
    s = u[4:8].reshape((4, 1))
    tau = u[8:12].reshape((4, 1))
    brake = u[12:16].reshape((4, 1))
    _advance(p, R, v, w, om, c, s, tau, brake, nsub, h, prm, flg)
    a0, a1, a2, b0, b1, b2 = x[3], x[4], x[5], x[6], x[7], x[8]
    n = 1.0 / math.sqrt(a0 * a0 + a1 * a1 + a2 * a2)
    a0, a1, a2 = a0 * n, a1 * n, a2 * n
    d = a0 * b0 + a1 * b1 + a2 * b2
    b0, b1, b2 = b0 - d * a0, b1 - d * a1, b2 - d * a2
    n = 1.0 / math.sqrt(b0 * b0 + b1 * b1 + b2 * b2)
    b0, b1, b2 = b0 * n, b1 * n, b2 * n
    x[3], x[4], x[5], x[6], x[7], x[8] = a0, a1, a2, b0, b1, b2
    x[9], x[10], x[11] = a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0


@nb.njit(nb.void(_V, _V, nb.int64[::1], _V), cache=True, nogil=True, error_model="numpy", fastmath=False)
def normal_loads_single(x, prm, flg, out):  # pragma: no cover - compiled
    """The normal force ``F_z`` [N] on each wheel (FL, FR, RL, RR) of one car at the state ``x`` (22,) (the flat
    layout of :class:`~mpc_tracking.models.plants.ackermann3d.car.Ackermann3D`) into ``out`` (4,): the numbers of
    :func:`~mpc_tracking.models.plants.ackermann3d.scalar.contact`, in its order of operations."""
    kn, cn, z0, rz = prm[_KN], prm[_CN], prm[_Z0], prm[_RZ]
    full, has_arb = flg[_FULL] != 0, flg[_ARB] != 0
    pz = x[2]
    R20, R21, R22 = x[9], x[10], x[11]
    v0, v1, v2, wx, wy, wz = x[12], x[13], x[14], x[15], x[16], x[17]
    vbx = x[3] * v0 + x[6] * v1 + R20 * v2
    vby = x[4] * v0 + x[7] * v1 + R21 * v2
    vbz = x[5] * v0 + x[8] * v1 + R22 * v2
    depth = np.empty(4)
    normal = np.empty(4)
    for i in range(4):
        rx, ry = prm[_RX + i], prm[_RY + i]
        ux = vbx + (wy * rz - wz * ry)
        uy = vby + (wz * rx - wx * rz)
        uz = vbz + (wx * ry - wy * rx)
        depth[i] = (z0 - pz) - (R20 * rx + R21 * ry + R22 * rz)
        normal[i] = R20 * ux + R21 * uy + R22 * uz
    bf = br = 0.0
    if has_arb:
        dp0 = depth[0] if depth[0] > 0.0 else 0.0
        dp1 = depth[1] if depth[1] > 0.0 else 0.0
        dp2 = depth[2] if depth[2] > 0.0 else 0.0
        dp3 = depth[3] if depth[3] > 0.0 else 0.0
        bf, br = prm[_ARB_F] * (dp0 - dp1), prm[_ARB_R] * (dp2 - dp3)
    for i in range(4):
        d = depth[i]
        Fz = 0.0
        if d > 0.0:
            ddot = -normal[i]
            bar = bf if i == 0 else (-bf if i == 1 else (br if i == 2 else -br))
            if full:
                Fz = kn * d + cn * ddot
                if has_arb:
                    Fz += bar
                if Fz < 0.0:
                    Fz = 0.0
            else:
                Fz = kn * d + (cn * ddot if ddot > 0.0 else 0.0)
                if has_arb:
                    Fz += bar
                    if Fz < 0.0:
                        Fz = 0.0
        out[i] = Fz
