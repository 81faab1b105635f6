"""The random circuit generator of benchmarks/circuits.py: closed, non-self-intersecting, realistic, seeded."""
from __future__ import annotations

import numpy as np
import pytest

from tests._shared import generated_circuits


@pytest.fixture(scope="module")
def circuits():
    return generated_circuits()


@pytest.fixture(scope="module")
def sample(circuits):
    return circuits.generate_circuits(6, seed=3)


def test_closed_loops_one_turn(sample):
    for p in sample:
        assert p.closed
        gap = np.hypot(p.x[0] - p.x[-1], p.y[0] - p.y[-1])
        assert gap < 1.5 * p.ds, p.name  # the last waypoint is one step before the first
        turn = p.psi[-1] + p.kappa[-1] * p.ds - p.psi[0]
        assert turn == pytest.approx(2.0 * np.pi, abs=0.05), p.name


def test_no_self_intersection(circuits, sample):
    for p in sample:
        half = np.maximum(p.width_left, p.width_right)
        assert not circuits.self_overlap(p.x, p.y, half), p.name


def test_overlap_check_finds_a_figure_eight(circuits):
    t = np.linspace(0.0, 2.0 * np.pi, 2000, endpoint=False)
    x, y = 300.0 * np.sin(t), 150.0 * np.sin(2.0 * t)  # a lemniscate crosses itself at the origin
    assert circuits.self_overlap(x, y, np.full(t.size, 7.0))
    assert not circuits.self_overlap(300.0 * np.cos(t), 150.0 * np.sin(t), np.full(t.size, 7.0))


def test_lengths_curvature_widths_like_real_circuits(circuits, sample):
    lo, hi = circuits.LENGTH_RANGE
    for p in sample:
        k = np.abs(p.kappa)
        assert lo <= p.length <= hi, p.name
        assert 1.0 / k.max() >= 0.9 * circuits.MIN_RADIUS, p.name  # spline fit may tighten a little
        assert k.max() > 1.0 / 30.0, p.name  # at least one hairpin
        straight = float(np.mean(k < 1e-3))
        assert 0.3 <= straight <= 0.75, p.name
        w = p.width_left + p.width_right
        assert circuits.WIDTH_RANGE[0] - 1e-9 <= w.min() and w.max() <= circuits.WIDTH_RANGE[1] + 0.7, p.name
        assert w.max() - w.min() > 0.5, p.name  # widths vary along the lap


def test_reproducible_by_seed(circuits):
    a = circuits.generate_circuit(np.random.default_rng(11))
    b = circuits.generate_circuit(np.random.default_rng(11))
    c = circuits.generate_circuit(np.random.default_rng(12))
    assert np.array_equal(a.x, b.x) and np.array_equal(a.width_left, b.width_left)
    assert a.length != c.length


def test_bad_rng(circuits):
    with pytest.raises(TypeError, match="Generator"):
        circuits.generate_circuit(7)


def _straight_runs(kappa: np.ndarray, limit: float) -> list[int]:
    """Lengths (points) of the runs of |kappa| < limit around a closed loop."""
    straight = np.abs(kappa) < limit
    k0 = int(np.argmin(straight))
    runs, run = [], 0
    for i in np.r_[k0:kappa.size, 0:k0]:
        if straight[i]:
            run += 1
        else:
            runs.append(run)
            run = 0
    return runs + [run]


def test_a_lap_started_on_the_longest_straight(circuits, sample):
    """The same loop renumbered to start 5 m into its longest straight: as long, its first stretch straight for
    nearly the longest run of straight points the loop has."""
    for p in sample[:3]:
        q = circuits.start_on_longest_straight(p)
        assert q.closed and q.name == p.name + "s" and q.length == pytest.approx(p.length, rel=1e-3)
        longest = max(_straight_runs(p.kappa, circuits.STRAIGHT_KAPPA)) * p.ds
        ahead = int(np.argmax(np.abs(q.kappa) >= circuits.STRAIGHT_KAPPA)) * q.ds  # straight from the start on
        assert longest - 5.0 - 3.0 <= ahead <= longest, (p.name, ahead, longest)
        i = int(np.argmin(np.hypot(p.x - q.x[0], p.y - q.y[0])))
        assert np.hypot(p.x[i] - q.x[0], p.y[i] - q.y[0]) < 1e-6  # a waypoint of the loop


def test_start_on_the_longest_straight_needs_a_loop(circuits):
    import mpc_tracking as mt

    open_path = mt.ReferencePath(np.linspace(0.0, 100.0, 101), np.zeros(101), ds=1.0)
    with pytest.raises(ValueError, match="not closed"):
        circuits.start_on_longest_straight(open_path)
