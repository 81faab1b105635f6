"""Compiled (numba) stepping of the 3D Ackermann car: backend choice, constants, lazy compilation.

:class:`~mpc_tracking.models.plants.ackermann3d.batch.Ackermann3DBatch` and
:class:`~mpc_tracking.models.plants.ackermann3d.car.Ackermann3D` take ``backend="numpy" | "numba" | "auto"``:

``"numpy"``
    the vectorized numpy batch (:mod:`.batch`) and the pure-Python scalar path (:mod:`.scalar`);
``"numba"``
    the same equations compiled with numba (the optional extra ``pip install "mpc_tracking[fast]"``); an error
    when numba is not installed;
``"auto"``
    ``"numba"`` when numba can be imported, else ``"numpy"``.

The compiled kernels (:mod:`._numba_kernels`) evaluate the equations of the numpy batch term by term, one car at
a time; states agree with the numpy paths to a few 1e-16 relative per substep (reciprocals for divisions, libm vs
numpy's vectorized ``tanh``/``arctan``, the per-car choice of the rotation series).
``tests/models/plants/test_ackermann3d_batch_numba.py`` checks 1e-12 (relative, absolute near 0) after 200 steps
of 10 ms from random states in every regime (measured: at
most 0.07 of that tolerance); on trajectories that amplify rounding (e.g. ``rc_car_reference`` at its
``eps_v = 1e-3``, where a 1-ulp change of the start moves the wheel spin by 1e-6 within 2 s in numpy alone) no two
implementations agree to that level.

Compilation is lazy: the first step with the numba backend imports numba (about 0.3 s) and compiles the kernels
(about 6 s on a 2-core machine), or loads them from numba's on-disk cache (``cache=True``: ``__pycache__`` beside
this file, also from a non-editable install; numba falls back to its user cache directory, or ``NUMBA_CACHE_DIR``,
when that is not writable; about 0.5 s with the import). The time is logged (logger
``mpc_tracking.models.plants.ackermann3d.batch_numba``, level INFO) and kept in :func:`compile_seconds`.
Speed (``benchmarks/bench_ackermann3d_batch.py``, dt = 1 ms): 2.3-2.7x the numpy batch of 1000 cars and the scalar
single car, measured in the same run.
"""
from __future__ import annotations

import importlib
import importlib.util
import logging
import time
from types import ModuleType

import numpy as np

from mpc_tracking._optional import numba_available
from mpc_tracking.errors import ModelError
from mpc_tracking.models.plants.ackermann3d.params import Ackermann3DParams

__all__ = ["BACKENDS", "PRM_NAMES", "FLG_NAMES", "numba_available", "resolve_backend", "pack_constants",
           "load_kernels", "compile_seconds", "step_batch", "set_friction"]

logger = logging.getLogger(__name__)

_WHEELS = ("FL", "FR", "RL", "RR")
#: valid values of the ``backend`` argument
BACKENDS = ("numpy", "numba", "auto")

#: what the kernels' float array ``prm`` holds, in order (SI units; ``inv_pf0`` = 1 / (p F_z0) [1/N],
#: ``ca_gain`` [N/rad], ``mu_a`` [-], ``mu_b`` [1/N] of the tire load-sensitivity laws; ``contact_z`` = -h and
#: ``rx_*``, ``ry_*`` the contact points in the body frame [m])
PRM_NAMES = ("wheel_radius", "eps_v", "k_n", "c_n", "mu", "c_kappa", "c_alpha", "z0", "eps_force", "wheel_inertia",
             "wheel_damping", "mass", "gravity", "I_xx", "I_yy", "I_zz", "inv_pf0", "ca_gain", "mu_a", "mu_b",
             "arb_front", "arb_rear", "lateral_force", "contact_z", "rx_FL", "rx_FR", "rx_RL", "rx_RR", "ry_FL",
             "ry_FR", "ry_RL", "ry_RR")
#: the model options in the kernels' integer array ``flg`` (1 = on), in order
FLG_NAMES = ("full_damping", "max_denominator", "slip_squash", "clip", "implicit_wheels", "anti_roll_bars",
             "load_c_alpha", "load_mu")

