"""The path-offset formula (:mod:`mpc_tracking.paths.geometry`): analytic truths and its users agree with it."""
from __future__ import annotations

import numpy as np
import pytest

import mpc_tracking as mt
from mpc_tracking.paths.geometry import left_normal, offset_point


def test_offset_is_perpendicular_to_the_heading_and_as_long_as_e_y():
    rng = np.random.default_rng(1)
    x, y, psi, e = rng.normal(size=(4, 50))
    p = offset_point(x, y, psi, e)
    d = p - np.column_stack([x, y])
    np.testing.assert_allclose(np.hypot(d[:, 0], d[:, 1]), np.abs(e), atol=1e-12)
    np.testing.assert_allclose(d[:, 0] * np.cos(psi) + d[:, 1] * np.sin(psi), 0.0, atol=1e-12)
    # positive e_y is to the left: the cross product heading x offset is positive
    np.testing.assert_array_equal(np.sign(np.cos(psi) * d[:, 1] - np.sin(psi) * d[:, 0]), np.sign(e))


@pytest.mark.parametrize(("psi", "expected"), [(0.0, (0.0, 1.0)), (np.pi / 2, (-1.0, 0.0)), (np.pi, (0.0, -1.0))])
def test_left_normal_of_the_axes(psi, expected):
    np.testing.assert_allclose(left_normal(psi), expected, atol=1e-15)


def test_broadcasts_a_scalar_offset_over_points():
    p = offset_point(np.zeros(3), np.arange(3.0), 0.0, 2.0)
    assert p.shape == (3, 2)
    np.testing.assert_allclose(p, [[0.0, 2.0], [0.0, 3.0], [0.0, 4.0]])
    assert offset_point(0.0, 0.0, 0.0, 1.0).shape == (2,)
    # x a scalar, y an array: the two coordinates broadcast against each other
    np.testing.assert_allclose(offset_point(1.0, np.arange(3.0), 0.0, 1.0), [[1.0, 1.0], [1.0, 2.0], [1.0, 3.0]])


def test_point_at_is_the_offset_of_the_interpolated_point():
    th = np.linspace(0, 2 * np.pi, 200, endpoint=False)
    path = mt.ReferencePath(10 * np.cos(th), 10 * np.sin(th), closed=True, ds=0.5)
    s = np.linspace(0.0, path.length, 17)
    p = path.point_at(s, 1.5)  # on a counter-clockwise circle of radius 10, 1.5 m left is radius 8.5
    np.testing.assert_allclose(np.hypot(p[:, 0], p[:, 1]), 8.5, rtol=2e-3)
    q = path.interpolate(s)
    np.testing.assert_array_equal(p, offset_point(q["x"], q["y"], q["psi"], 1.5))
