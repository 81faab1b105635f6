"""numba kernel of a control period of the 3D car behind its wheel-torque PI actuator (imported lazily by
:mod:`mpc_tracking.models.plants.ackermann3d.held`; importing it needs numba).

:func:`held_torque_steps` runs ``n`` plant steps under one held command: per step the steering limiter, the speed
PI (feed-forward plan, anti-windup, brake fade-out), the road's friction under the car (``mu_schedule`` /
``mu_patches``), the torque split of :class:`~mpc_tracking.actuation.WheelTorquePI` (traction limit from the normal
loads and that friction, brakes by load, ``tau_max``), then :meth:`Ackermann3D.step
<mpc_tracking.models.plants.ackermann3d.car.Ackermann3D.step>` (drive/brake split, Ackermann steering geometry, the
substeps of :func:`._numba_kernels.step_single`). The operations are those of the Python code, in its order
(``tests/models/plants/test_held_torque.py`` checks them bitwise). Compiler options as :mod:`._numba_kernels`:
``cache=True``, IEEE arithmetic, an explicit signature (compiled or loaded from the cache at import, never at a
call).
"""
from __future__ import annotations

import math

import numba as nb
import numpy as np

from mpc_tracking.models.plants.ackermann3d._numba_kernels import LAYOUT, normal_loads_single, step_single

_MU = LAYOUT["prm"]["mu"]
_MU_A = LAYOUT["prm"]["mu_a"]
_MU_B = LAYOUT["prm"]["mu_b"]

#: what the float array ``cst`` holds (the constants, packed by :mod:`.held` at every call), in order
CST_NAMES = ("kp", "ki", "accel_max", "decel_max", "v_stop", "limit_max", "limit_rate", "mass", "wheel_damping",
             "wheel_radius", "mask_FL", "mask_FR", "mask_RL", "mask_RR", "n_driven", "brake_all_by_load",
             "traction_fraction",
             "tau_max", "wheelbase", "half_track", "float32_casts", "friction_brakes", "brake_all", "mu_base",
             "mu_load", "nominal_load", "varying_friction")
#: what the float array ``io`` holds (state read and written back), in order
IO_NAMES = ("steer", "integral", "has_plan", "plan_speed", "plan_accel", "plan_tau", "mu_now", "plant_delta",
            "cs_valid")
(_KP, _KI, _AMAX, _DMAX, _VSTOP, _LMAX, _LRATE, _MASS, _BW, _RAD, _M0, _M1, _M2, _M3, _NDRV, _BYLOAD, _TFRAC, _TMAX,
 _WB, _HW, _F32, _FBRK, _BALL, _MU0, _MUL, _FZ0, _VAR) = range(27)
_STEER, _INT, _HASPLAN, _V0, _AFF, _TAU, _MUNOW, _PDELTA, _CSOK = range(9)


@nb.njit(cache=True, nogil=True, error_model="numpy", fastmath=False)
def _road_friction(mu, t, x, y, sched, patches):  # pragma: no cover - compiled
    """:meth:`Ackermann3DParams.road_friction <mpc_tracking.models.plants.ackermann3d.params.Ackermann3DParams.
    road_friction>` with the base ``mu``, schedule rows ``(t_i, mu_i)`` (m, 2) and patch rows ``(x, y, r, mu)``
    (p, 4)."""
    for i in range(sched.shape[0]):
        if sched[i, 0] > t:
            break
        mu = sched[i, 1]
    for i in range(patches.shape[0]):
        dx = x - patches[i, 0]
        dy = y - patches[i, 1]
        r = patches[i, 2]
        if dx * dx + dy * dy <= r * r:
            mu = patches[i, 3]
    return mu


@nb.njit(cache=True, nogil=True, error_model="numpy", fastmath=False)
def _pymax(a, b):  # pragma: no cover - compiled
    """Python's ``max(a, b)``: ``a`` unless ``b > a`` (the same zero's sign, the same result for NaN)."""
    return b if b > a else a


