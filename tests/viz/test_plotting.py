"""Static figures: car geometry (analytic), figures produced and not blank, no pyplot state."""
from __future__ import annotations

import numpy as np
import pytest

from mpc_tracking.models.prediction.spatial_bicycle import VehicleParams
from mpc_tracking.scenario.core import default_scenario, run_scenario
from mpc_tracking.viz.plotting import (
    car_outline,
    draw_car,
    new_figure,
    plot_path,
    plot_path_view,
    plot_timeseries,
    plot_track,
)


@pytest.fixture(scope="module")
def result():
    sc = default_scenario().with_overrides({"simulation.t_max": 3.0, "controller.horizon": 15})
    r = run_scenario(sc)
    r.info["obstacles"] = [
        {"type": "circle", "center": [0.0, -20.0], "radius": 1.0, "velocity": None},
        {"type": "polygon", "points": [[10, 18], [14, 18], [14, 22]], "velocity": None},
    ]
    return r


def _pixels(fig) -> np.ndarray:
    fig.canvas.draw()
    return np.asarray(fig.canvas.buffer_rgba())[..., :3].astype(float)


def test_car_outline_rear_axle_reference():
    v = VehicleParams(wheelbase=2.7, length=4.5, width=1.8, rear_overhang=0.9)
    c = car_outline(0.0, 0.0, 0.0, v)
    assert np.allclose(c, [[-0.9, -0.9], [3.6, -0.9], [3.6, 0.9], [-0.9, 0.9]])
    # heading pi/2: the body points along +y; rear bumper 0.9 m behind the axle
    c = car_outline(1.0, 2.0, np.pi / 2, v)
    assert np.allclose(c, [[1.9, 1.1], [1.9, 5.6], [0.1, 5.6], [0.1, 1.1]])


def test_draw_car_ellipse_centred_ahead_and_contains_body():
    v = VehicleParams()
    fig = new_figure()
    ax = fig.add_subplot()
    body, ell = draw_car(ax, 5.0, -1.0, 0.3, v)
    a, b = v.safety_ellipse
    assert ell.width == pytest.approx(2 * a) and ell.height == pytest.approx(2 * b)
    assert np.allclose(ell.center, [5.0 + v.center_offset * np.cos(0.3), -1.0 + v.center_offset * np.sin(0.3)])
    assert ell.angle == pytest.approx(np.rad2deg(0.3))
    # every body corner lies inside (on) the ellipse
    c = car_outline(5.0, -1.0, 0.3, v) - np.array(ell.center)
    R = np.array([[np.cos(0.3), np.sin(0.3)], [-np.sin(0.3), np.cos(0.3)]])
    local = c @ R.T
    assert np.all((local[:, 0] / a) ** 2 + (local[:, 1] / b) ** 2 <= 1 + 1e-9)


def test_track_view_not_blank_and_draws_cars(result):
    fig, ax = plot_track(result, instants=[0, len(result) - 1])
    px = _pixels(fig)
    assert px.std() > 10
    polys = [p for p in ax.patches if type(p).__name__ == "Polygon"]
    ells = [p for p in ax.patches if type(p).__name__ == "Ellipse"]
    assert len(ells) == 2 and len(polys) >= 3  # 2 cars + the obstacle polygon
    assert any(type(p).__name__ == "Circle" for p in ax.patches)


def test_timeseries_has_five_panels_with_bounds(result):
    fig, axes = plot_timeseries(result)
    assert len(axes) == 5
    assert _pixels(fig).std() > 10
    labels = [ln.get_label() for ln in axes[0].lines]
    assert "corridor bounds" in labels
    assert len(axes[3].lines) == 3  # delta + two limits


def test_timeseries_adds_a_grip_panel_when_the_run_logged_the_grip(result):
    """A run with grip estimation (mu_est, grip_share) on a road whose friction varies (mu_true) gets a sixth panel
    with the three; given five axes, the grip is left out; a run without them keeps five panels (above)."""
    import copy

    r = copy.copy(result)
    n = len(result)
    r.series = {**result.series, "mu_est": np.full(n, 0.62), "mu_true": np.full(n, 0.6),
                "grip_share": np.linspace(1.0, 0.67, n)}
    fig, axes = plot_timeseries(r)
    assert len(axes) == 6 and _pixels(fig).std() > 10
    lines = {ln.get_label(): ln for ln in axes[5].lines}
    assert set(lines) == {"mu (road)", "mu (estimate)", "share of the limits in use"}
    np.testing.assert_array_equal(lines["share of the limits in use"].get_ydata(), r.series["grip_share"])
    assert axes[5].get_xlabel() == "t [s]" and axes[4].get_xlabel() == ""
    fig5 = new_figure()
    fig5, axes5 = plot_timeseries(r, axes=fig5.subplots(5, 1, sharex=True))
    assert len(axes5) == 5 and axes5[4].get_xlabel() == "t [s]"


def test_path_view(result):
    fig, axes = plot_path_view(result.path)
    assert len(axes) == 4 and _pixels(fig).std() > 10
    k_line = axes[1].lines[0]
    assert np.allclose(k_line.get_ydata(), result.path.kappa)


def test_given_axes_are_used_and_no_pyplot_figures(result):
    import matplotlib.pyplot as plt

    before = plt.get_fignums()
    fig = new_figure()
    ax = fig.add_subplot()
    f2, ax2 = plot_path(result.path, ax=ax)
    assert f2 is fig and ax2 is ax
    plot_track(result)
    assert plt.get_fignums() == before


def test_timeseries_shows_the_path_speed_profile():
    sc = default_scenario().with_overrides({"simulation.t_max": 1.0, "controller.horizon": 10, "speed_profile.enabled": True})
    r = run_scenario(sc)
    fig, axes = plot_timeseries(r)
    assert "v_ref (path profile)" in [ln.get_label() for ln in axes[2].lines]


def test_path_view_draws_the_input_points_against_the_fit():
    """Issue 26: the points a path was fitted to are drawn, the one it strays furthest from ringed."""
    import mpc_tracking as mt

    corners = [[0, 0], [60, 0], [60, 30], [0, 30]]
    path = mt.ReferencePath.from_corners(corners)
    fig, axes = plot_path_view(path)
    drawn = [ln for ln in axes[0].lines if ln.get_label().startswith("input points")]
    assert len(drawn) == 1 and np.allclose(np.column_stack(drawn[0].get_data()), corners)
    ringed = [ln for ln in axes[0].lines if ln.get_label().startswith("furthest from the path")]
    assert ringed and f"{path.fit_deviation:.3g} m" in ringed[0].get_label()
    _, axes = plot_path_view(path, input_points=False)
    assert not [ln for ln in axes[0].lines if ln.get_label().startswith("input points")]
    waypoints_only = mt.ReferencePath.from_waypoints(path.s, path.x, path.y, path.psi, path.kappa, closed=True,
                                                     length=path.length)
    _, axes = plot_path_view(waypoints_only)  # no input points: nothing drawn, no error
    assert not [ln for ln in axes[0].lines if ln.get_label().startswith("input points")]
