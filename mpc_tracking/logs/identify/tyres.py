"""The tyre fit of a log: the roles it needs, the steering angle the wheels turned to, then
:func:`mpc_tracking.logs.tyres.fit_tyres` (axle stiffness and grip peak)."""
from __future__ import annotations

from typing import Any

from mpc_tracking.logs.identify.result import LogIdentification
from mpc_tracking.logs.identify.steering import shift
from mpc_tracking.logs.table import LogTable

__all__ = ["identify_tyres"]


def identify_tyres(table: LogTable, found: dict[str, str | None], dt: float, split: int, params: Any, v_min: float,
                   out: LogIdentification) -> None:
    """Fit the axle stiffness and the grip peak (``tyre_B_f``, ``tyre_B_r``, ``mu``) where the drive excites them.

    The steering angle is the feedback signal when the log has one, else the command delayed and offset as
    :func:`~mpc_tracking.logs.identify.steering.identify_steering` found (so that runs first).

    Parameters
    ----------
    table : LogTable
        The log, on one time grid.
    found : dict of str -> str or None
        Role (:data:`~mpc_tracking.logs.identify.SIGNALS`) -> column of ``table``, None when the log has none.
    dt : float
        Sample period of ``table`` [s].
    split : int
        Samples ``[0, split)`` are fitted on, the rest is the hold-out.
    params : DynamicParams or None
        The car's geometry; None: nothing is fitted (named in ``out.not_excited``).
    v_min : float
        Slowest speed [m/s] of the samples fitted.
    out : LogIdentification
        Filled in place: the values, or why each is not excited (``out.not_excited``), and the RMS errors
        (``out.fitted``, ``out.holdout``).
    """
    from mpc_tracking.logs.tyres import fit_tyres

    keys = ("tyre_B_f", "tyre_B_r", "mu")
    missing = [role for role in ("v", "vy", "yaw_rate") if found[role] is None]
    if params is None:
        why = "needs the car's geometry (mass, l_f, l_r, h_cg, I_z): give base= (identify --log --base)"
    elif missing:
        why = f"the log has no {' and no '.join(missing)} signal"
    elif found["steer"] is None and out.steering_delay is None:
        why = "no steering angle: no steering feedback, and the steering command's delay was not identified"
    else:
        why = ""
    if why:
        out.not_excited.update(dict.fromkeys(keys, why))
        return
    if found["steer"] is not None:
        delta = table[found["steer"]]
    else:  # the command as the wheels turned it: delayed and offset as identified
        cmd = table[found["delta_cmd"]]  # type: ignore[index]
        m = round((out.steering_delay or 0.0) / dt)
        delta = shift(cmd, m) + (out.steering_offset or 0.0)
    fit = fit_tyres(table.t, table[found["v"]], table[found["vy"]], table[found["yaw_rate"]],  # type: ignore[index]
                    delta, split, params, v_min)
    out.tyre_B_f, out.tyre_B_r, out.mu = fit.B_f, fit.B_r, fit.mu
    out.cornering_stiffness_f, out.cornering_stiffness_r = fit.stiffness_f, fit.stiffness_r
    out.not_excited.update(fit.not_excited)
    out.fitted.update(fit.fitted)
    out.holdout.update(fit.holdout)
