"""A plain x, y table is read as a loop when its data close (issue 13: a closed loop in a CSV was read
as open unless ``closed=true`` was set); the file's own ``closed=`` and the argument still decide."""
from __future__ import annotations

import logging

import numpy as np
import pytest

import mpc_tracking as mt
from mpc_tracking.paths.io import read_xy


def _write(path, x, y, header=""):
    path.write_text(header + "".join(f"{a:.6f},{b:.6f}\n" for a, b in zip(x, y, strict=True)))
    return path


def test_a_typed_loop_is_read_closed_and_logged(tmp_path, caplog):
    th = np.linspace(0.0, 2 * np.pi, 40, endpoint=False)  # no repeated closing point
    f = _write(tmp_path / "loop.csv", 30 * np.cos(th), 20 * np.sin(th))
    with caplog.at_level(logging.INFO, logger="mpc_tracking"):
        p = mt.load_path(f, ds=0.5)
    assert p.closed and "read as a closed loop" in caplog.text
    # the same loop with its closing point repeated
    th = np.linspace(0.0, 2 * np.pi, 41)
    assert mt.load_path(_write(tmp_path / "loop2.csv", 30 * np.cos(th), 20 * np.sin(th)), ds=0.5).closed


def test_an_open_path_stays_open(tmp_path, caplog):
    s = np.linspace(0.0, 100.0, 50)
    f = _write(tmp_path / "s_curve.csv", s, 5 * np.sin(s / 15))
    with caplog.at_level(logging.INFO, logger="mpc_tracking"):
        p = mt.load_path(f, ds=0.5)
    assert not p.closed and "read as an open path" in caplog.text
    # a U-turn whose end is 6 spacings from its start is still open
    th = np.linspace(0.0, np.pi, 30)
    u = np.concatenate([np.linspace(-40, 0, 20)[:-1], 10 * np.sin(th), np.linspace(0, -40, 20)[1:]])
    v = np.concatenate([np.full(19, -10.0), -10 * np.cos(th), np.full(19, 10.0)])
    assert not read_xy(_write(tmp_path / "u.csv", u, v), ds=0.5).closed


@pytest.mark.parametrize("header, arg, want", [
    ("# mpc_tracking path: name=x; closed=false\n", None, False),  # the file says open
    ("", False, False),                                             # the argument says open
])
def test_the_file_or_the_argument_overrides(tmp_path, header, arg, want):
    th = np.linspace(0.0, 2 * np.pi, 40, endpoint=False)
    f = _write(tmp_path / "loop.csv", 30 * np.cos(th), 20 * np.sin(th), header)
    assert read_xy(f, ds=0.5, closed=arg).closed is want
