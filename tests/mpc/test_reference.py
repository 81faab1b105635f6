"""Whole-path speed ceilings (:func:`mpc_tracking.mpc.reference.path_speed_ceilings`): the speed-lag lead."""
from __future__ import annotations

import numpy as np

import mpc_tracking as mt
from mpc_tracking.mpc.reference import path_speed_ceilings

RADIUS, STRAIGHT = 20.0, 300.0


def _stadium(ds: float = 0.5) -> mt.ReferencePath:
    """Two straights of STRAIGHT m joined by half circles of RADIUS m (counter-clockwise)."""
    n_s, n_c = int(STRAIGHT / ds), int(np.pi * RADIUS / ds)
    xs = np.linspace(0.0, STRAIGHT, n_s, endpoint=False)
    th = np.linspace(-0.5 * np.pi, 0.5 * np.pi, n_c, endpoint=False)
    x = np.concatenate([xs, STRAIGHT + RADIUS * np.cos(th), STRAIGHT - xs, -RADIUS * np.cos(th)])
    y = np.concatenate([np.full(n_s, -RADIUS), RADIUS * np.sin(th), np.full(n_s, RADIUS), -RADIUS * np.sin(th)])
    return mt.ReferencePath(x, y, ds=ds, closed=True)


def test_ceilings_lead_by_the_lag_at_the_local_speed():
    """With a speed lag tau every ceiling holds (tau + T) v earlier, v the ceiling there: before the
    corner (ceiling sqrt(a_y R)) the corner speed starts about (tau + T) sqrt(a_y R) metres early,
    not (tau + T) v_max (the lead at top speed: 3x as long here)."""
    path = _stadium()
    st = mt.MPCSettings(v_max=35.0, a_y_max=6.0, accel_max=3.0, decel_max=6.0, friction_ellipse=True)
    tau = 1.0 / 3.0
    lead_time = tau + st.control_period
    _, v0 = path_speed_ceilings(path, st)
    _, v_lag = path_speed_ceilings(path, st, speed_lag=tau)
    assert v0 is not None and v_lag is not None
    assert np.all(v_lag <= v0 + 1e-12)
    v_corner = float(np.sqrt(6.0 * RADIUS))
    first = STRAIGHT / path.ds  # the first half circle starts here (index)
    before = np.arange(path.s.size) < first + 10
    # the first point at corner speed, without and with the lag (the spline's curvature dips a
    # little below the circle's at the joint: a 1e-2 tolerance)
    i0 = int(np.flatnonzero(before & (v0 <= 1.01 * v_corner))[0])
    i_lag = int(np.flatnonzero(before & (v_lag <= 1.01 * v_corner))[0])
    lead = (i0 - i_lag) * path.ds
    # (tau + T) v with v between the corner's speed and the ceiling where the lead starts
    assert lead_time * v_corner - 2 * path.ds <= lead <= lead_time * v0[i_lag] + 2 * path.ds
    assert lead < 0.5 * lead_time * st.v_max


def test_speed_reference_accelerates_at_constant_power():
    """Out of each half circle the reference (90 % of the limits) follows v^3 = v_c^3 + 3 (0.9 P/m) s
    until it brakes; with only a power limit the ceilings exist too."""
    path = _stadium(ds=1.0)
    power = 40.0
    st = mt.MPCSettings(v_max=60.0, a_y_max=6.0, decel_max=6.0, power_per_mass=power)
    v_ref, _ = path_speed_ceilings(path, st)
    v_free, _ = path_speed_ceilings(path, st.replace(power_per_mass=float("inf"), accel_max=10.0))
    assert v_ref is not None and v_free is not None
    assert np.all(v_ref <= v_free + 1e-9) and v_ref.max() < 0.9 * v_free.max()
    # the second straight starts where the first half circle ends (s = STRAIGHT + pi R)
    s0 = STRAIGHT + np.pi * RADIUS
    i0 = int(np.searchsorted(path.s, s0 + 5.0))
    seg = slice(i0, i0 + 40)  # 40 m of straight, before the braking zone
    v_c = v_ref[i0]
    expected = np.cbrt(v_c**3 + 3.0 * 0.9 * power * (path.s[seg] - path.s[i0]))
    np.testing.assert_allclose(v_ref[seg], expected, rtol=1e-6)
    assert (path_speed_ceilings(path, mt.MPCSettings(v_max=30.0, power_per_mass=power))[0]) is not None
