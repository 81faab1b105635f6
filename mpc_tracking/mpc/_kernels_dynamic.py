"""numba kernels of the dynamic prediction model's step (imported by :mod:`mpc_tracking.mpc._kernels`; needs numba).

The numbers of :mod:`mpc_tracking.models.prediction.spatial_dynamic` (``_evaluate``, ``linearize`` with its exact
RK4 sensitivities, ``steady_cornering``) and of :class:`~mpc_tracking.models.prediction.DynamicPrediction`
(``substeps``, ``linearize``, ``reference_op``), one horizon point at a time: the same formulas, with the terms
held over a step computed once, a division by a repeated divisor as the product with its reciprocal and only the
entries a caller uses, so the two paths agree to a few units in the last place of each operation
(``tests/mpc/test_kernels_dynamic.py`` holds them to 1e-12). Compiler options as in :mod:`._kernels`: on-disk
cache, explicit signatures, IEEE arithmetic (``error_model="numpy"``, no fastmath).

The model's parameters travel as one float64 array ``p`` packed by
:func:`mpc_tracking.mpc.kernels.dynamic_params` (positions ``D_*`` below).
"""
from __future__ import annotations

import math

import numba as nb
import numpy as np

_F1 = nb.float64[::1]
_F2 = nb.float64[:, ::1]
_F3 = nb.float64[:, :, ::1]
_I1 = nb.int64[::1]
_A1 = nb.float64[:]
_A2 = nb.float64[:, :]

# positions in the parameter array p (kernels.dynamic_params packs it)
(D_M, D_IZ, D_LF, D_LR, D_H, D_MUF, D_MUR, D_BF, D_CF, D_EF, D_BR, D_CR, D_ER, D_VFLOOR, D_VLO, D_VHI, D_TAU, D_G,
 D_L, D_CSUM, D_CALF, D_CALR, D_KUS) = range(23)
N_PARAMS = 23

_NX, _NU, _NZ = 6, 2, 8
#: steady_cornering stops its Newton steps early once the step in v_y [m/s], delta [rad] and the correction of
#: a_x [m/s^2] are all below this: the steps left would move the result by less than 1e-12
#: (tests/mpc/test_kernels_dynamic.py)
NEWTON_STOP = 1e-13
_AX, _D = 6, 7  # the inputs' columns of a Jacobian (6, 8)


@nb.njit(cache=True, nogil=True, error_model="numpy", fastmath=False, inline="always")
def _pacejka(alpha, B, C, E):  # pragma: no cover - compiled
    ba = B * alpha
    psi = ba - E * (ba - math.atan(ba))
    dpsi = B * (1.0 - E + E / (1.0 + ba * ba))
    phi = C * math.atan(psi)
    return math.sin(phi), math.cos(phi) * C / (1.0 + psi * psi) * dpsi


@nb.njit(cache=True, nogil=True, error_model="numpy", fastmath=False)
def _matmul_into(X, Y, out, ncol):  # pragma: no cover - compiled
    """``out[:, :ncol] = X (6, 6) @ Y[:, :ncol]``, summed in index order."""
    for i in range(_NX):
        for j in range(ncol):
            acc = 0.0
            for c_ in range(_NX):
                acc += X[i, c_] * Y[c_, j]
            out[i, j] = acc


#: scratch of :func:`_affine_step`: rows of its (n, 8) array ``w`` (k1, D1, ks, Dk, M, K, acc, acc_k)
_W_ROWS = 33
#: length of :func:`_input_terms`' array ``c``
_NC = 15


@nb.njit(cache=True, nogil=True, error_model="numpy", fastmath=False)
def _input_terms(ax, d, p, c):  # pragma: no cover - compiled
    """The terms of ``spatial_dynamic._evaluate`` that depend on the input ``(ax, d)`` [m/s^2, rad] only, held over
    a step (its RK4 stages and substeps): ``c`` (_NC,) receives F_zf, F_zr [N],
    cos d, sin d, tan d, rho = tan d / L, d rho / d delta [1/m], mu_f F_zf, mu_r F_zr [N],
    mu_f dF_z/da_x, mu_r dF_z/da_x [kg]; then the parameters' reciprocals 1 / m [1/kg], 1 / I_z [1/(kg m^2)],
    1 / tau [1/s] and 1 / (v_hi - v_lo) [s/m] of the blend."""
    m, L = p[D_M], p[D_L]
    c[0] = m * (p[D_G] * p[D_LR] - ax * p[D_H]) / L
    c[1] = m * (p[D_G] * p[D_LF] + ax * p[D_H]) / L
    c[2] = math.cos(d)
    c[3] = math.sin(d)
    td = math.tan(d)
    c[4] = td
    c[5] = td / L
    c[6] = (1.0 + td * td) / L
    c[7] = p[D_MUF] * c[0]
    c[8] = p[D_MUR] * c[1]
    dfz = m * p[D_H] / L
    c[9] = p[D_MUF] * dfz
    c[10] = p[D_MUR] * dfz
    c[11] = 1.0 / m
    c[12] = 1.0 / p[D_IZ]
    c[13] = 1.0 / p[D_TAU]
    c[14] = 1.0 / (p[D_VHI] - p[D_VLO])


