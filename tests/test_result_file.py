"""The result file format (:mod:`mpc_tracking.result_file`): lossless round trip, one clear error per defect."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import mpc_tracking as mt
from mpc_tracking.errors import InputError
from mpc_tracking.result_file import PATH_KEYS, read_result, write_result
from mpc_tracking.results import SERIES, SimulationResult


def _result(n: int = 12, horizon: int = 4, widths: float | None = 3.0) -> SimulationResult:
    """A small result built by hand (no closed loop): every series, a path, a vehicle."""
    rng = np.random.default_rng(0)
    series = {k: rng.normal(size=n) for k in SERIES}
    series["t"] = np.arange(n) * 0.05
    series["status"] = np.zeros(n)
    th = np.linspace(0, 2 * np.pi, 80, endpoint=False)
    path = mt.ReferencePath(20 * np.cos(th), 20 * np.sin(th), closed=True, ds=1.0,
                            width_left=widths, width_right=widths)
    return SimulationResult(series=series, horizon_xy=rng.normal(size=(n, horizon + 1, 2)), reason="completed",
                            laps_completed=1, lap_times=[3.5], info={"control_period": 0.05, "name": "circle"},
                            path=path, vehicle=mt.VehicleParams(wheelbase=2.7), message="")


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> Path:
    return _result().save(tmp_path_factory.mktemp("result") / "run.npz")


def test_round_trip_keeps_every_array_and_field(good):
    res = _result()
    back = SimulationResult.load(good)
    assert back.reason == res.reason and back.laps_completed == 1 and back.lap_times == [3.5]
    assert back.info == res.info and back.vehicle == res.vehicle and back.message == ""
    assert set(back.series) == set(SERIES)
    for k in SERIES:
        np.testing.assert_array_equal(back.series[k], res.series[k])
    np.testing.assert_array_equal(back.horizon_xy, res.horizon_xy)
    for attr in ("s", "x", "y", "psi", "kappa", "width_left", "width_right"):
        np.testing.assert_allclose(getattr(back.path, attr), getattr(res.path, attr))
    assert back.path.closed and back.path.length == pytest.approx(res.path.length)


def test_read_result_gives_the_constructor_arguments(good):
    fields = read_result(good, SERIES)
    assert set(fields) == {"series", "horizon_xy", "reason", "laps_completed", "lap_times", "info", "path",
                           "vehicle", "message"}
    assert fields["reason"] == "completed"


def test_a_run_without_path_or_vehicle_round_trips(tmp_path):
    res = _result()
    f = write_result(tmp_path / "bare.npz", series=res.series, horizon_xy=res.horizon_xy,
                     meta={"reason": "time_limit", "laps_completed": 0, "lap_times": [], "info": {}})
    z = np.load(f)
    assert not set(PATH_KEYS) & set(z.files)
    back = SimulationResult.load(f)
    assert back.path is None and back.vehicle is None and back.reason == mt.results.Outcome.TIME_LIMIT


def test_infinite_widths_come_back_wide(tmp_path):
    res = _result(widths=None)  # no widths: infinite
    back = SimulationResult.load(res.save(tmp_path / "open.npz"))
    assert np.all(back.path.width_left >= 1e9) and np.all(back.path.width_right >= 1e9)


def _variant(good: Path, folder: Path, name: str, meta_change=None, **changes) -> Path:
    """A copy of ``good`` with arrays replaced (None: removed) and ``meta`` changed by ``meta_change``."""
    z = dict(np.load(good))
    if meta_change is not None:
        z["meta"] = np.array(json.dumps(meta_change(json.loads(str(z["meta"])))))
    for k, v in changes.items():
        if v is None:
            z.pop(k)
        else:
            z[k] = v(z[k]) if callable(v) else v
    np.savez(folder / name, **z)
    return folder / name


def _drop(key):
    return lambda m: {k: v for k, v in m.items() if k != key}


def _set(key, value):
    return lambda m: {**m, key: value}


def _set_info(key, value):
    return lambda m: {**m, "info": {**m["info"], key: value}}


#: one defect per file: (name, meta change, array changes, the error it must give)
DEFECTS = [
    ("series-missing", None, {"series_v": None}, r"series_v: missing"),
    ("series-short", None, {"series_e_y": lambda a: a[:-1]}, r"series_e_y: 11 samples, but series_t has 12"),
    ("series-text", None, {"series_v": np.array(["fast"] * 12)}, r"series_v: expected numbers, got dtype <U4"),
    ("series-2d", None, {"series_t": np.zeros((12, 2))}, r"series_t: expected a 1-D array"),
    ("meta-missing", None, {"meta": None}, r"meta: missing"),
    ("meta-text", None, {"meta": np.array("not json")}, r"meta: not the JSON text"),
    ("meta-array", None, {"meta": np.array(["{}", "{}"])}, r"meta: not the JSON text"),
    ("meta-list", None, {"meta": np.array("[1, 2]")}, r"meta: expected a JSON object, got list"),
    ("laps-text", _set("laps_completed", "two"), {}, r"meta\.laps_completed: expected int, got str"),
    ("laps-bool", _set("laps_completed", True), {}, r"meta\.laps_completed: expected int, got bool"),
    ("lap-times-text", _set("lap_times", ["x"]), {}, r"meta\.lap_times: expected a list of numbers"),
    ("reason-unknown", _set("reason", "flying"), {}, r"meta\.reason: .*'flying'"),
    ("reason-missing", _drop("reason"), {}, r"meta\.reason: missing"),
    ("info-missing", _drop("info"), {}, r"meta\.info: missing"),
    ("period-negative", _set_info("control_period", -1), {}, r"meta\.info\.control_period: expected a period > 0 s, got -1"),
    ("period-text", _set_info("control_period", "fast"), {}, r"meta\.info\.control_period: expected a period > 0 s"),
    ("obstacles-mapping", _set_info("obstacles", {"a": 1}), {}, r"meta\.info\.obstacles: expected a list"),
    ("obstacles-numbers", _set_info("obstacles", [1, 2]), {}, r"meta\.info\.obstacles: expected a list of obstacle"),
    ("scenario-list", _set_info("scenario", [1]), {}, r"meta\.info\.scenario: expected a mapping"),
    ("vehicle-bad", _set("vehicle", {"wheelbase": -1}), {}, r"meta\.vehicle: .*wheelbase"),
    ("vehicle-list", _set("vehicle", [1]), {}, r"meta\.vehicle: expected a mapping, got list"),
    ("horizon-missing", None, {"horizon_xy": None}, r"horizon_xy: missing"),
    ("horizon-short", None, {"horizon_xy": lambda a: a[:2]}, r"horizon_xy: expected shape \(12, N\+1, 2\)"),
    ("horizon-2d", None, {"horizon_xy": np.zeros((12, 2))}, r"horizon_xy: expected a 3-D array"),
    ("path-partial", None, {"path_wl": None}, r"path_wl: missing \(the other path arrays are there\)"),
    ("path-short", None, {"path_x": lambda a: a[:-1]}, r"path_x: \d+ waypoints, but path_s has \d+"),
    ("path-nan", None, {"path_x": lambda a: a * np.nan}, r"path: .*finite"),
    ("path-meta-missing", _drop("path"), {}, r"meta\.path: expected the path's name, closed and length"),
]


@pytest.mark.parametrize(("name", "meta_change", "changes", "error"), DEFECTS, ids=[d[0] for d in DEFECTS])
def test_a_defective_file_names_the_file_and_the_key(good, tmp_path, name, meta_change, changes, error):
    f = _variant(good, tmp_path, f"{name}.npz", meta_change, **changes)
    with pytest.raises(InputError, match=rf"{name}\.npz: {error}") as info:
        SimulationResult.load(f)
    assert "\n" not in str(info.value)


def test_missing_junk_and_truncated_files(good, tmp_path):
    with pytest.raises(InputError, match=r"gone\.npz: no such result file"):
        SimulationResult.load(tmp_path / "gone.npz")
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip archive")
    with pytest.raises(InputError, match=r"junk\.npz: not a simulation result file"):
        SimulationResult.load(junk)
    cut = tmp_path / "truncated.npz"
    cut.write_bytes(good.read_bytes()[:2000])
    with pytest.raises(InputError, match=r"truncated\.npz: not a simulation result"):
        SimulationResult.load(cut)


def test_old_file_without_message_loads(good, tmp_path):
    f = _variant(good, tmp_path, "old.npz", _drop("message"))
    assert SimulationResult.load(f).message == ""
