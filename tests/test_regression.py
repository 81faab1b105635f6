"""Stored closed-loop regression: five short runs must reproduce their stored metrics.

Values and tolerances live in ``tests/regression/closed_loop.json``, written by
``tests/regression/generate.py`` (its docstring says how the tolerances come from measured spread).
"""
from __future__ import annotations

import importlib.util
import json
import logging
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent / "regression"
_spec = importlib.util.spec_from_file_location("regression_generate", HERE / "generate.py")
generate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate)
STORED = json.loads((HERE / "closed_loop.json").read_text())


def test_stored_cases_are_the_script_cases():
    assert set(STORED) - {"_about"} == set(generate.CASES)


@pytest.mark.parametrize("name", sorted(generate.CASES))
def test_closed_loop_metrics_match_the_stored_run(name, caplog):
    caplog.set_level(logging.ERROR, logger="mpc_tracking")
    got = generate.run_case(name)
    stored = STORED[name]
    assert set(got) == set(stored)
    off = {k: (got[k], e["value"], e["tol"]) for k, e in stored.items() if not abs(got[k] - e["value"]) <= e["tol"]}
    assert not off, f"{name}: metric (got, stored, tol): {off}"