@nb.njit(cache=True, nogil=True, error_model="numpy", fastmath=False, inline="always")
def _evaluate_sj(x, ax, d, k, p, c, xdot, D):  # pragma: no cover - compiled
    """``spatial_dynamic._evaluate`` at one point in the spatial form with its Jacobian (``spatial=True,
    jac=True``) from the state ``x`` (6,), the input ``(ax, d)``, the curvature ``k`` [1/m] and the input's terms
    ``c`` of :func:`_input_terms`: ``xdot`` (6,), ``D`` (6, 8) (columns: the states, then a_x, delta). The same
    formulas written out column by column (e_y, e_psi and t have no tyre or kinematic part; nothing depends on t,
    so ``D[:, 2]`` is zero)."""
    ey, ep, vx, vy, r = x[0], x[1], x[3], x[4], x[5]
    lf, lr = p[D_LF], p[D_LR]
    cd, sd, rho, drho, mfzf, mfzr = c[2], c[3], c[5], c[6], c[7], c[8]
    inv_m, inv_iz, inv_tau, inv_span = c[11], c[12], c[13], c[14]
    inv_gk = 1.0 / (1.0 - ey * k)
    ce = math.cos(ep)
    se = math.sin(ep)
    vyr = vy - lr * r
    v0 = p[D_VFLOOR]
    if vx < 2.0 * v0:
        vc = min(max(vx, 0.0), 2.0 * v0)
        vf = v0 + vc * vc / (4.0 * v0)
        dvf = vc / (2.0 * v0)
    else:
        vf = vx
        dvf = 1.0
    inv_vf = 1.0 / vf
    sdot = (vf * ce - vyr * se) * inv_gk
    qf = (vy + lf * r) * inv_vf
    qr = vyr * inv_vf
    phif, dphif = _pacejka(d - math.atan(qf), p[D_BF], p[D_CF], p[D_EF])
    phir, dphir = _pacejka(-math.atan(qr), p[D_BR], p[D_CR], p[D_ER])
    fyf = mfzf * phif
    fyr = mfzr * phir
    dyn0 = ax - fyf * sd * inv_m + r * vy
    dyn1 = (fyf * cd + fyr) * inv_m - r * vx
    dyn2 = (lf * fyf * cd - lr * fyr) * inv_iz
    kin0 = ax + 0.0 * vx
    lr_rho = lr * rho
    kin1 = lr_rho * ax + (lr_rho * vx - vy) * inv_tau
    kin2 = rho * ax + (rho * vx - r) * inv_tau
    t = min(max((vx - p[D_VLO]) * inv_span, 0.0), 1.0)
    w = t * t * t * (10.0 + t * (6.0 * t - 15.0))
    dw = 30.0 * t * t * (1.0 - t) ** 2 * inv_span
    iw = 1.0 - w
    inv_s = 1.0 / sdot
    xdot[0] = (vf * se + vyr * ce) * inv_s
    xdot[1] = (r - k * sdot) * inv_s
    xdot[2] = inv_s
    xdot[3] = (w * dyn0 + iw * kin0) * inv_s
    xdot[4] = (w * dyn1 + iw * kin1) * inv_s
    xdot[5] = (w * dyn2 + iw * kin2) * inv_s
    # d sdot / dz (columns e_y, e_psi, v_x, v_y, r; zero in t, a_x, delta)
    dS0 = sdot * k * inv_gk
    dS1 = (-vf * se - vyr * ce) * inv_gk
    dS3 = dvf * ce * inv_gk
    dS4 = -se * inv_gk
    dS5 = lr * se * inv_gk
    # the temporal Jacobian, row by row (row t: zero)
    D[0, 0] = 0.0
    D[0, 1] = vf * ce - vyr * se
    D[0, 3] = dvf * se
    D[0, 4] = ce
    D[0, 5] = -lr * ce
    D[0, 6] = 0.0
    D[0, 7] = 0.0
    D[1, 0] = -k * dS0
    D[1, 1] = -k * dS1
    D[1, 3] = -k * dS3
    D[1, 4] = -k * dS4
    D[1, 5] = -k * dS5 + 1.0
    D[1, 6] = 0.0
    D[1, 7] = 0.0
    for j in (0, 1, 3, 4, 5, 6, 7):
        D[2, j] = 0.0
    cf = 1.0 / (1.0 + qf * qf)
    cr = 1.0 / (1.0 + qr * qr)
    gf = mfzf * dphif
    gr = mfzr * dphir
    a_sd, a_cd, a_lf = sd * inv_m, cd * inv_m, lf * cd * inv_iz
    b_lr = lr * inv_iz
    for i in range(3, 6):  # e_y and e_psi: no tyre or kinematic part
        D[i, 0] = 0.0
        D[i, 1] = 0.0
    # v_x: the slip angles' speed, the blend weight's slope
    ff = gf * (cf * qf * dvf * inv_vf)
    fr = gr * (cr * qr * dvf * inv_vf)
    D[3, 3] = w * (-a_sd * ff) + dw * (dyn0 - kin0)
    D[4, 3] = w * (a_cd * ff + fr * inv_m - r) + iw * (lr_rho * inv_tau) + dw * (dyn1 - kin1)
    D[5, 3] = w * (a_lf * ff - b_lr * fr) + iw * (rho * inv_tau) + dw * (dyn2 - kin2)
    # v_y
    ff = gf * (-cf * inv_vf)
    fr = gr * (-cr * inv_vf)
    D[3, 4] = w * (-a_sd * ff + r)
    D[4, 4] = w * (a_cd * ff + fr * inv_m) - iw * inv_tau
    D[5, 4] = w * (a_lf * ff - b_lr * fr)
    # r
    ff = gf * (-cf * lf * inv_vf)
    fr = gr * (cr * lr * inv_vf)
    D[3, 5] = w * (-a_sd * ff + vy)
    D[4, 5] = w * (a_cd * ff + fr * inv_m - vx)
    D[5, 5] = w * (a_lf * ff - b_lr * fr) - iw * inv_tau
    # a_x: the load transfer
    ff = -(phif * c[9])
    fr = phir * c[10]
    D[3, 6] = w * (1.0 - a_sd * ff) + iw
    D[4, 6] = w * (a_cd * ff + fr * inv_m) + iw * lr_rho
    D[5, 6] = w * (a_lf * ff - b_lr * fr) + iw * rho
    # delta: the front slip angle and the force's direction
    kd_ = drho * (ax + vx * inv_tau)
    D[3, 7] = w * (-a_sd * gf - fyf * cd * inv_m)
    D[4, 7] = w * (a_cd * gf - fyf * sd * inv_m) + iw * (lr * kd_)
    D[5, 7] = w * (a_lf * gf - lf * fyf * sd * inv_iz) + iw * kd_
    # spatial form: d(f / sdot) = (J - (f / sdot) dS) / sdot
    for i in range(_NX):
        xi = xdot[i]
        D[i, 0] = (D[i, 0] - xi * dS0) * inv_s
        D[i, 1] = (D[i, 1] - xi * dS1) * inv_s
        D[i, 2] = 0.0
        D[i, 3] = (D[i, 3] - xi * dS3) * inv_s
        D[i, 4] = (D[i, 4] - xi * dS4) * inv_s
        D[i, 5] = (D[i, 5] - xi * dS5) * inv_s
        D[i, 6] = D[i, 6] * inv_s
        D[i, 7] = D[i, 7] * inv_s


