"""QP back ends of the controller behind one contract (:class:`QPBackend`), registered by name.

``MPCSettings(solver=name)`` picks one; :func:`available` lists them; :func:`register` adds one::

    from mpc_tracking.mpc import backends
    backends.register("mine", MyBackend)       # a QPBackend subclass
    mt.MPCSettings(solver="mine")               # (MPCSettings checks the name against its own list today)

Built in: ``"osqp"`` (:class:`~mpc_tracking.mpc.backends.osqp.OSQPBackend`, the default) and
``"daqp"`` (:class:`~mpc_tracking.mpc.backends.daqp.DAQPBackend`).
"""
from __future__ import annotations

from mpc_tracking.mpc.backends.base import (
    BackendResult,
    FaultInjection,
    QPBackend,
    QPStructure,
    available,
    get,
    register,
)
from mpc_tracking.mpc.backends.daqp import DAQPBackend
from mpc_tracking.mpc.backends.osqp import OSQPBackend

__all__ = ["QPBackend", "QPStructure", "BackendResult", "FaultInjection", "OSQPBackend", "DAQPBackend",
           "register", "get", "available"]

register(OSQPBackend.name, OSQPBackend)
register(DAQPBackend.name, DAQPBackend)
