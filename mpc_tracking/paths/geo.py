"""Geographic input: WGS84 latitude/longitude to a local east-north frame, and the GNSS trace readers.

The local frame (:class:`GeoOrigin`) is a transverse Mercator projection of the WGS84 ellipsoid
centred on the origin with scale 1 there (pyproj; ``+proj=tmerc +lat_0 +lon_0 +k_0=1``): x points
east, y north, in metres, float64. It is conformal (angles, hence headings and curvatures, are
kept) and its scale error grows as ``(d / R)² / 2`` with the distance ``d`` from the origin: 1.2e-8
at 1 km, 1e-6 (1 mm per km) at 9 km, so a track of a few kilometres keeps its lengths to well under
a centimetre. The origin is the first point of the trace unless one is given, and it is stored on
the path read (``path.geo_origin``) so that local coordinates can be turned back into lat/lon
(:meth:`GeoOrigin.to_geodetic`). Altitude is ignored (a plan-view path).

Readers (:func:`read_geo_trace`, used by :func:`mpc_tracking.paths.io.load_path`):

* CSV (or whitespace) tables with a header naming ``lat``/``latitude`` and ``lon``/``lng``/
  ``long``/``longitude`` columns (any order, other columns ignored except ``w_right``/``w_left``
  track widths in metres);
* GPX 1.0/1.1: the points of the first track (its segments joined), else of the first route, else
  the waypoints;
* KML: the ``coordinates`` of the first ``LineString`` or ``LinearRing`` (a ring is a closed loop).

pyproj is an optional dependency (``pip install "mpc_tracking[logs]"``); the error says so when it
is missing.
"""
from __future__ import annotations

import csv
import functools
import io
import logging
import math
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mpc_tracking.errors import InputError, PathFormatError
from mpc_tracking.fileio import check_file_size

__all__ = ["GeoOrigin", "GeoTrace", "to_local", "read_geo_trace", "geo_columns", "looks_like_degrees",
           "GEO_SUFFIXES", "require", "origin_meta", "origin_from_meta"]

logger = logging.getLogger(__name__)

#: file suffixes read as geographic traces
GEO_SUFFIXES = (".gpx", ".kml")
#: largest geographic file read [bytes]
MAX_GEO_FILE_BYTES = 100 * 2**20
_LAT_NAMES = ("lat", "latitude", "lat_deg", "latitude_deg")
_LON_NAMES = ("lon", "lng", "long", "longitude", "lon_deg", "longitude_deg")
_WIDTH_NAMES = {"w_right": ("w_right", "w_right_m", "width_right", "width_right_m", "w_tr_right_m"),
                "w_left": ("w_left", "w_left_m", "width_left", "width_left_m", "w_tr_left_m")}
#: a table whose numbers span less than this [m, if read as metres] and fit lat/lon ranges looks like degrees
_DEGREE_SPAN = 1.0


def require(module: str, feature: str) -> Any:
    """Import the optional ``module`` or raise an ImportError that says which extra installs it.

    Parameters
    ----------
    module : str
        Importable name (``"pyproj"``, ``"rosbags.highlevel"``).
    feature : str
        What needs it, for the message.
    """
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        top = module.split(".")[0]
        raise ImportError(f"{feature} needs the optional package {top!r}: pip install \"mpc_tracking[logs]\"") from None