@nb.njit(cache=True, nogil=True, error_model="numpy", fastmath=False, inline="always")
def _affine_step(x, ax, d, k, h, p, rk4, A, B, xn, w, c):  # pragma: no cover - compiled
    """``integrators.affine_step`` of the spatial model at one point: ``A`` (6, 6), ``B`` (6, 2) and the nonlinear
    step ``xn`` (6,) from ``x`` with the input ``(ax, d)`` held over ``h`` [m]; ``w`` (_W_ROWS, 8) and ``c``
    (_NC,) are scratch. The Jacobians by :func:`_evaluate_sj` (the input's terms once); the RK4 sensitivities as
    in ``integrators.affine_step``, the products skipping t's zero column of the Jacobians."""
    _input_terms(ax, d, p, c)
    k1, D1 = w[0], w[1:7]
    _evaluate_sj(x, ax, d, k, p, c, k1, D1)
    if not rk4:
        for i in range(_NX):
            for j in range(_NX):
                A[i, j] = h * D1[i, j] + (1.0 if i == j else 0.0)
            B[i, 0] = h * D1[i, _AX]
            B[i, 1] = h * D1[i, _D]
            xn[i] = x[i] + h * k1[i]
        return
    ks, Dk, M, K, acc, acc_k = w[7], w[8:14], w[14:20], w[20:26], w[26:32], w[32]
    # K = (Kx | Ku) of the stage: K1 = J1; acc = K1 + 2 K2 + 2 K3 + K4 (the states' columns, then the inputs'),
    # acc_k the same sum of the slopes
    for i in range(_NX):
        for j in range(_NZ):
            K[i, j] = D1[i, j]
            acc[i, j] = D1[i, j]
        ks[i] = k1[i]
        acc_k[i] = k1[i]
    for stage in range(3):
        c_ = 0.5 * h if stage < 2 else h
        wgt = 2.0 if stage < 2 else 1.0
        for i in range(_NX):
            xn[i] = x[i] + c_ * ks[i]  # the stage's point
        _evaluate_sj(xn, ax, d, k, p, c, ks, Dk)
        # Kx <- J (I + c Kx), Ku <- J (c Ku) + Ju (J's column t is zero: M's row t is not needed)
        for i in range(_NX):
            for j in range(_NZ):
                M[i, j] = c_ * K[i, j]
            M[i, i] += 1.0
        for i in range(_NX):
            d0, d1, d3, d4, d5 = Dk[i, 0], Dk[i, 1], Dk[i, 3], Dk[i, 4], Dk[i, 5]
            for j in range(_NZ):
                kij = d0 * M[0, j] + d1 * M[1, j] + d3 * M[3, j] + d4 * M[4, j] + d5 * M[5, j]
                if j >= _NX:
                    kij += Dk[i, j]
                K[i, j] = kij
                acc[i, j] += wgt * kij
            acc_k[i] += wgt * ks[i]
    h6 = h / 6.0
    for i in range(_NX):
        for j in range(_NX):
            A[i, j] = h6 * acc[i, j]
        A[i, i] += 1.0
        B[i, 0] = h6 * acc[i, 6]
        B[i, 1] = h6 * acc[i, 7]
        xn[i] = x[i] + h6 * acc_k[i]


