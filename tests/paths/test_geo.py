"""Geographic paths (mpc_tracking.paths.geo): a loop made in metres at a real latitude, turned into
WGS84 lat/lon with pyproj's geodesic (an independent computation, not the reader's projection), comes back
as the metric loop to centimetres from a lat/lon CSV, an unnamed degree table, GPX and KML."""
from __future__ import annotations

import sys

import numpy as np
import pytest

import mpc_tracking as mt
from mpc_tracking.errors import InputError, PathFormatError

pyproj = pytest.importorskip("pyproj")

from mpc_tracking.paths.geo import GeoOrigin, looks_like_degrees, to_local  # noqa: E402
from mpc_tracking.paths.io import read_geo  # noqa: E402

LAT0, LON0 = 60.1699, 24.9384  # Helsinki: far north, where a degree of longitude is half a degree of latitude


def _geodetic(x, y, lat0=LAT0, lon0=LON0):
    """WGS84 lat/lon of east/north offsets (x, y) [m] by the direct geodesic from (lat0, lon0)."""
    geod = pyproj.Geod(ellps="WGS84")
    lon, lat, _ = geod.fwd(np.full(x.shape, lon0), np.full(x.shape, lat0), np.degrees(np.arctan2(x, y)),
                           np.hypot(x, y))
    return lat, lon


def _loop(scale):
    ref = mt.load_path("oval", ds=2.0)
    return ref.x * scale, ref.y * scale


def _write(kind, tmp_path, lat, lon):
    if kind == "csv":
        f = tmp_path / "trace.csv"
        np.savetxt(f, np.column_stack([np.arange(lat.size), lat, lon]), delimiter=",", header="time,latitude,longitude",
                   comments="", fmt="%.12f")
    elif kind == "unnamed":
        f = tmp_path / "trace.txt"
        np.savetxt(f, np.column_stack([lat, lon]), delimiter=",", fmt="%.12f")
    elif kind == "gpx":
        f = tmp_path / "trace.gpx"
        pts = "".join(f'<trkpt lat="{a:.12f}" lon="{b:.12f}"><ele>12</ele></trkpt>' for a, b in zip(lat, lon, strict=True))
        f.write_text('<?xml version="1.0"?><gpx version="1.1" xmlns="http://www.topografix.com/GPX/1/1">'
                     f"<trk><name>loop</name><trkseg>{pts}</trkseg></trk></gpx>")
    else:
        f = tmp_path / "trace.kml"
        coords = " ".join(f"{b:.12f},{a:.12f},0" for a, b in zip(lat, lon, strict=True))
        f.write_text('<?xml version="1.0"?><kml xmlns="http://www.opengis.net/kml/2.2"><Document><Placemark>'
                     f"<LineString><coordinates>{coords}</coordinates></LineString></Placemark></Document></kml>")
    return f


@pytest.mark.parametrize("scale", [1.0, 8.0])  # the bundled oval (245 m) and one 8 times larger (2 km)
@pytest.mark.parametrize("kind", ["csv", "unnamed", "gpx", "kml"])
def test_a_geographic_loop_is_the_metric_loop(tmp_path, kind, scale):
    x, y = _loop(scale)
    lat, lon = _geodetic(x, y)
    metric_file = tmp_path / "metric.csv"
    np.savetxt(metric_file, np.column_stack([x, y]), delimiter=",", header="x,y", comments="")
    metric = mt.load_path(metric_file)
    f = _write(kind, tmp_path, lat, lon)
    # in the frame about the loop's own origin: the same points to centimetres
    same_frame = read_geo(f, origin=(LAT0, LON0), unnamed_degrees=kind == "unnamed")
    assert np.max(np.abs(metric.project(same_frame.x, same_frame.y).e_y)) < 0.01
    # load_path puts the origin at the first point: the frame's north there turns by the meridian convergence
    # (1e-4 rad 600 m away at 60 N), the shape stays: same length and closure to centimetres
    geo = mt.load_path(f)
    assert geo.closed and metric.closed
    assert geo.length == pytest.approx(metric.length, abs=0.01)
    assert float(np.hypot(geo.x[0], geo.y[0])) < 0.01 * scale
    # the origin is the first point, stored on the path
    assert geo.geo_origin.lat == pytest.approx(lat[0], abs=1e-12)
    la, lo = geo.geo_origin.to_geodetic(0.0, 0.0)
    assert float(la) == pytest.approx(lat[0], abs=1e-10) and float(lo) == pytest.approx(lon[0], abs=1e-10)


def test_unnamed_degrees_say_so(tmp_path, caplog):
    x, y = _loop(0.25)  # the 60 m parking-lot loop of the issue
    f = _write("unnamed", tmp_path, *_geodetic(x, y))
    with caplog.at_level("WARNING"):
        path = mt.load_path(f)
    assert "look like latitude, longitude in degrees" in caplog.text
    assert path.length == pytest.approx(0.25 * mt.load_path("oval", ds=2.0).length, rel=0.01)


