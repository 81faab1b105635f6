"""The scalar projection's walk along the polyline and its two Newton steps on the local arc: one function, run
by Python on lists (:meth:`ProjectionMixin._project_scalar <mpc_tracking.paths.projection.ProjectionMixin>`) and
compiled by numba on an array (:mod:`._projection_kernels`, once numba is loaded). Standard library only.
"""
from __future__ import annotations

import math
from typing import Any

__all__ = ["walk", "ROW_S", "ROW_X", "ROW_Y", "ROW_PSI", "ROW_DX", "ROW_DY", "ROW_LEN2", "ROW_KAPPA"]

#: rows of the table :func:`walk` reads
ROW_S, ROW_X, ROW_Y, ROW_PSI, ROW_DX, ROW_DY, ROW_LEN2, ROW_KAPPA = range(8)


def walk(table: Any, n_seg: int, closed: bool, L: float, ds: float, px: float, py: float, hint: float,
         max_steps: int) -> tuple[bool, float, float, float]:
    """Project the finite point ``(px, py)`` [m] from the finite arc-length hint ``hint`` [m].

    ``table`` (8, n_seg + 1), rows ``ROW_*``: waypoint s, x, y, heading, then segment dx, dy, squared length and
    curvature (the last column of those four unused) -- a C-contiguous array for the compiled walk, a tuple of
    eight lists of floats in Python (cheaper element access); ``n_seg`` segments, ``closed`` loop of length ``L``
    [m], waypoint spacing ``ds`` [m]; the walk gives up after ``max_steps`` segments. Returns ``(found, s, e_y,
    psi_path)``: ``found`` False when the walk left its window (the caller searches globally).
    """
    ls, lx, ly, lpsi = table[ROW_S], table[ROW_X], table[ROW_Y], table[ROW_PSI]
    ldx, ldy, ll2, lkap = table[ROW_DX], table[ROW_DY], table[ROW_LEN2], table[ROW_KAPPA]
    hint = hint % L if closed else min(max(hint, 0.0), L)
    i = min(int(hint / ds), n_seg - 1)
    while i + 1 < n_seg and ls[i + 1] <= hint:
        i += 1
    while i > 0 and ls[i] > hint:
        i -= 1
    last = 0
    t = 0.0
    found = False
    for _ in range(max_steps):
        t = ((px - lx[i]) * ldx[i] + (py - ly[i]) * ldy[i]) / ll2[i]
        if t < 0.0:
            if last == 1 or (not closed and i == 0):
                t = 0.0
                found = True
                break
            i = i - 1 if i > 0 else n_seg - 1
            last = -1
        elif t > 1.0:
            if last == -1 or (not closed and i == n_seg - 1):
                t = 1.0
                found = True
                break
            i = i + 1 if i < n_seg - 1 else 0
            last = 1
        else:
            found = True
            break
    if not found:
        return False, 0.0, 0.0, 0.0
    x0, y0, psi0, k0 = lx[i], ly[i], lpsi[i], lkap[i]
    c, sn = math.cos(psi0), math.sin(psi0)
    seg_len = math.sqrt(ll2[i])
    sig = t * seg_len
    for _ in range(2):
        half = 0.5 * k0 * sig * sig
        rx = x0 + c * sig - sn * half - px
        ry = y0 + sn * sig + c * half - py
        tx = c - sn * k0 * sig
        ty = sn + c * k0 * sig
        fp = tx * tx + ty * ty + k0 * (c * ry - sn * rx)
        if abs(fp) > 1e-12:
            sig -= (rx * tx + ry * ty) / fp
        sig = min(max(sig, -0.5 * seg_len), 1.5 * seg_len)
    if not closed:
        sig = min(max(sig, -ls[i]), L - ls[i])
    half = 0.5 * k0 * sig * sig
    rx = x0 + c * sig - sn * half
    ry = y0 + sn * sig + c * half
    psi_p = psi0 + k0 * sig
    e_y = -(px - rx) * math.sin(psi_p) + (py - ry) * math.cos(psi_p)
    s = ls[i] + sig
    if closed:
        s %= L
    return True, s, e_y, psi_p