@dataclass(frozen=True)
class GeoOrigin:
    """The origin of a local east-north frame.

    Attributes
    ----------
    lat, lon : float
        WGS84 latitude and longitude of the origin [deg].
    alt : float
        Ellipsoidal altitude of the origin [m] (kept for the record; the frame is a plan view).

    Examples
    --------
    >>> o = GeoOrigin(48.1374, 11.5755)
    >>> e, n = o.to_local([48.1374, 48.1384], [11.5755, 11.5755])
    >>> [round(float(v), 2) for v in n]   # 0.001 deg of latitude at 48 deg N
    [0.0, 111.19]
    >>> lat, lon = o.to_geodetic(e, n)
    >>> round(float(lat[1]), 9)
    48.1384
    """

    lat: float
    lon: float
    alt: float = 0.0

    def __post_init__(self) -> None:
        _check_lat_lon(np.array([self.lat]), np.array([self.lon]), "GeoOrigin")

    @property
    def proj(self) -> str:
        """The PROJ string of the local frame."""
        return (f"+proj=tmerc +lat_0={self.lat!r} +lon_0={self.lon!r} +k_0=1 +x_0=0 +y_0=0 "
                "+ellps=WGS84 +units=m +no_defs")

    def to_local(self, lat: Any, lon: Any) -> tuple[np.ndarray, np.ndarray]:
        """East and north [m] (float64 arrays of the input's shape) of WGS84 ``lat``, ``lon`` [deg]."""
        la, lo = np.asarray(lat, dtype=np.float64), np.asarray(lon, dtype=np.float64)
        _check_lat_lon(la.ravel(), lo.ravel(), "to_local")
        e, n = _transformer(self.proj, forward=True).transform(lo, la)
        return np.asarray(e, dtype=np.float64), np.asarray(n, dtype=np.float64)

    def to_geodetic(self, east: Any, north: Any) -> tuple[np.ndarray, np.ndarray]:
        """WGS84 latitude and longitude [deg] of local ``east``, ``north`` [m]."""
        e, n = np.asarray(east, dtype=np.float64), np.asarray(north, dtype=np.float64)
        lo, la = _transformer(self.proj, forward=False).transform(e, n)
        return np.asarray(la, dtype=np.float64), np.asarray(lo, dtype=np.float64)

    def as_dict(self) -> dict[str, float]:
        """``{"lat": ..., "lon": ..., "alt": ...}`` (for files)."""
        return {"lat": self.lat, "lon": self.lon, "alt": self.alt}


def origin_meta(path: Any) -> str:
    """The ``geo_origin=lat,lon,alt`` item of a path file's ``# mpc_tracking path:`` line ("" without one).

    Numbers are written with ``repr`` (17 significant digits), so :func:`origin_from_meta` gives
    back the same origin.

    Examples
    --------
    >>> class P: geo_origin = GeoOrigin(48.137, 11.575)
    >>> origin_meta(P())
    '; geo_origin=48.137,11.575,0.0'
    >>> origin_from_meta({"geo_origin": "48.137,11.575,0.0"}, "p.csv")
    GeoOrigin(lat=48.137, lon=11.575, alt=0.0)
    """
    o = getattr(path, "geo_origin", None)
    if not isinstance(o, GeoOrigin):
        return ""
    return f"; geo_origin={o.lat!r},{o.lon!r},{o.alt!r}"


def origin_from_meta(meta: dict[str, str], where: str) -> GeoOrigin | None:
    """The origin stored by :func:`origin_meta` in a path file's metadata ``meta`` (None without one).

    Raises
    ------
    PathFormatError
        The item is not three numbers ``lat,lon,alt`` [deg, deg, m] of a valid WGS84 position;
        the message names ``where`` (the file).
    """
    text = meta.get("geo_origin")
    if text is None:
        return None
    parts = [p.strip() for p in text.split(",")]
    try:
        nums = [float(p) for p in parts]
        if len(nums) not in (2, 3):
            raise ValueError
        return GeoOrigin(*nums)
    except (ValueError, InputError):
        raise PathFormatError(f"{where}: geo_origin={text!r}: expected 'lat,lon,alt' in degrees, degrees, metres "
                              "(latitude in [-90, 90], longitude in [-180, 180])") from None


@functools.lru_cache(maxsize=32)
def _transformer(proj: str, forward: bool) -> Any:
    pyproj = require("pyproj", "converting latitude/longitude to a local frame")
    if forward:
        return pyproj.Transformer.from_crs("EPSG:4326", proj, always_xy=True)
    return pyproj.Transformer.from_crs(proj, "EPSG:4326", always_xy=True)


