"""Optional compiled dependencies: whether they can be imported, checked without importing them.

One place for the check that the MPC's step kernels (:mod:`mpc_tracking.mpc.kernels`), the 3D car's
kernels (:mod:`mpc_tracking.models.plants.ackermann3d.batch_numba`) and the kinematic bicycle's compiled
substeps use to choose between compiled and pure-Python code. Standard library only.
"""
from __future__ import annotations

import importlib.util

__all__ = ["numba_available"]


def numba_available() -> bool:
    """True when numba (the optional extra ``mpc_tracking[fast]``) can be imported; it is not imported here.

    >>> isinstance(numba_available(), bool)
    True
    """
    return importlib.util.find_spec("numba") is not None