@nb.njit(nb.int64(_A2, _A1, _F1, nb.boolean), cache=True, nogil=True, error_model="numpy",
         fastmath=False)
def dynamic_substeps(x_op, ds, p, rk4):  # pragma: no cover - compiled
    """``DynamicPrediction.substeps`` over the horizon: ``x_op`` (K, 6), the steps ``ds`` (K,) [m]."""
    lam = -math.inf
    h_max = -math.inf
    lo, hi = p[D_VLO], p[D_VHI]
    for k in range(ds.shape[0]):
        v = max(x_op[k, 3], p[D_VFLOOR])
        t = min(max((v - lo) / (hi - lo), 0.0), 1.0)
        w = t * t * t * (10.0 + t * (6.0 * t - 15.0))
        lam = max(lam, w * p[D_CSUM] / (p[D_M] * v * v) + (1.0 - w) / (p[D_TAU] * v))
        h_max = max(h_max, ds[k])
    limit = 2.0 if rk4 else 1.5
    return int(min(max(math.ceil(h_max * lam / limit), 1.0), 50.0))


@nb.njit(nb.int64(_A2, _A2, _A1, _A1, _F1, nb.boolean, _F3, _F3, _F2), cache=True, nogil=True, error_model="numpy",
         fastmath=False)
def dynamic_linearize(x_op, u_op, kappa, ds, p, rk4, A, B, f):  # pragma: no cover - compiled
    """``DynamicPrediction.linearize`` (substeps composed along the nonlinear rollout) about ``x_op[:N]`` (N, 6)
    with ``u_op`` (N, 2), ``kappa[:N]`` [1/m], ``ds`` (N,) [m] into ``A`` (N, 6, 6), ``B`` (N, 6, 2), ``f`` (N, 6);
    returns the number of substeps."""
    N = u_op.shape[0]
    n_sub = dynamic_substeps(x_op[:N], ds, p, rk4)
    w = np.empty((_W_ROWS, _NZ))
    c = np.empty(_NC)
    As = np.empty((_NX, _NX))
    Bs = np.empty((_NX, _NU))
    T = np.empty((_NX, _NX))
    x = np.empty(_NX)
    xn = np.empty(_NX)
    x_first = np.empty(_NX)
    fv = np.empty(_NX)
    for k in range(N):
        h = ds[k] / n_sub if n_sub > 1 else ds[k]
        ax, d, kap = u_op[k, 0], u_op[k, 1], kappa[k]
        for i in range(_NX):
            x[i] = x_op[k, i]
            x_first[i] = x[i]
        _affine_step(x, ax, d, kap, h, p, rk4, A[k], B[k], xn, w, c)
        # f = x_next - A x_op - B u_op
        for i in range(_NX):
            acc = 0.0
            for j in range(_NX):
                acc += A[k, i, j] * x[j]
            f[k, i] = (xn[i] - acc) - (B[k, i, 0] * ax + B[k, i, 1] * d)
        for _ in range(n_sub - 1):
            for i in range(_NX):
                x[i] = xn[i]
            _affine_step(x, ax, d, kap, h, p, rk4, As, Bs, xn, w, c)
            for i in range(_NX):
                acc = 0.0
                for j in range(_NX):
                    acc += As[i, j] * x[j]
                fv[i] = (xn[i] - acc) - (Bs[i, 0] * ax + Bs[i, 1] * d)
            # B_tot = A B_tot + B; f_tot = A f_tot + f; A_tot = A A_tot
            for i in range(_NX):
                for j in range(_NU):
                    acc = 0.0
                    for c_ in range(_NX):
                        acc += As[i, c_] * B[k, c_, j]
                    T[i, j] = acc + Bs[i, j]
            for i in range(_NX):
                for j in range(_NU):
                    B[k, i, j] = T[i, j]
            for i in range(_NX):
                acc = 0.0
                for c_ in range(_NX):
                    acc += As[i, c_] * f[k, c_]
                T[i, 0] = acc + fv[i]
            for i in range(_NX):
                f[k, i] = T[i, 0]
            _matmul_into(As, A[k], T, _NX)
            for i in range(_NX):
                for j in range(_NX):
                    A[k, i, j] = T[i, j]
    return n_sub