_MU_AT, _MU_A_AT, _MU_B_AT = (PRM_NAMES.index(k) for k in ("mu", "mu_a", "mu_b"))

_KERNELS: ModuleType | None = None
_COMPILE_S: float | None = None




def resolve_backend(backend: str, where: str) -> str:
    """The backend actually used, ``"numpy"`` or ``"numba"``, for the requested ``backend``.

    Parameters
    ----------
    backend : {"numpy", "numba", "auto"}
        Requested backend (see the module doc).
    where : str
        Name of the caller, used in error messages.

    Raises
    ------
    ModelError
        ``backend`` is not one of :data:`BACKENDS`, or ``"numba"`` while numba is not installed.
    """
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise ModelError(f"{where}: backend must be one of {list(BACKENDS)}, got {backend!r}")
    if backend == "numpy":
        return "numpy"
    if numba_available():
        return "numba"
    if backend == "numba":
        raise ModelError(f"{where}: backend='numba' needs numba, which is not installed; "
                         'pip install "mpc_tracking[fast]" (or use backend="numpy" or "auto")')
    logger.debug("%s: numba is not installed, backend='auto' uses numpy", where)
    return "numpy"


def pack_constants(P: Ackermann3DParams) -> tuple[np.ndarray, np.ndarray]:
    """The parameters as the kernels read them.

    Parameters
    ----------
    P : Ackermann3DParams
        Parameters as the physics uses them (``params.numeric()``: float32-rounded when ``float32_casts``).

    Returns
    -------
    prm : ndarray (32,)
        Float constants, ordered as :data:`PRM_NAMES`.
    flg : ndarray (8,) of int64
        Model options as 0/1, ordered as :data:`FLG_NAMES`.
    """
    pts = P.contact_points()
    f0 = P.nominal_load
    load_c = P.c_alpha_peak_load > 0
    x0 = 1.0 / P.c_alpha_peak_load if load_c else 1.0
    I_xx, I_yy, I_zz = P.inertia
    values = dict(  # same constants as the numpy batch and the scalar path
        wheel_radius=P.wheel_radius, eps_v=P.eps_v, k_n=P.k_n, c_n=P.c_n, mu=P.mu, c_kappa=P.c_kappa,
        c_alpha=P.c_alpha, z0=P.z0, eps_force=P.eps_force, wheel_inertia=P.wheel_inertia,
        wheel_damping=P.wheel_damping, mass=P.mass, gravity=P.gravity, I_xx=I_xx, I_yy=I_yy, I_zz=I_zz,
        inv_pf0=1.0 / (P.c_alpha_peak_load * f0) if load_c else 0.0, ca_gain=P.c_alpha * (1.0 + x0 * x0) / x0,
        mu_a=P.mu * (1.0 + P.mu_load), mu_b=P.mu * P.mu_load / f0, arb_front=P.arb_front, arb_rear=P.arb_rear,
        lateral_force=P.lateral_force, contact_z=pts[0, 2],
        **{f"r{axis}_{wheel}": pts[i, k] for k, axis in enumerate("xy") for i, wheel in enumerate(_WHEELS)})
    options = dict(
        full_damping=P.contact_damping == "full", max_denominator=P.slip_denominator == "max",
        slip_squash=bool(P.slip_squash), clip=P.friction_limit == "clip", implicit_wheels=P.wheel_update == "implicit",
        anti_roll_bars=P.arb_front > 0 or P.arb_rear > 0, load_c_alpha=load_c, load_mu=P.mu_load > 0)
    prm = np.array([values[k] for k in PRM_NAMES], dtype=np.float64)
    flg = np.array([options[k] for k in FLG_NAMES], dtype=np.int64)
    return prm, flg


def set_friction(prm: np.ndarray, mu: float, P: Ackermann3DParams) -> None:
    """Write the road friction ``mu`` [-] into the kernels' constants ``prm`` (from :func:`pack_constants`), in
    place: ``mu`` and the load-sensitivity terms ``mu_a``, ``mu_b`` (the same numbers as :func:`pack_constants`
    of parameters with that ``mu``), so one compiled kernel steps on any friction."""
    if P.float32_casts:
        mu = float(np.float32(mu))
    prm[_MU_AT] = mu
    prm[_MU_A_AT] = mu * (1.0 + P.mu_load)
    prm[_MU_B_AT] = mu * P.mu_load / P.nominal_load


