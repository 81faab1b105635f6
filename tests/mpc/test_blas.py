"""BLAS threads during the controller's step (``MPCSettings.blas_threads``, :mod:`mpc_tracking.mpc.blas`).

What is checked is the thread count BLAS reports (``threadpoolctl``) inside and after the step --
no timing. Every test first raises BLAS to two threads outside, so a limit that did nothing fails.
"""
from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
from threadpoolctl import threadpool_info, threadpool_limits

import mpc_tracking as mt
from mpc_tracking.errors import SettingsError
from mpc_tracking.mpc.blas import BlasLimit, blas_libraries


def _blas_threads() -> list[int]:
    return [i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"]


@pytest.fixture(scope="module")
def path():
    return mt.ReferencePath.from_corners([(0, 0), (40, 0), (40, 30), (0, 30)], closed=True)


def _inside_the_step(path, outer: int, **settings) -> tuple[list[int], list[int], list[int]]:
    """BLAS thread counts (before, during the back end's solve, after) of one ``SpatialMPC.solve`` (DAQP unless
    ``settings`` name another solver)."""
    settings.setdefault("solver", "daqp")
    return _counts(mt.SpatialMPC(path, settings=mt.MPCSettings(horizon=20, v_max=8.0, **settings)), outer)


def _counts(mpc: mt.SpatialMPC, outer: int) -> tuple[list[int], list[int], list[int]]:
    """BLAS thread counts (before, during the back end's solve, after) of one ``mpc.solve`` under ``outer`` threads."""
    seen: list[list[int]] = []
    solve = mpc.backend.solve

    def spy(*args, **kwargs):
        seen.append(_blas_threads())
        return solve(*args, **kwargs)

    mpc.backend.solve = spy  # type: ignore[method-assign]
    with threadpool_limits(outer, user_api="blas"):
        before = _blas_threads()
        sol = mpc.solve((1.0, 0.2, 0.0))
        after = _blas_threads()
    assert sol.success and len(seen) >= 1
    return before, seen[0], after


def test_the_step_runs_on_one_blas_thread_and_restores_the_count(path):
    before, during, after = _inside_the_step(path, 2)
    assert 2 in before  # the probe sees a count it can tell apart (a library built single-threaded stays at 1)
    assert set(during) == {1}
    assert after == before


@pytest.mark.parametrize("settings, limited", [
    ({"solver": "daqp"}, True),  # condensing, dense Cholesky
    ({"solver": "osqp", "compiled": "python"}, True),  # the numpy path
    ({"solver": "osqp"}, False),  # sparse OSQP on compiled kernels: no BLAS call in the step
])
def test_only_a_step_with_dense_algebra_limits_blas(path, settings, limited):
    mpc = mt.SpatialMPC(path, settings=mt.MPCSettings(horizon=20, v_max=8.0, **settings))
    assert mpc.blas_limit.threads == (1 if limited else 0)
    before, during, _ = _counts(mpc, 2)
    assert (set(during) == {1}) == limited and 2 in before


def test_blas_threads_zero_leaves_blas_alone(path):
    before, during, after = _inside_the_step(path, 2, blas_threads=0)
    assert during == before == after and 2 in during


def test_an_outer_lower_limit_is_not_raised(path):
    before, during, after = _inside_the_step(path, 1, blas_threads=2)
    assert set(during) == {1} and after == before


def test_the_controller_limits_every_blas_library_loaded_at_set_up(path):
    mpc = mt.SpatialMPC(path, settings=mt.MPCSettings(horizon=10, solver="daqp"))
    prefixes = {lib.prefix for lib in mpc.blas_limit.libraries}
    assert prefixes == {i["prefix"] for i in threadpool_info() if i["user_api"] == "blas"}
    assert "BlasLimit(threads=1" in repr(mpc.blas_limit)


def test_the_count_is_restored_when_the_scope_raises():
    with threadpool_limits(2, user_api="blas"):
        limit = BlasLimit(1)
        with pytest.raises(RuntimeError, match="inside"), limit:
            assert set(_blas_threads()) == {1}
            raise RuntimeError("inside")
        assert 2 in _blas_threads()


def test_nested_scopes_restore_in_order():
    with threadpool_limits(2, user_api="blas"):
        limit = BlasLimit(1)
        with limit:
            with limit:
                assert set(_blas_threads()) == {1}
            assert set(_blas_threads()) == {1}
        assert 2 in _blas_threads()


def test_a_copied_or_pickled_limit_finds_the_libraries_again():
    limit = BlasLimit(1)
    for other in (copy.deepcopy(limit), pickle.loads(pickle.dumps(limit))):
        assert other.threads == 1 and len(other.libraries) == len(blas_libraries()) >= 1


@pytest.mark.parametrize("bad", [-1, 1.5, True, "1", None])
def test_bad_thread_counts_are_refused(bad):
    with pytest.raises(ValueError, match="threads: expected an int >= 0"):
        BlasLimit(bad)


@pytest.mark.parametrize("bad", [-1, 1.5])
def test_the_setting_is_validated(bad):
    with pytest.raises(SettingsError, match="blas_threads"):
        mt.MPCSettings(blas_threads=bad)


def test_the_limit_does_not_change_the_plan(path):
    """One thread or two: the same QP, the same plan (to rounding of the dense products)."""
    plans = []
    for threads in (1, 0):
        mpc = mt.SpatialMPC(path, settings=mt.MPCSettings(horizon=20, v_max=8.0, solver="daqp",
                                                           blas_threads=threads))
        with threadpool_limits(2, user_api="blas"):
            plans.append(mpc.solve((1.0, 0.2, 0.0)).u)
    np.testing.assert_allclose(plans[0], plans[1], rtol=0, atol=1e-9)


def test_the_library_search_is_repeated_only_after_new_imports(monkeypatch):
    import sys
    import types

    import threadpoolctl

    searches = []
    real = threadpoolctl.ThreadpoolController

    class Counting(real):
        def __init__(self) -> None:
            searches.append(1)
            super().__init__()

    monkeypatch.setattr(threadpoolctl, "ThreadpoolController", Counting)
    first = blas_libraries(refresh=True)
    assert len(searches) == 1 and first
    assert [lib.prefix for lib in blas_libraries()] == [lib.prefix for lib in first]
    assert len(searches) == 1  # nothing imported since: the last search holds
    monkeypatch.setitem(sys.modules, "_blas_test_new_module", types.ModuleType("_blas_test_new_module"))
    blas_libraries()
    assert len(searches) == 2  # a module was imported: searched again