@nb.njit(nb.int64(_A2, _A2, _A1, _A1, _F1, nb.boolean, _F1, _F1, _I1, _I1, _F1, _F1, _F3, _F3, _F2, _F1, _I1),
         cache=True, nogil=True, error_model="numpy", fastmath=False)
def dynamic_linearize_fill(x_op, u_op, kappa, s_grid, p, rk4, x0, data, pos_A, pos_B, lower, upper, A, B, f, ds,
                           xcol):  # pragma: no cover - compiled
    """:func:`dynamic_linearize` over the steps ``max(diff(s_grid), 0)`` (``ds`` (N,) receives them), written into
    the QP: the states the QP holds (``xcol`` (6,): each state's column in the QP's stage, -1 when it holds none,
    :attr:`QPLayout.x_col <mpc_tracking.mpc.layout.QPLayout>`), ``A``, ``B`` into the CSC ``data`` at ``pos_A``,
    ``pos_B`` (row-major order of the QP's blocks), the dynamics rows ``lower[:nq] = upper[:nq] = x0`` and
    ``lower = upper = -f`` below them; ``A``, ``B``, ``f`` receive all six states. Returns the substeps."""
    N = u_op.shape[0]
    for k in range(N):
        ds[k] = max(s_grid[k + 1] - s_grid[k], 0.0)
    n_sub = dynamic_linearize(x_op, u_op, kappa, ds, p, rk4, A, B, f)
    nq = 0
    for i in range(_NX):
        if xcol[i] >= 0:
            nq += 1
            lower[xcol[i]] = x0[i]
            upper[xcol[i]] = x0[i]
    for k in range(N):
        for i in range(_NX):
            ci = xcol[i]
            if ci < 0:
                continue
            r = nq * (k + 1) + ci
            lower[r] = -f[k, i]
            upper[r] = lower[r]
            for j in range(_NX):
                cj = xcol[j]
                if cj >= 0:
                    data[pos_A[nq * nq * k + nq * ci + cj]] = A[k, i, j]
            for j in range(_NU):
                data[pos_B[_NU * nq * k + _NU * ci + j]] = B[k, i, j]
    return n_sub


@nb.njit(nb.void(_F1, _F2, _F1, _F3, _F3, _F2, _I1, _F2), cache=True, nogil=True, error_model="numpy",
         fastmath=False)
