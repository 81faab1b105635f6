"""What a sweep ranks by: the tracking error once the start transient is over.

A run that starts off the line (``simulation.e_y0``, 1 m in ``demos/quickstart.yaml``) spends its
first metres converging; over a lap the RMS lateral error is then mostly that transient, the same
for every horizon, and a sweep ranked by it recommends from the start rather than from the
tracking. The *settled* metrics leave out the first :data:`SETTLE_FRACTION` of the path length
(one lap on a loop) of distance driven:

.. math::

   d_k = \\sum_{j<k} \\lVert p_{j+1} - p_j \\rVert, \\qquad
   \\mathrm{RMS}_\\text{settled}(e_y) = \\sqrt{\\operatorname{mean}_{k:\\, d_k \\ge f L}\\; e_{y,k}^2}

with :math:`p_k` the car's position at control step :math:`k`, :math:`L` the path length and
:math:`f` = :data:`SETTLE_FRACTION`. A run that never drives past :math:`f L` has NaN settled
metrics (and a sweep then ranks by the whole-run ``rms_e_y``).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from mpc_tracking.errors import InputError

__all__ = ["SETTLE_FRACTION", "SETTLED_FIELDS", "DEFAULT_METRIC", "settled_metrics"]

#: fraction of the path length (one lap) driven before the settled metrics start counting
SETTLE_FRACTION = 0.1
#: the fields :func:`settled_metrics` returns (columns of a sweep's rows)
SETTLED_FIELDS = ("rms_e_y_settled", "max_abs_e_y_settled", "settle_distance")
#: the metric a sweep recommends by unless told otherwise
DEFAULT_METRIC = "rms_e_y_settled"


def settled_metrics(result: Any, settle_fraction: float = SETTLE_FRACTION) -> dict[str, float]:
    """RMS and max ``|e_y|`` [m] after the first ``settle_fraction`` of the path length driven.

    Parameters
    ----------
    result : SimulationResult
        A closed-loop run (series ``x``, ``y``, ``e_y``, each shape (K,); its ``path``).
    settle_fraction : float
        Fraction in [0, 1) of the path length (one lap) left out at the start.

    Returns
    -------
    dict
        ``rms_e_y_settled`` and ``max_abs_e_y_settled`` [m] (NaN when the run never drove that
        far), ``settle_distance`` [m] (the distance left out).

    Raises
    ------
    InputError
        ``settle_fraction`` outside [0, 1).

    Examples
    --------
    >>> from mpc_tracking.scenario.core import default_scenario, run_scenario
    >>> run = run_scenario(default_scenario().with_overrides({"simulation.t_max": 1.0}))
    >>> m = settled_metrics(run, 0.0)
    >>> bool(abs(m["rms_e_y_settled"] - run.metrics["rms_e_y"]) < 1e-12)
    True
    """
    if isinstance(settle_fraction, bool) or not (isinstance(settle_fraction, (int, float))
                                                 and 0.0 <= settle_fraction < 1.0):
        raise InputError(f"settle_fraction: expected a fraction in [0, 1) of the path length, got {settle_fraction!r}")
    length = float(getattr(result.path, "length", math.nan)) if result.path is not None else math.nan
    settle = settle_fraction * length if math.isfinite(length) else 0.0
    nan = {"rms_e_y_settled": math.nan, "max_abs_e_y_settled": math.nan, "settle_distance": settle}
    if len(result) == 0:
        return nan
    s = result.series
    x, y, ey = (np.asarray(s[k], dtype=float) for k in ("x", "y", "e_y"))
    driven = np.concatenate([[0.0], np.cumsum(np.hypot(np.diff(x), np.diff(y)))])
    keep = (driven >= settle) & np.isfinite(ey)
    if not keep.any():
        return nan
    tail = ey[keep]
    return {"rms_e_y_settled": float(np.sqrt(np.mean(tail**2))), "max_abs_e_y_settled": float(np.max(np.abs(tail))),
            "settle_distance": settle}
