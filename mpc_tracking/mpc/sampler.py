"""Fast linear sampling of path quantities on the MPC's prediction grid (hot path)."""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from mpc_tracking.paths.interpolation import LinearTable
from mpc_tracking.paths.reference_path import ReferencePath

__all__ = ["PathSampler", "PathSample", "body_minimum", "window_reduce"]


class PathSample(NamedTuple):
    """Path quantities at grid points, each of shape (K,)."""

    kappa: np.ndarray
    width_left: np.ndarray
    width_right: np.ndarray
    v_ref: np.ndarray | None
    x: np.ndarray
    y: np.ndarray
    psi: np.ndarray
    v_box: np.ndarray | None = None
    width_left_body: np.ndarray | None = None
    width_right_body: np.ndarray | None = None


def body_minimum(path: ReferencePath, body: tuple[float, float], values: np.ndarray) -> np.ndarray:
    """Minimum of ``values`` (per waypoint) over the waypoints within ``[s - rear, s + front]``."""
    rear, front = body
    j_r = int(np.ceil(rear / path.ds - 1e-9))
    j_f = int(np.ceil(front / path.ds - 1e-9))
    n = values.size
    idx = np.arange(n)
    out = values.copy()
    for j in range(-j_r, j_f + 1):
        k = np.mod(idx + j, n) if path.closed else np.clip(idx + j, 0, n - 1)
        np.minimum(out, values[k], out=out)
    return out


def window_reduce(values: np.ndarray, width: int, largest: bool) -> np.ndarray:
    """Sliding max (``largest``) or min over ``width`` consecutive entries: shape (n - width + 1,)."""
    view = np.lib.stride_tricks.as_strided(
        values, shape=(values.size - width + 1, width), strides=(values.strides[0], values.strides[0]), writeable=False
    )
    return view.max(axis=1) if largest else view.min(axis=1)


class PathSampler:
    """Piecewise-linear sampling of a path's arrays on the prediction grid (wraps closed paths).

    The interpolation is the path's own :class:`~mpc_tracking.paths.interpolation.LinearTable`
    (inf-safe: a path without widths has an unbounded corridor).

    Linear interpolation of x/y/psi is used only to place predictions in the world
    (plots); curvature and widths are exactly the waypoint values at waypoints.
    """

    def __init__(
        self,
        path: ReferencePath,
        v_ref: np.ndarray | None = None,
        v_box: np.ndarray | None = None,
        body: tuple[float, float] | None = None,
    ) -> None:
        """``v_ref`` replaces the path's speed profile; ``v_box`` is an extra speed ceiling column;
        ``body = (rear, front)`` [m] adds the widths' minimum over the car's length behind/ahead."""
        self.closed = path.closed
        self.length = path.length
        v_ref_col = path.v_ref if v_ref is None else v_ref
        self.has_v_ref = v_ref_col is not None
        self.has_v_box = v_box is not None
        v = v_ref_col if v_ref_col is not None else np.zeros(path.n)
        vb = v_box if v_box is not None else np.zeros(path.n)
        self.has_body = body is not None
        if body:
            wl_b, wr_b = body_minimum(path, body, path.width_left), body_minimum(path, body, path.width_right)
        else:
            wl_b, wr_b = vb, vb
        table = np.column_stack(
            [path.kappa, path.width_left, path.width_right, v, path.x, path.y, path.psi, vb, wl_b, wr_b]
        )
        s = path.s
        if path.closed:
            turn = path.psi[-1] + path.kappa[-1] * path.ds - path.psi[0]
            psi_end = path.psi[0] + 2.0 * np.pi * np.round(turn / (2.0 * np.pi))
            last = table[0].copy()
            last[6] = psi_end
            table = np.vstack([table, last])
            s = np.append(s, path.length)
        self.s = s
        self.table = table
        self._linear = LinearTable(s, table)
        self.lap_turn = float(table[-1, 6] - table[0, 6])
        self._kernels: Any = None
        self._kernel_args: tuple[Any, ...] = ()
        self._kernel_source: LinearTable | None = None

    def use_kernels(self, kernels: Any) -> None:
        """Sample with the compiled kernel (:func:`mpc_tracking.mpc._kernels.sample_path`, the same numbers) when
        ``kernels`` is the module :func:`mpc_tracking.mpc.kernels.load` returns; None: numpy."""
        self._kernels = kernels
        self._kernel_source = None  # the table the kernel's arrays were taken from

    def kernel_args(self) -> tuple[Any, ...]:
        """The leading arguments of the compiled sample (:func:`mpc_tracking.mpc._kernels.sample_path`): the
        grid, table, its differences and inverse segment lengths (C-contiguous float64), whether it holds
        infinities, closed, length, the heading's turn per lap; taken again when the table was replaced (the grip
        estimate scales its speed columns)."""
        lin = self._linear
        if self._kernel_source is not lin:
            arrays = tuple(np.ascontiguousarray(a, dtype=np.float64) for a in (self.s, self.table, lin.delta,
                                                                                lin._inv_len))
            self._kernel_args = (*arrays, lin._has_inf, self.closed, self.length, self.lap_turn)
            self._kernel_source = lin
        return self._kernel_args

    def wrap(self, s: np.ndarray) -> np.ndarray:
        if self.closed:
            return np.mod(s, self.length)
        return np.minimum(np.maximum(s, 0.0), self.length)

    def sample(self, s: np.ndarray) -> PathSample:
        """Quantities at arc lengths ``s`` (K,) [m]."""
        if self._kernels is not None and s.dtype == np.float64 and s.ndim == 1 and s.size:
            r = np.empty((s.size, self.table.shape[1]))
            self._kernels.sample_path(*self.kernel_args(), 6, s, r)
            return self.packed(r)
        sw = self.wrap(s)
        r = self._linear(sw)
        psi = r[:, 6]
        if self.closed and (s[-1] >= self.length or s[0] < 0):
            psi = psi + np.floor(s / self.length) * self.lap_turn
        return self.packed(r, psi)

    def packed(self, r: np.ndarray, psi: np.ndarray | None = None) -> PathSample:
        """The :class:`PathSample` of the table's rows ``r`` (K, 10) at K arc lengths (views of its columns; ``psi``
        replaces the heading column, e.g. unwrapped by laps)."""
        return PathSample(
            r[:, 0], r[:, 1], r[:, 2], r[:, 3] if self.has_v_ref else None, r[:, 4], r[:, 5],
            r[:, 6] if psi is None else psi,
            r[:, 7] if self.has_v_box else None,
            r[:, 8] if self.has_body else None,
            r[:, 9] if self.has_body else None,
        )