def expand_states(zx, U, x0, A, B, f, xcol, X):  # pragma: no cover - compiled
    """:meth:`QPLayout.expand_states <mpc_tracking.mpc.layout.QPLayout.expand_states>`: the plan's states ``X``
    (N+1, nx) from the QP's ``zx`` ((N+1) nq,), the inputs ``U`` (N, nu), the measured ``x0`` (nx,) and the
    model's dynamics ``A`` (N, nx, nx), ``B`` (N, nx, nu), ``f`` (N, nx); ``xcol`` (nx,) as in
    :func:`dynamic_linearize_fill`. A dropped state follows its own rows, in the numpy path's order of
    operations (its products with the kept states, then with the inputs, plus ``f``; a cumulative sum when
    ``A_k[i, i] = 1`` for all k)."""
    N, nx, nu = U.shape[0], x0.shape[0], U.shape[1]
    nq = 0
    for i in range(nx):
        if xcol[i] >= 0:
            nq += 1
    for k in range(N + 1):
        for i in range(nx):
            if xcol[i] >= 0:
                X[k, i] = zx[nq * k + xcol[i]]
    for i in range(nx):
        if xcol[i] >= 0:
            continue
        unit = True
        for k in range(N):
            if A[k, i, i] != 1.0:
                unit = False
        X[0, i] = x0[i]
        run = 0.0
        for k in range(N):
            b1 = 0.0
            for j in range(nx):
                if xcol[j] >= 0:
                    b1 += A[k, i, j] * X[k, j]
            b2 = 0.0
            for j in range(nu):
                b2 += B[k, i, j] * U[k, j]
            b = (b1 + b2) + f[k, i]
            if unit:
                run += b
                X[k + 1, i] = run + x0[i]
            else:
                X[k + 1, i] = A[k, i, i] * X[k, i] + b


@nb.njit(cache=True, nogil=True, error_model="numpy", fastmath=False, inline="always")
def _cornering_r(vy, v, kap, lr):  # pragma: no cover - compiled
    """``steady_cornering``'s ``state(v_y)``: the yaw rate r [rad/s] of the rear axle moving along the path."""
    r = kap * math.sqrt(v * v + (vy - lr * kap * v) ** 2)
    for _ in range(2):
        r = kap * math.sqrt(v * v + (vy - lr * r) ** 2)
    return r


@nb.njit(cache=True, nogil=True, error_model="numpy", fastmath=False, inline="always")
def _cornering_rows(vy, r, v, vf, w, ax, d, p):  # pragma: no cover - compiled
    """The rows of ``spatial_dynamic._evaluate`` (temporal form) that steady cornering solves, at the state of
    ``v_y``, ``r`` (e_y = 0, v_x = ``v``; e_psi enters no body row), ``vf`` the floored speed and ``w`` the blend
    weight at ``v``: ``(v_x_dot, v_y_dot, r_dot)`` and ``d(v_y_dot, r_dot)/d(v_y, delta)`` (r and e_psi held:
    ``steady_cornering``'s Jacobian); ``tan d`` as ``sin d / cos d``."""
    m, L, lf, lr, h = p[D_M], p[D_L], p[D_LF], p[D_LR], p[D_H]
    inv_m = 1.0 / m
    inv_iz = 1.0 / p[D_IZ]
    inv_tau = 1.0 / p[D_TAU]
    inv_vf = 1.0 / vf
    qf = (vy + lf * r) * inv_vf
    qr = (vy - lr * r) * inv_vf
    phif, dphif = _pacejka(d - math.atan(qf), p[D_BF], p[D_CF], p[D_EF])
    phir, dphir = _pacejka(-math.atan(qr), p[D_BR], p[D_CR], p[D_ER])
    mfzf = p[D_MUF] * (m * (p[D_G] * lr - ax * h) / L)
    mfzr = p[D_MUR] * (m * (p[D_G] * lf + ax * h) / L)
    fyf = mfzf * phif
    fyr = mfzr * phir
    cd = math.cos(d)
    sd = math.sin(d)
    td = sd / cd
    rho = td / L
    iw = 1.0 - w
    xd3 = w * (ax - fyf * sd * inv_m + r * vy) + iw * (ax + 0.0 * v)
    xd4 = w * ((fyf * cd + fyr) * inv_m - r * v) + iw * (lr * rho * ax + (lr * rho * v - vy) * inv_tau)
    xd5 = w * ((lf * fyf * cd - lr * fyr) * inv_iz) + iw * (rho * ax + (rho * v - r) * inv_tau)
    gf = mfzf * dphif
    gr = mfzr * dphir
    a_cd, a_lf = cd * inv_m, lf * cd * inv_iz
    b_lr = lr * inv_iz
    ff = gf * (-inv_vf / (1.0 + qf * qf))
    fr = gr * (-inv_vf / (1.0 + qr * qr))
    jv0 = w * (a_cd * ff + fr * inv_m) - iw * inv_tau
    jv1 = w * (a_lf * ff - b_lr * fr)
    kd_ = (1.0 + td * td) / L * (ax + v * inv_tau)
    jd0 = w * (a_cd * gf - fyf * sd * inv_m) + iw * (lr * kd_)
    jd1 = w * (a_lf * gf - lf * fyf * sd * inv_iz) + iw * kd_
    return xd3, xd4, xd5, jv0, jv1, jd0, jd1