@nb.njit(cache=True, nogil=True, error_model="numpy", fastmath=False)
def _pymin(a, b):  # pragma: no cover - compiled
    """Python's ``min(a, b)``: ``a`` unless ``b < a``."""
    return b if b < a else a


_F = nb.float64
_V = nb.float64[::1]
_M = nb.float64[:, ::1]


@nb.njit(nb.int64(_V, _V, nb.int64[::1], _V, _V, _V, _M, _M, nb.int64, _F, _F, nb.int64, _F, _F, _F), cache=True,
         nogil=True, error_model="numpy", fastmath=False)
def held_torque_steps(buf, prm, flg, loads, cst, io, sched, patches, n_steps, t, dt, nsub, h, v_cmd,
                      delta_cmd):  # pragma: no cover - compiled
    """``n_steps`` steps of ``dt`` [s] (each ``nsub`` substeps of ``h`` [s]) of the 3D car behind the wheel-torque PI
    with the command ``(v_cmd [m/s], delta_cmd [rad])`` held, from time ``t`` [s].

    ``buf`` (38,) is :func:`._numba_kernels.step_single`'s argument (the state first), ``prm``, ``flg`` the plant's
    kernel constants (``mu``, ``mu_a``, ``mu_b`` follow the road friction), ``loads`` (4,) scratch for the normal
    loads, ``cst`` the constants (:data:`CST_NAMES`), ``io`` the limiter's, the PI's and the plant's step state
    (:data:`IO_NAMES`), read at the start and written back after each completed step, ``sched`` (m, 2) and
    ``patches`` (p, 4) the friction tables. Returns the steps completed: ``k < n_steps`` when step ``k`` had a
    non-finite input or state; then ``buf``, ``prm`` and ``io`` hold the values from before it (the caller repeats
    it in Python for the error).
    """
    kp, ki, a_max, d_max, v_stop = cst[_KP], cst[_KI], cst[_AMAX], cst[_DMAX], cst[_VSTOP]
    lim_max, lim_rate = cst[_LMAX], cst[_LRATE]
    mass, b_w, radius, n_driven = cst[_MASS], cst[_BW], cst[_RAD], cst[_NDRV]
    by_load_ok, traction, tau_max = cst[_BYLOAD] != 0.0, cst[_TFRAC], cst[_TMAX]
    wb, hw, f32, fbrk, ball = cst[_WB], cst[_HW], cst[_F32] != 0.0, cst[_FBRK] != 0.0, cst[_BALL] != 0.0
    mu0, mu_load, fz0, varying = cst[_MU0], cst[_MUL], cst[_FZ0], cst[_VAR] != 0.0
    steer, integral, has_plan = io[_STEER], io[_INT], io[_HASPLAN] != 0.0
    v0, a_ff0, tau_pi = io[_V0], io[_AFF], io[_TAU]
    mu_now, p_delta, cs_ok = io[_MUNOW], io[_PDELTA], io[_CSOK] != 0.0
    unlimited = lim_rate == math.inf and lim_max == math.inf
    saved = np.empty(30)
    Fi = np.empty(4)
    for k in range(n_steps):
        saved[:30] = buf[:30]
        mu_saved, mu_a_saved, mu_b_saved = prm[_MU], prm[_MU_A], prm[_MU_B]
        # ---- the actuator (WheelTorquePI.__call__)
        v = buf[12] * buf[3] + buf[13] * buf[6] + buf[14] * buf[9]
        if unlimited:
            steer += delta_cmd - steer
        else:
            target = _pymin(_pymax(delta_cmd, -lim_max), lim_max)
            step = lim_rate * dt
            steer += _pymin(_pymax(target - steer, -step), step)
        d = steer
        a_ff = 0.0
        if has_plan:
            a_ff = a_ff0
            err = v0 + a_ff * tau_pi - v
            tau_pi += dt
        else:
            err = v_cmd - v
        cand = integral + err * dt
        a = a_ff + kp * err + ki * cand
        a_sat = _pymin(_pymax(a, -d_max), a_max)
        if a_sat == a:
            integral = cand
        if v_cmd >= 0.0 and a_sat < 0.0 and v < v_stop:
            a_sat *= _pymax(v, 0.0) / v_stop
            integral = _pymax(integral, 0.0)
        F = mass * a_sat + (b_w * buf[18] + b_w * buf[19] + b_w * buf[20] + b_w * buf[21]) / radius
        normal_loads_single(buf[:22], prm, flg, loads)
        total = loads[0] + loads[1] + loads[2] + loads[3]
        if F < 0 and by_load_ok and total > 0:
            for i in range(4):
                Fi[i] = F * loads[i] / total
        else:
            for i in range(4):
                Fi[i] = cst[_M0 + i] * F / n_driven
        # ---- the road under the car from t (Ackermann3D.road_friction): the actuator's traction limit and the plant
        if varying:
            mu = _road_friction(mu0, t, buf[0], buf[1], sched, patches)
            if mu != mu_now:
                mu_now = mu
                if f32:
                    mu = float(np.float32(mu))
                prm[_MU] = mu
                prm[_MU_A] = mu * (1.0 + mu_load)
                prm[_MU_B] = mu * mu_load / fz0
        grip = traction * (mu_now if varying else mu0)
        # ---- the plant (Ackermann3D.step): input check, torque split, steering geometry, substeps
        tq = buf[30:34]
        for i in range(4):
            lim = grip * loads[i]
            f = Fi[i]
            f = f if f > -lim else -lim
            f = (f if f < lim else lim) * radius
            f = f if f > -tau_max else -tau_max
            tq[i] = f if f < tau_max else tau_max
        t0, t1, t2, t3 = tq[0], tq[1], tq[2], tq[3]
        if not math.isfinite(d + t0 + t1 + t2 + t3):
            buf[:30] = saved[:30]
            prm[_MU], prm[_MU_A], prm[_MU_B] = mu_saved, mu_a_saved, mu_b_saved
            return k
        brk = buf[34:38]
        if t0 >= 0.0 and t1 >= 0.0 and t2 >= 0.0 and t3 >= 0.0:  # min(...) >= 0 (finite torques)
            for i in range(4):
                tq[i] = cst[_M0 + i] * tq[i]
                brk[i] = 0.0
        elif not fbrk:
            for i in range(4):
                ti = tq[i]
                tq[i] = ti if (ball and ti < 0.0) else cst[_M0 + i] * ti
                brk[i] = 0.0
        else:
            for i in range(4):
                ti, m = tq[i], cst[_M0 + i]
                tq[i] = m * ti if ti > 0.0 else 0.0
                brk[i] = (-ti if ball else -m * ti) if ti < 0.0 else 0.0
        if d != p_delta or not cs_ok:
            tn = math.tan(d)
            wa = math.atan2(wb * tn, wb - hw * tn)
            wc = math.atan2(wb * tn, wb + hw * tn)
            if f32:
                wa, wc = float(np.float32(wa)), float(np.float32(wc))
            buf[22], buf[23], buf[24], buf[25] = math.cos(wa), math.cos(wc), 1.0, 1.0
            buf[26], buf[27], buf[28], buf[29] = math.sin(wa), math.sin(wc), 0.0, 0.0
            cs_ok = True
        step_single(buf, nsub, h, prm, flg)
        total = 0.0
        for i in range(22):
            total += buf[i]
        if not math.isfinite(total):
            buf[:30] = saved[:30]
            prm[_MU], prm[_MU_A], prm[_MU_B] = mu_saved, mu_a_saved, mu_b_saved
            return k
        p_delta = d
        t += dt
        io[_STEER], io[_INT], io[_TAU], io[_MUNOW], io[_PDELTA], io[_CSOK] = steer, integral, tau_pi, mu_now, d, 1.0
    return n_steps