def load_kernels() -> ModuleType:
    """The compiled kernels (:mod:`._numba_kernels`), compiled or loaded from numba's cache on the first call.

    Raises
    ------
    ModelError
        numba is not installed.
    """
    global _KERNELS, _COMPILE_S
    if _KERNELS is None:
        if not numba_available():
            raise ModelError('ackermann3d: the numba backend needs numba; pip install "mpc_tracking[fast]"')
        t0 = time.perf_counter()
        mod = importlib.import_module("mpc_tracking.models.plants.ackermann3d._numba_kernels")
        _COMPILE_S = time.perf_counter() - t0
        expected = {"prm": {k: i for i, k in enumerate(PRM_NAMES)}, "flg": {k: i for i, k in enumerate(FLG_NAMES)}}
        if expected != mod.LAYOUT:  # pragma: no cover - a development error
            raise RuntimeError("ackermann3d: _numba_kernels.LAYOUT does not match batch_numba.PRM_NAMES / FLG_NAMES")
        _KERNELS = mod
        logger.info("ackermann3d: numba kernels ready in %.2f s (import, then compile or load from the cache)",
                    _COMPILE_S)
    return _KERNELS


def compile_seconds() -> float | None:
    """Wall time [s] the first :func:`load_kernels` took (import numba + compile or cache load); None before."""
    return _COMPILE_S


def step_batch(p: np.ndarray, R: np.ndarray, v: np.ndarray, w: np.ndarray, omega: np.ndarray, c: np.ndarray,
               s: np.ndarray, tau: np.ndarray, brake: np.ndarray, nsub: int, h: float, prm: np.ndarray,
               flg: np.ndarray) -> None:
    """``nsub`` semi-implicit Euler substeps of length ``h`` [s] of ``n`` cars, in place (compiled).

    Parameters
    ----------
    p, v, w : ndarray (3, n), C-contiguous float64
        World CG position [m], world CG velocity [m/s], body angular velocity [rad/s]; updated in place.
    R : ndarray (3, 3, n), C-contiguous float64
        Body -> world rotations; updated in place (not re-orthonormalized: the caller's job, as in the numpy batch).
    omega : ndarray (4, n), C-contiguous float64
        Wheel spin rates [rad/s] (FL, FR, RL, RR); updated in place.
    c, s : ndarray (4, n)
        Cosine and sine of the wheel angles.
    tau, brake : ndarray (4, n) or (4, 1)
        Drive torques [N m] (after the drive mask) and friction-brake magnitudes [N m] (>= 0); (4, 1) = every car.
    nsub : int
        Number of substeps.
    h : float
        Substep [s].
    prm, flg : ndarray
        From :func:`pack_constants`.

    Raises
    ------
    ModelError
        An array has the wrong shape, dtype or memory layout (the kernel does not check bounds).
    """
    n = c.shape[1] if c.ndim == 2 else -1
    m = tau.shape[1] if tau.ndim == 2 else -1
    shapes = {"p": (p, (3, n)), "R": (R, (3, 3, n)), "v": (v, (3, n)), "w": (w, (3, n)), "omega": (omega, (4, n)),
              "c": (c, (4, n)), "s": (s, (4, n)), "tau": (tau, (4, m)), "brake": (brake, (4, m))}
    for name, (a, shape) in shapes.items():
        if (a.shape != shape or a.dtype != np.float64 or not a.flags.c_contiguous or not a.flags.writeable or n < 1
                or m not in (1, n)):
            raise ModelError(f"ackermann3d numba step: {name} must be a writeable C-contiguous float64 array of shape "
                             f"{shape if n >= 1 else '(..., n)'} (tau, brake: (4, n) or (4, 1)), got "
                             f"{a.dtype} {a.shape}")
    load_kernels().step_batch(p, R, v, w, omega, c, s, tau, brake, int(nsub), float(h), prm, flg)
