"""The scalar projection's compiled walk (numba, once the process has loaded numba) gives the pure-Python walk's
numbers, including where the walk gives up and the global search takes over."""
from __future__ import annotations

import math
import subprocess
import sys

import numba  # noqa: F401 - loaded, so the compiled walk is used
import numpy as np
import pytest

from mpc_tracking import ReferencePath
from mpc_tracking.paths import projection
from mpc_tracking.paths.io import load_path


def _paths() -> list[ReferencePath]:
    rng = np.random.default_rng(3)
    a = np.linspace(0.0, 4.0, 60)
    wiggly = ReferencePath(20.0 * a, 6.0 * np.sin(1.7 * a) + rng.normal(0.0, 0.05, a.size), ds=0.4)  # open
    return [load_path("oval", ds=0.5), wiggly]


@pytest.mark.parametrize("path", _paths(), ids=["oval (closed)", "wiggly (open)"])
def test_compiled_walk_equals_python(path):
    assert projection.compiled_walk() is not None
    rng = np.random.default_rng(0)
    s_true = rng.uniform(-5.0, path.length + 5.0, 400)
    pts = path.point_at(np.clip(s_true, 0.0, path.length), rng.uniform(-3.0, 3.0, s_true.size))
    hints = s_true + rng.normal(0.0, 2.0, s_true.size)
    hints[::25] += 0.4 * path.length  # stale hints: the walk leaves its window
    psi = rng.uniform(-4.0, 4.0, s_true.size)
    found = 0
    for (x, y), hint, h in zip(pts, hints, psi, strict=True):
        for window in (None, 6.0):
            path.projection_code = "python"
            ref = path.project(float(x), float(y), float(h), s_hint=float(hint), window=window)
            ref_plain = path._project_scalar(float(x), float(y), None, float(hint), window)
            path.projection_code = "auto"
            got = path.project(float(x), float(y), float(h), s_hint=float(hint), window=window)
            got_plain = path._project_scalar(float(x), float(y), None, float(hint), window)
            assert (got_plain is None) == (ref_plain is None)
            if got_plain is not None:
                found += 1
                assert got_plain.e_psi == 0.0
            for a, b in zip(got, ref, strict=True):
                assert math.isclose(a, b, rel_tol=0.0, abs_tol=1e-12)
    assert 0 < found < 2 * s_true.size  # both outcomes of the walk were compared


def test_a_path_alone_does_not_import_numba():
    code = ("import sys, mpc_tracking as mt; p = mt.load_path('oval', ds=0.5); p.project(1.0, 2.0, 0.0, s_hint=3.0); "
            "print('numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