@nb.njit(nb.void(_A1, _A1, _A1, _F1, nb.int64, _F2), cache=True, nogil=True, error_model="numpy",
         fastmath=False)
def steady_cornering(kappa, v_x, a_ref, p, iterations, out):  # pragma: no cover - compiled
    """``spatial_dynamic.steady_cornering`` at each point: ``out`` (K, 5) receives e_psi, v_y, r, a_x, delta.
    The rows it solves by :func:`_cornering_rows` (the speed's terms once per point); the Newton steps stop early
    once they move nothing beyond ``NEWTON_STOP``, and then the last step's residual and correction of a_x stand for
    the final ones (the state moved by nothing since)."""
    lr, lf, L = p[D_LR], p[D_LF], p[D_L]
    v0, lo, hi = p[D_VFLOOR], p[D_VLO], p[D_VHI]
    for i in range(kappa.shape[0]):
        kap = kappa[i]
        v = max(v_x[i], v0)
        ar = a_ref[i]
        a_y = v * v * kap
        g0 = -v * math.tan(p[D_M] * a_y * lf / (L * p[D_CALR]))
        g1 = math.atan(L * kap) + p[D_KUS] * a_y
        # the speed's terms of spatial_dynamic._evaluate: the floored speed of the slip angles, the blend weight
        if v < 2.0 * v0:
            vc = min(max(v, 0.0), 2.0 * v0)
            vf = v0 + vc * vc / (4.0 * v0)
        else:
            vf = v
        t = min(max((v - lo) / (hi - lo), 0.0), 1.0)
        w = t * t * t * (10.0 + t * (6.0 * t - 15.0))
        v_y = g0 + lr * v * kap
        delta = g1
        a_x = ar
        res0 = res1 = 0.0
        converged = False
        for _ in range(iterations):
            r = _cornering_r(v_y, v, kap, lr)
            xd3, res0, res1, jv0, jv1, jd0, jd1 = _cornering_rows(v_y, r, v, vf, w, a_x, delta, p)
            a_x = a_x + (ar - xd3)
            det = jv0 * jd1 - jd0 * jv1
            if abs(det) > 1e-12:
                dv = (jd1 * res0 - jd0 * res1) / det
                dd = (-jv1 * res0 + jv0 * res1) / det
                v_y = v_y - min(max(dv, -2.0), 2.0)
                delta = delta - min(max(dd, -0.05), 0.05)
                if abs(dv) <= NEWTON_STOP and abs(dd) <= NEWTON_STOP and abs(ar - xd3) <= NEWTON_STOP:
                    converged = True  # the remaining steps would move nothing beyond rounding
                    break
        r = _cornering_r(v_y, v, kap, lr)
        if not converged:  # the final residual and a_x correction (converged: the last step's, moved by nothing)
            xd3, res0, res1, jv0, jv1, jd0, jd1 = _cornering_rows(v_y, r, v, vf, w, a_x, delta, p)
            a_x = a_x + (ar - xd3)
        scale = max(abs(a_y), 1.0)
        good = abs(res0) < 1e-3 * scale and abs(res1) * lf < 1e-3 * scale and abs(delta) < 0.7
        good = good and math.isfinite(v_y) and math.isfinite(delta) and math.isfinite(a_x)
        if good:
            out[i, 0], out[i, 1], out[i, 2], out[i, 3], out[i, 4] = -math.atan((v_y - lr * r) / v), v_y, r, a_x, delta
        else:
            r_lin = v * kap
            out[i, 0] = -math.atan(g0 / v)
            out[i, 1] = g0 + lr * r_lin
            out[i, 2] = r_lin
            out[i, 3] = ar
            out[i, 4] = g1


@nb.njit(nb.void(_A1, _F1, nb.float64, _F1, nb.boolean, _F2, _F2, _F2, _F2), cache=True, nogil=True,
         error_model="numpy", fastmath=False)
