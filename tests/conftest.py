"""Shared fixtures and settings of the test suite."""
from __future__ import annotations

import logging
import os
from pathlib import Path

import matplotlib
import pytest

from tests._shared import SHARED, SKIP_TRACKS

matplotlib.use("Agg")
os.environ.setdefault("MPLBACKEND", "Agg")

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _logging_levels_unchanged():
    """A test must not leave the package's or the root logger's level changed (use ``caplog.set_level``)."""
    loggers = [logging.getLogger(), logging.getLogger("mpc_tracking")]
    before = [lg.level for lg in loggers] + [logging.root.manager.disable]
    yield
    after = [lg.level for lg in loggers] + [logging.root.manager.disable]
    if after != before:
        for lg, level in zip(loggers, before, strict=False):
            lg.setLevel(level)
        logging.disable(before[-1])
        pytest.fail(f"logging levels changed by the test (root, mpc_tracking, disable): {before} -> {after}")


@pytest.fixture(scope="session")
def identified_sedan():
    """The 3D sedan (``preset: sedan``, mu 0.9) identified by :func:`mpc_tracking.identify` once per test session
    (about 5 s): its vehicle file's numbers (``.params``, the limits)."""
    import mpc_tracking as mt

    return mt.identify(mt.create_model("ackermann3d", {"preset": "sedan"}))


@pytest.fixture
def shared_dir() -> Path:
    """The read-only shared folder (``tests/_shared.py``); skips when its tracks are absent."""
    if not (SHARED / "tracks").is_dir():
        pytest.skip(SKIP_TRACKS)
    return SHARED


def _registered_backends() -> tuple[str, ...]:
    from mpc_tracking.mpc import backends

    return backends.available()


@pytest.fixture(params=_registered_backends())
def backend(request) -> str:
    """The name of each registered QP back end (``MPCSettings(solver=backend)``): a controller test
    that takes this fixture runs once per back end (OSQP, DAQP, and any registered later)."""
    return request.param