def test_local_frame_is_float64_and_round_trips():
    o = GeoOrigin(LAT0, LON0)
    e, n = o.to_local(np.array([LAT0 + 0.01]), np.array([LON0 + 0.02]))
    assert e.dtype == np.float64
    lat, lon = o.to_geodetic(e, n)
    assert abs(lat[0] - (LAT0 + 0.01)) < 1e-11 and abs(lon[0] - (LON0 + 0.02)) < 1e-11
    # east of a point on the origin's parallel: the arc of that parallel (prime-vertical radius x cos lat)
    e, _ = o.to_local(np.array([LAT0]), np.array([LON0 + 0.02]))
    assert e[0] == pytest.approx(0.02 * np.pi / 180 * 6378137.0 * np.cos(np.radians(LAT0)) / np.sqrt(
        1 - 0.00669438 * np.sin(np.radians(LAT0)) ** 2), rel=1e-4)


def test_looks_like_degrees():
    assert looks_like_degrees(np.array([[48.1, 11.5], [48.1005, 11.5004]]))
    assert not looks_like_degrees(np.array([[0.0, 0.0], [10.0, 5.0]]))  # metres
    assert not looks_like_degrees(np.array([[120.0, 11.5], [120.0001, 11.5]]))  # not a latitude


@pytest.mark.parametrize("name, text, error", [
    ("bad.csv", "lat,lon\n48.1,11.5\n95.0,11.5\n", r"bad\.csv:3: latitude 95, longitude 11\.5 is not a WGS84"),
    ("bad.csv", "lat,lon\n48.1,11.5\n48.2,east\n", r"bad\.csv:3: column 2 \(lon\): expected a number, got 'east'"),
    ("bad.csv", "lat,lon\n48.1,11.5\n", r"1 data rows; a path needs at least 2"),
    ("bad.gpx", "<gpx><metadata/></gpx>", r"bad\.gpx: GPX without track, route or waypoints"),
    ("bad.gpx", "<gpx><trk><trkseg><trkpt lat='1'/>", r"bad\.gpx:1: not a valid GPX file"),
    ("bad.gpx", "<kml/>", r"expected a GPX document"),
    ("bad.kml", "<kml><Document/></kml>", r"bad\.kml: no KML <LineString> or <LinearRing>"),
    ("bad.kml", "<kml><LineString><coordinates>11.5 12</coordinates></LineString></kml>",
     r"KML coordinate '11\.5': expected lon,lat"),
])
def test_bad_geographic_files(tmp_path, name, text, error):
    f = tmp_path / name
    f.write_text(text)
    with pytest.raises(PathFormatError, match=error):
        mt.load_path(f)


def test_to_local_checks_its_input():
    with pytest.raises(InputError, match=r"point 1: latitude 91,"):
        to_local([48.0, 91.0], [11.0, 11.0])
    with pytest.raises(InputError, match="as many latitudes as longitudes"):
        to_local([48.0], [11.0, 11.0])


def test_without_pyproj_the_error_says_what_to_install(tmp_path, monkeypatch):
    from mpc_tracking.paths import geo

    geo._transformer.cache_clear()
    monkeypatch.setitem(sys.modules, "pyproj", None)
    f = _write("csv", tmp_path, *_geodetic(*_loop(1.0)))
    with pytest.raises(ImportError, match=r'pip install "mpc_tracking\[logs\]"'):
        mt.load_path(f)
    geo._transformer.cache_clear()


def test_the_origin_is_stored_in_the_written_path_file_and_read_back(tmp_path):
    """write_path puts the origin on the file's metadata line with 17 digits: the same origin comes back, and
    local points turned into lat/lon with the read origin land on the original fixes (to 1e-10 deg = 1 cm)."""
    from mpc_tracking.paths.io import write_path

    x, y = _loop(1.0)
    lat, lon = _geodetic(x, y)
    geo = mt.load_path(_write("gpx", tmp_path, lat, lon))
    out = write_path(geo, tmp_path / "written.csv")
    assert "geo_origin=" in out.read_text().splitlines()[0]
    back = mt.load_path(out)
    assert back.geo_origin == geo.geo_origin
    la, lo = back.geo_origin.to_geodetic(back.x[0], back.y[0])
    assert float(la) == pytest.approx(lat[0], abs=1e-6) and float(lo) == pytest.approx(lon[0], abs=1e-6)
    # a metric path has no origin and its file has none
    plain = write_path(mt.load_path("oval"), tmp_path / "plain.csv")
    assert "geo_origin" not in plain.read_text() and not hasattr(mt.load_path(plain), "geo_origin")


@pytest.mark.parametrize("value", ["48.1", "95.0,11.5,0", "north,11.5,0"])
def test_a_bad_stored_origin_names_the_file(tmp_path, value):
    from mpc_tracking.paths.io import write_path

    f = write_path(mt.load_path("oval"), tmp_path / "p.csv")
    lines = f.read_text().splitlines()
    lines[0] += f"; geo_origin={value}"
    f.write_text("\n".join(lines) + "\n")
    with pytest.raises(PathFormatError, match=r"p\.csv: geo_origin='.*': expected 'lat,lon,alt'"):
        mt.load_path(f)