def dynamic_reference(kappa, v, ds, p, slip, x_ref, u_ref, scratch, out):  # pragma: no cover - compiled
    """``DynamicPrediction.reference_op`` at the speed reference ``v`` (N,) [m/s] over steps of ``ds`` [m]
    (``slip``: the steady cornering state, else zero slip with the linear single track's steering); ``x_ref``
    (N+1, 6), ``u_ref`` (N, 2) receive the operating point; ``scratch`` (2, N+1), ``out`` (N+1, 5) are scratch."""
    N = u_ref.shape[0]
    v_grid = scratch[0]
    for k in range(N):
        v_grid[k] = v[k]
    v_grid[N] = v[N - 1]
    t = 0.0
    for i in range(_NX):
        x_ref[0, i] = 0.0
    for k in range(N):
        t += ds / v[k]
        for i in range(_NX):
            x_ref[k + 1, i] = 0.0
        x_ref[k + 1, 2] = t
    for k in range(N + 1):
        x_ref[k, 3] = v_grid[k]
    a_ref = scratch[1]
    for k in range(N):
        a_ref[k] = (v_grid[k + 1] ** 2 - v_grid[k] ** 2) / (2.0 * ds)
    a_ref[N] = a_ref[N - 1]
    if slip:
        steady_cornering(kappa[: N + 1], v_grid, a_ref, p, 4, out)
        for k in range(N + 1):
            x_ref[k, 1] = out[k, 0]
            x_ref[k, 4] = out[k, 1]
            x_ref[k, 5] = out[k, 2]
        for k in range(N):
            u_ref[k, 0] = out[k, 3]
            u_ref[k, 1] = out[k, 4]
        return
    lr, L, k_us = p[D_LR], p[D_L], p[D_KUS]
    for k in range(N + 1):
        x_ref[k, 5] = v_grid[k] * kappa[k]
        x_ref[k, 4] = lr * x_ref[k, 5]
    for k in range(N):
        u_ref[k, 0] = a_ref[k]
        u_ref[k, 1] = math.atan(L * kappa[k]) + k_us * v[k] ** 2 * kappa[k]


@nb.njit(nb.int64(_F2, _F1, nb.float64, _F1, nb.boolean, nb.boolean, nb.boolean, _F1, nb.float64, _F2, _F2, _F2, _F2,
                  _F2, _F1, _F1, _F1, _F1, _F1, _F3, _F3, _F2, _F1, _I1), cache=True, nogil=True, error_model="numpy",
         fastmath=False)
def dynamic_op_fill(r, v, ds, p, slip, rk4, use_prev, x0, v_min, z_op, x_ref, u_ref, scratch, out, lim, s_grid, data,
                    lower, upper, A, B, f, ds_buf, ints):  # pragma: no cover - compiled
    """The dynamic model's reference operating point, operating point and dynamics in one call (the numbers of
    ``SpatialMPC._prepare`` and :meth:`StepQP.build <mpc_tracking.mpc.qp.StepQP.build>` up to the dynamics with the
    compiled kernels): :func:`dynamic_reference` at the speed reference ``v`` (N,) into ``x_ref`` (N+1, 6),
    ``u_ref`` (N, 2); unless ``use_prev`` (``z_op`` (N+1, 8) holds the shifted last plan) the operating point
    ``z_op`` from it (states 0..5, inputs 6..7, the last row's inputs those of step N-1); ``z_op[0, :6] = x0``; the
    domain guard of ``_kernels.clamp_op`` for this model (|e_y| below ``lim = 0.95 / max(|kappa|, 1e-12)`` (N+1,),
    |e_psi| <= 1.2 rad, v_x >= ``v_min``; in place); :func:`dynamic_linearize_fill`. ``r`` (N+1, 10): the path
    sample's rows (curvature in column 0); ``ints``: ``[xcol (6), pos_A, pos_B]`` (``pos_A`` nq^2 N entries, nq the
    QP's states). Returns the substeps."""
    K = z_op.shape[0]
    N = K - 1
    kappa = r[:, 0]
    dynamic_reference(kappa, v, ds, p, slip, x_ref, u_ref, scratch, out)
    if not use_prev:
        for k in range(K):
            for j in range(_NX):
                z_op[k, j] = x_ref[k, j]
            kk = min(k, N - 1)
            for j in range(_NU):
                z_op[k, _NX + j] = u_ref[kk, j]
    for j in range(_NX):
        z_op[0, j] = x0[j]
    # (the numbers of _kernels.clamp_op with the dynamic model's indices: e_y 0, e_psi 1, the speed state v_x 3)
    for k in range(K):
        lim[k] = 0.95 / max(abs(kappa[k]), 1e-12)
        z_op[k, 0] = min(max(z_op[k, 0], -lim[k]), lim[k])
        z_op[k, 1] = min(max(z_op[k, 1], -1.2), 1.2)
        z_op[k, 3] = max(z_op[k, 3], v_min)
    xcol = ints[:_NX]
    nq = 0
    for i in range(_NX):
        if xcol[i] >= 0:
            nq += 1
    pos_A = ints[_NX:_NX + nq * nq * N]
    pos_B = ints[_NX + nq * nq * N:]
    return dynamic_linearize_fill(z_op[:, :_NX], z_op[:N, _NX:], kappa, s_grid, p, rk4, x0, data, pos_A, pos_B, lower,
                                  upper, A, B, f, ds_buf, xcol)