def _check_lat_lon(lat: np.ndarray, lon: np.ndarray, where: str) -> None:
    bad = ~(np.isfinite(lat) & np.isfinite(lon) & (np.abs(lat) <= 90.0) & (np.abs(lon) <= 180.0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(f"{where}: point {i}: latitude {lat[i]:g}, longitude {lon[i]:g} deg is not a WGS84 "
                         "position (expected finite |lat| <= 90, |lon| <= 180)")


def to_local(lat: Any, lon: Any, origin: GeoOrigin | tuple[float, float] | None = None
             ) -> tuple[np.ndarray, np.ndarray, GeoOrigin]:
    """WGS84 ``lat``, ``lon`` [deg] to local east, north [m] about ``origin`` (default: the first point).

    Returns
    -------
    east, north : ndarray
        Shape of the input, float64 [m].
    origin : GeoOrigin
    """
    la, lo = np.asarray(lat, dtype=np.float64).ravel(), np.asarray(lon, dtype=np.float64).ravel()
    if la.size == 0 or la.size != lo.size:
        raise InputError(f"to_local: expected as many latitudes as longitudes (at least one), got {la.size} and "
                         f"{lo.size}")
    _check_lat_lon(la, lo, "to_local")
    if origin is None:
        origin = GeoOrigin(float(la[0]), float(lo[0]))
    elif not isinstance(origin, GeoOrigin):
        origin = GeoOrigin(float(origin[0]), float(origin[1]))
    e, n = origin.to_local(la, lo)
    return e, n, origin


@dataclass(frozen=True)
class GeoTrace:
    """Points read from a geographic file, already in the local frame.

    Attributes
    ----------
    x, y : ndarray, shape (M,)
        East and north [m] about :attr:`origin`.
    origin : GeoOrigin
    w_right, w_left : ndarray or None
        Track widths [m] when the file gives them.
    closed : bool or None
        True for a KML ring, else None (decided from the data).
    name : str
        The track's name in the file, else the file's stem.
    """

    x: np.ndarray
    y: np.ndarray
    origin: GeoOrigin
    w_right: np.ndarray | None = None
    w_left: np.ndarray | None = None
    closed: bool | None = None
    name: str = ""


def _norm(name: str) -> str:
    return name.strip().strip("#").strip().lower()


def geo_columns(header: list[str] | str) -> tuple[int, int] | None:
    """Indices ``(lat, lon)`` of the columns named as latitude and longitude in ``header``, else None.

    ``header`` is a list of names or a header line (comma, semicolon, tab or space separated; a
    leading ``#`` is allowed).

    Examples
    --------
    >>> geo_columns("time,latitude,longitude,alt")
    (1, 2)
    >>> geo_columns(["x", "y"]) is None
    True
    """
    if isinstance(header, str):
        header = [p for p in re.split(r"[,;\t ]+", header.strip().lstrip("#").strip()) if p]
    names = [_norm(h) for h in header]
    lat = next((i for i, n in enumerate(names) if n in _LAT_NAMES), None)
    lon = next((i for i, n in enumerate(names) if n in _LON_NAMES), None)
    return None if lat is None or lon is None else (lat, lon)


def looks_like_degrees(data: np.ndarray) -> bool:
    """Whether an unnamed two-column table ``(M, >=2)`` looks like lat, lon degrees rather than metres.

    True when the first column fits latitudes, the second longitudes, the points are not all at
    the null island and they span less than 1 unit (a "path" under a metre long, but up to 100 km
    of a GNSS trace in degrees).
    """
    a = np.asarray(data, dtype=float)
    if a.ndim != 2 or a.shape[1] < 2 or a.shape[0] < 2 or not np.all(np.isfinite(a[:, :2])):
        return False
    lat, lon = a[:, 0], a[:, 1]
    in_range = bool(np.all(np.abs(lat) <= 90.0) and np.all(np.abs(lon) <= 180.0))
    span = max(float(np.ptp(lat)), float(np.ptp(lon)))
    away = float(np.max(np.hypot(lat, lon))) > 1e-3
    return in_range and away and 0.0 < span < _DEGREE_SPAN


def read_geo_trace(filename: str | Path, *, origin: GeoOrigin | tuple[float, float] | None = None,
                   unnamed_degrees: bool = False) -> GeoTrace:
    """Read a GPX, KML or lat/lon CSV file into the local frame (see the module doc).

    Parameters
    ----------
    filename : path
    origin : GeoOrigin or (lat, lon), optional
        Origin of the local frame; default the first point.
    unnamed_degrees : bool
        Read an unnamed two-column table as ``lat, lon`` degrees (:func:`looks_like_degrees`).

    Raises
    ------
    PathFormatError
        Unreadable file, no points, positions outside WGS84 ranges; names the file (and line).
    """
    p = Path(filename)
    if not p.is_file():
        raise PathFormatError(f"{p}: no such file")
    check_file_size(p, MAX_GEO_FILE_BYTES, what="geographic file", error=PathFormatError)
    suffix = p.suffix.lower()
    if suffix == ".gpx":
        lat, lon, name, closed = _read_gpx(p)
        wr = wl = None
    elif suffix == ".kml":
        lat, lon, name, closed = _read_kml(p)
        wr = wl = None
    else:
        lat, lon, wr, wl = _read_geo_table(p, unnamed_degrees)
        name, closed = p.stem, None
    try:
        x, y, org = to_local(lat, lon, origin)
    except InputError as exc:
        raise PathFormatError(f"{p}: {exc}") from None
    logger.info("%s: %d points converted from WGS84 to a local east-north frame about lat %.7f, lon %.7f deg",
                p, x.size, org.lat, org.lon)
    return GeoTrace(x, y, org, wr, wl, closed, name or p.stem)


def _read_geo_table(p: Path, unnamed: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, np.ndarray | None]:
    try:
        text = p.read_text()
    except UnicodeDecodeError:
        raise PathFormatError(f"{p}: not a text file (expected a lat/lon table)") from None
    lines = [(i, ln.strip()) for i, ln in enumerate(text.splitlines(), start=1) if ln.strip()]
    header: list[str] | None = None
    rows: list[tuple[int, list[str]]] = []
    for lineno, line in lines:
        parts = _split(line)
        if header is None and not rows and (line.startswith("#") or not _numeric(parts)):
            if geo_columns(parts) is not None or not line.startswith("#"):
                header = parts
            continue
        if line.startswith("#"):
            continue
        rows.append((lineno, parts))
    cols = geo_columns(header) if header is not None else ((0, 1) if unnamed else None)
    if cols is None:
        raise PathFormatError(f"{p}: no columns named lat/latitude and lon/longitude in the header {header!r}")
    widths = {k: next((i for i, h in enumerate(header or []) if _norm(h) in names), None)
              for k, names in _WIDTH_NAMES.items()}
    want = [cols[0], cols[1]] + [i for i in widths.values() if i is not None]
    data = np.empty((len(rows), len(want)))
    for r, (lineno, parts) in enumerate(rows):
        for c, j in enumerate(want):
            if j >= len(parts):
                raise PathFormatError(f"{p}:{lineno}: expected at least {j + 1} columns, got {len(parts)}")
            try:
                data[r, c] = float(parts[j])
            except ValueError:
                label = f" ({header[j]})" if header else ""
                raise PathFormatError(f"{p}:{lineno}: column {j + 1}{label}: expected a number, got {parts[j]!r}"
                                      ) from None
            if not math.isfinite(data[r, c]):
                raise PathFormatError(f"{p}:{lineno}: column {j + 1} is {parts[j]}; expected a finite number")
    if len(rows) < 2:
        raise PathFormatError(f"{p}: {len(rows)} data rows; a path needs at least 2 lat/lon points")
    bad = ~((np.abs(data[:, 0]) <= 90) & (np.abs(data[:, 1]) <= 180))
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        raise PathFormatError(f"{p}:{rows[r][0]}: latitude {data[r, 0]:g}, longitude {data[r, 1]:g} is not a WGS84 "
                              "position in degrees (expected |lat| <= 90, |lon| <= 180)")
    wr = data[:, 2] if widths["w_right"] is not None else None
    wl = data[:, 2 + (widths["w_right"] is not None)] if widths["w_left"] is not None else None
    return data[:, 0], data[:, 1], wr, wl


def _split(line: str) -> list[str]:
    body = line.lstrip("#").strip()
    if re.search(r"[,;\t]", body):
        return [s.strip() for s in next(csv.reader(io.StringIO(body.replace(";", ","))))]
    return body.split()


def _numeric(parts: list[str]) -> bool:
    try:
        [float(s) for s in parts]
    except ValueError:
        return False
    return bool(parts)


def _parse_xml(p: Path, what: str) -> ET.Element:
    try:
        return ET.parse(p).getroot()
    except ET.ParseError as exc:
        line = exc.position[0] if hasattr(exc, "position") else "?"
        raise PathFormatError(f"{p}:{line}: not a valid {what} file ({exc})") from None


def _read_gpx(p: Path) -> tuple[np.ndarray, np.ndarray, str, bool | None]:
    root = _parse_xml(p, "GPX")
    if not root.tag.lower().endswith("gpx"):
        raise PathFormatError(f"{p}: expected a GPX document (<gpx> root), got <{root.tag}>")
    for kind, point in (("trk", "trkpt"), ("rte", "rtept")):
        groups = root.findall(f"{{*}}{kind}") or root.findall(kind)
        if groups:
            if len(groups) > 1:
                logger.warning("%s: %d %s elements; reading the first", p, len(groups), kind)
            g = groups[0]
            pts = g.findall(f".//{{*}}{point}") or g.findall(f".//{point}")
            name_el = g.find("{*}name")
            if name_el is None:
                name_el = g.find("name")
            return (*_gpx_points(p, pts), (name_el.text or "").strip() if name_el is not None else "", None)
    pts = root.findall("{*}wpt") or root.findall("wpt")
    if not pts:
        raise PathFormatError(f"{p}: GPX without track, route or waypoints (no <trkpt>, <rtept> or <wpt>)")
    return (*_gpx_points(p, pts), "", None)


def _gpx_points(p: Path, pts: list[ET.Element]) -> tuple[np.ndarray, np.ndarray]:
    if len(pts) < 2:
        raise PathFormatError(f"{p}: {len(pts)} GPX points; a path needs at least 2")
    try:
        lat = np.array([float(e.attrib["lat"]) for e in pts])
        lon = np.array([float(e.attrib["lon"]) for e in pts])
    except (KeyError, ValueError) as exc:
        raise PathFormatError(f"{p}: a GPX point without a numeric lat/lon attribute ({exc})") from None
    return lat, lon


def _read_kml(p: Path) -> tuple[np.ndarray, np.ndarray, str, bool | None]:
    root = _parse_xml(p, "KML")
    for tag, closed in (("LineString", None), ("LinearRing", True)):
        found = root.findall(f".//{{*}}{tag}") or root.findall(f".//{tag}")
        if found:
            coords = found[0].find("{*}coordinates")
            if coords is None:
                coords = found[0].find("coordinates")
            if coords is None or not (coords.text or "").strip():
                raise PathFormatError(f"{p}: the first KML <{tag}> has no <coordinates>")
            lon_l, lat_l = [], []
            for tup in coords.text.split():  # type: ignore[union-attr]
                parts = tup.split(",")
                try:
                    lon_l.append(float(parts[0]))
                    lat_l.append(float(parts[1]))
                except (IndexError, ValueError):
                    raise PathFormatError(f"{p}: KML coordinate {tup!r}: expected lon,lat[,alt]") from None
            if len(lat_l) < 2:
                raise PathFormatError(f"{p}: {len(lat_l)} KML coordinates; a path needs at least 2")
            lat, lon = np.array(lat_l), np.array(lon_l)
            if closed and np.allclose([lat[0], lon[0]], [lat[-1], lon[-1]], rtol=0, atol=1e-12):
                lat, lon = lat[:-1], lon[:-1]  # a ring repeats its first point
            return lat, lon, "", closed
    raise PathFormatError(f"{p}: no KML <LineString> or <LinearRing> with coordinates")
