"""Readers and writers of reference paths.

Formats (``load_path`` picks one from the suffix and the header):

* TUM racetrack CSV: ``# x_m,y_m,w_tr_right_m,w_tr_left_m``, closed, no repeated closing point
  (a repeated one is dropped) -- :func:`read_tum`.
* Raceline CSV: ``s_m; x_m; y_m; psi_rad; kappa_radpm; vx_mps; ax_mps2`` (``;`` or ``,``),
  the speed profile is kept -- :func:`read_raceline`.
* Plain CSV or whitespace table ``x, y[, w_right, w_left]`` -- :func:`read_xy`.
* Waypoints written by :func:`write_path` (``s_m,x_m,y_m,psi_rad,kappa_radpm,width_left_m,
  width_right_m,v_ref_mps``) -- :func:`read_waypoints`, lossless.
* YAML corner-point courses (points, radius, blend, smoothing, closed, widths, obstacles) --
  :func:`read_yaml` (:mod:`mpc_tracking.paths.course_yaml`).

Columns are read by name when the file has a header (``y,x`` is read as y then x; the names
each reader accepts are :data:`COLUMN_NAMES`, parsed by :func:`_header_columns`), by position
when it has none; a header that names a column twice, misses a needed one or names one the
reader does not know is an error naming the file, the line and the header. Files are opened
through :func:`mpc_tracking.fileio.read_input_text` (regular files only, bounded).

Every error names the file (and line) and what was expected (:class:`PathFormatError`).
"""
from __future__ import annotations

import difflib
import logging
import os
import re
from pathlib import Path

import numpy as np

from mpc_tracking.errors import PathError, PathFormatError
from mpc_tracking.fileio import check_input_file, read_input_text
from mpc_tracking.paths._checks import _check_ds, _check_positive, _distinct_mask
from mpc_tracking.paths.builder import input_source
from mpc_tracking.paths.bundled import bundled_file
from mpc_tracking.paths.defaults import decide_closed, resolve_ds
from mpc_tracking.paths.defaults import default_corner_radius as corner_default_radius
from mpc_tracking.paths.polyline import corner_vertices, estimate_noise, simplify_collinear
from mpc_tracking.paths.reference_path import ReferencePath

__all__ = ["read_tum", "read_raceline", "read_xy", "read_waypoints", "read_yaml", "write_path", "load_path",
           "missing_file_hint"]

logger = logging.getLogger(__name__)
#: largest path table read [bytes] (a 100 km centre line at 1 m spacing is about 4 MB)
MAX_PATH_FILE_BYTES = 50 * 2**20
_RACELINE_COLS = ("s_m", "x_m", "y_m", "psi_rad", "kappa_radpm", "vx_mps", "ax_mps2")
_WAYPOINT_COLS = ("s_m", "x_m", "y_m", "psi_rad", "kappa_radpm", "width_left_m", "width_right_m", "v_ref_mps")
#: the header names of each column role (lower case; a unit in brackets, ``x [m]``, is dropped first)
COLUMN_NAMES: dict[str, tuple[str, ...]] = {
    "x": ("x", "x_m"),
    "y": ("y", "y_m"),
    "w_right": ("w_right", "w_right_m", "w_tr_right_m", "w_tr_right", "width_right", "width_right_m"),
    "w_left": ("w_left", "w_left_m", "w_tr_left_m", "w_tr_left", "width_left", "width_left_m"),
    "s": ("s", "s_m"),
    "psi": ("psi", "psi_rad"),
    "kappa": ("kappa", "kappa_radpm"),
    "vx": ("vx", "vx_mps"),
    "ax": ("ax", "ax_mps2"),
    "v_ref": ("v_ref", "v_ref_mps"),
}
_XY_ROLES = ("x", "y", "w_right", "w_left")
_RACELINE_ROLES = ("s", "x", "y", "psi", "kappa", "vx", "ax")
_WAYPOINT_ROLES = ("s", "x", "y", "psi", "kappa", "w_left", "w_right", "v_ref")


def _role_of(name: str) -> str | None:
    """The column role a header name stands for (``"x_m"`` -> ``"x"``), None when unknown."""
    key = re.sub(r"\s*[\[(].*?[\])]\s*$", "", name.strip()).strip().lower()
    return next((role for role, names in COLUMN_NAMES.items() if key in names), None)


def _header_columns(header: list[str]) -> dict[str, int | None]:
    """Each header name's column role: ``{"y": 0, "x": 1}`` for ``y,x``; unknown names map to None
    under their own name (``{"lat": None}``). The one parser of path headers; a reader that knows
    more columns (lat/lon) extends :data:`COLUMN_NAMES`.

    Raises
    ------
    ValueError
        Two columns give the same role (``x`` and ``x_m``); the caller names the file and line.

    Examples
    --------
    >>> _header_columns(["y", "x"])
    {'y': 0, 'x': 1}
    >>> _header_columns(["x_m", "y_m", "w_tr_right_m", "w_tr_left_m"])
    {'x': 0, 'y': 1, 'w_right': 2, 'w_left': 3}
    """
    out: dict[str, int | None] = {}
    for i, name in enumerate(header):
        role = _role_of(name)
        if role is None:
            out.setdefault(name, None)
            continue
        first = out.get(role)
        if first is not None:
            raise ValueError(f"columns {first + 1} ({header[first]!r}) and {i + 1} ({name!r}) both give {role}")
        out[role] = i
    return out


class _Table:
    """Numeric rows of a delimited text file, with header names and ``# key: value`` metadata."""

    def __init__(self, filename: Path, ncols: tuple[int, ...], what: str, finite_cols: int | None = None) -> None:
        if not os.path.lexists(filename):
            raise PathFormatError(f"{filename}: no such file")
        self.names: list[str] = []
        self.header_line = 0
        self.meta: dict[str, str] = {}
        rows: list[list[float]] = []
        lines: list[int] = []
        text = read_input_text(filename, what="path file", error=PathFormatError, max_bytes=MAX_PATH_FILE_BYTES,
                               expected=what)
        for lineno, raw in enumerate(text.splitlines(), start=1):
            line = raw.strip()
            if not line:
                continue
            if line.startswith("#"):
                body = line.lstrip("#").strip()
                m = re.match(r"^mpc_tracking path:\s*(.*)$", body)
                if m:
                    for kv in m.group(1).split(";"):
                        if "=" in kv:
                            k, v = kv.split("=", 1)
                            self.meta[k.strip()] = v.strip()
                elif re.match(r"^[A-Za-z_]\w*\s*[,;]", body) and not rows:
                    names = [p.strip() for p in re.split(r"[,;]", body)]
                    if any(_role_of(n) is not None for n in names):  # else a comment with commas
                        self.names, self.header_line = names, lineno
                continue
            parts = [p.strip() for p in re.split(r"[;,]" if re.search(r"[;,]", line) else r"\s+", line)]
            try:
                vals = [float(p) for p in parts]
            except ValueError:
                if not rows and not self.names and not any(_is_number(p) for p in parts):
                    self.names, self.header_line = parts, lineno  # header without '#'
                    continue
                bad = next(p for p in parts if not _is_number(p))
                raise PathFormatError(f"{filename}:{lineno}: expected numbers ({what}), got {bad!r}") from None
            if len(vals) not in ncols:
                want = " or ".join(str(c) for c in ncols)
                raise PathFormatError(f"{filename}:{lineno}: expected {want} columns ({what}), got {len(vals)}")
            if rows and len(vals) != len(rows[0]):
                raise PathFormatError(
                    f"{filename}:{lineno}: ragged row with {len(vals)} columns, earlier rows have {len(rows[0])}"
                )
            rows.append(vals)
            lines.append(lineno)
        if not rows:
            raise PathFormatError(f"{filename}: no data rows (expected {what})")
        self.data = np.asarray(rows)
        self.lines = np.asarray(lines)
        self.filename = filename
        bad = ~np.isfinite(self.data[:, :finite_cols])
        if bad.any():
            r, c = np.argwhere(bad)[0]
            raise PathFormatError(
                f"{filename}:{self.lines[r]}: column {c + 1} is {self.data[r, c]}; expected a finite number")

    def columns(self, roles: tuple[str, ...], required: int) -> np.ndarray:
        """The data with its columns in the order of ``roles`` (the first ``required`` must be there;
        the others all or none), by header name when the header names known columns, else by position.

        Raises
        ------
        PathFormatError
            ``FILE:LINE: header 'y,x,x_m': ...``: a role given twice, a needed one missing, a name
            the reader does not know, or more names than columns.
        """
        if not self.names:
            return self.data
        where = f"{self.filename}:{self.header_line}: header {','.join(self.names)!r}"
        try:
            found = _header_columns(self.names)
        except ValueError as exc:
            raise PathFormatError(f"{where}: {exc}; expected each column once") from None
        known = {role: i for role, i in found.items() if i is not None}
        if not known:
            logger.warning("%s names no column this reader knows (%s); reading the columns by position as %s",
                           where, ", ".join(n for names in COLUMN_NAMES.values() for n in names[:1]),
                           ", ".join(roles[:self.data.shape[1]]))
            return self.data
        unknown = [n for n, i in found.items() if i is None]
        if unknown or set(known) - set(roles):
            bad = unknown[0] if unknown else sorted(set(known) - set(roles))[0]
            raise PathFormatError(f"{where}: column {bad!r} is not one of {', '.join(roles)} (names accepted: "
                                  f"{', '.join(n for r in roles for n in COLUMN_NAMES[r])}); rename or drop it")
        missing = [r for r in roles[:required] if r not in known]
        optional = [r for r in roles[required:] if r in known]
        if missing or (optional and len(optional) != len(roles) - required):
            need = missing or [r for r in roles[required:] if r not in known]
            raise PathFormatError(f"{where}: no column named {need[0]} (expected {', '.join(roles[:required])}"
                                  + (f"[, {', '.join(roles[required:])}]" if required < len(roles) else "") + ")")
        if len(self.names) != self.data.shape[1]:
            raise PathFormatError(f"{where}: {len(self.names)} names for {self.data.shape[1]} columns of numbers")
        order = [known[r] for r in roles if r in known]
        if order != list(range(len(order))):
            logger.info("%s: columns read by name (%s)", where, ", ".join(f"{r}=column {known[r] + 1}"
                                                                          for r in roles if r in known))
        return self.data[:, order]

    def check_positive(self, cols: tuple[int, ...], label: str) -> None:
        for c in cols:
            bad = ~(self.data[:, c] > 0)
            if bad.any():
                r = int(np.flatnonzero(bad)[0])
                raise PathFormatError(
                    f"{self.filename}:{self.lines[r]}: {label} must be > 0 m, got {self.data[r, c]}"
                )


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _wrap_errors(filename: Path, build):
    try:
        return build()
    except PathFormatError:
        raise
    except PathError as exc:
        raise PathFormatError(f"{filename}: {exc}") from exc


def read_tum(filename: str | Path, *, ds: float | None = None, smoothing: float = 0.0,
             name: str | None = None) -> ReferencePath:
    """Read a closed track in the TUM racetrack format (``# x_m,y_m,w_tr_right_m,w_tr_left_m``).

    Parameters
    ----------
    filename : path
    ds : float, optional
        Waypoint spacing of the result [m]; default
        :func:`~mpc_tracking.paths.defaults.default_ds` (0.5 m).
    smoothing : float
        RMS distance [m] the centre line may move when smoothed (see :class:`ReferencePath`).
    name : str, optional
        Default: the file's stem.

    A last point repeating the first is dropped; widths must be > 0.
    """
    filename = Path(filename)
    tab = _Table(filename, (4,), "x_m,y_m,w_tr_right_m,w_tr_left_m")
    a = tab.data = tab.columns(_XY_ROLES, 4)
    tab.check_positive((2, 3), "track width")
    ds = resolve_ds(ds, a[:, :2], True)
    with input_source(filename, tab.lines):
        return _wrap_errors(filename, lambda: ReferencePath(
            a[:, 0], a[:, 1], width_right=a[:, 2], width_left=a[:, 3], ds=ds, closed=True,
            smoothing=smoothing, name=name or filename.stem,
        ))


def read_xy(filename: str | Path, *, ds: float | None = None, smoothing: float | None = None,
            closed: bool | None = None, name: str | None = None, corners: bool | None = None,
            corner_radius: float | None = None, default_corner_radius: float | None = None,
            min_corner_radius: float | None = None) -> ReferencePath:
    """Read a plain table ``x, y[, w_right, w_left]`` (comma, semicolon or whitespace separated).

    ``closed`` defaults to the file's ``# mpc_tracking path: closed=...`` comment; without one the
    data decide (:func:`mpc_tracking.paths.defaults.closure`, a warning naming the override): a
    loop only when the last point is back within about one point spacing of the first *and* the
    closing segment turns like the rest of the path (a closed track typed without repeating its
    first point); an out-and-back route whose ends lie side by side stays open. ``ds`` defaults to
    :func:`~mpc_tracking.paths.defaults.default_ds` (0.5 m; finer on paths shorter than 50 m).

    The points are a centre line (fitted by a spline) or the corners of a polygon (a city block
    as four points, or dense points along straight edges with sharp corners), rounded with
    clothoid-arc blends of ``corner_radius`` (:meth:`ReferencePath.from_corners`; default a
    quarter of the median edge, reduced where it does not fit). ``corners`` None decides from
    the data (:func:`mpc_tracking.paths.polyline.corner_vertices`, logged); a ``corner_radius``
    implies corners unless ``corners=False``; ``default_corner_radius`` replaces the default radius
    of recognised corners without forcing corner mode, ``min_corner_radius`` is the least default
    radius (:func:`mpc_tracking.paths.defaults.default_corner_radius`; scenarios pass twice the
    vehicle's minimum turning radius; either is reduced where an edge is too short). Either way
    the path records how far it strays from the input polyline (``fit_deviation``), with a
    warning beyond tolerance (recognised corners: always, with the corner's file line).

    ``smoothing`` None (default) smooths a noisy trace (GPS, hand-digitised) of at least
    :data:`MIN_POINTS_FOR_NOISE` points by the noise it measures
    (:func:`mpc_tracking.paths.polyline.estimate_noise`, logged) when that exceeds 5 % of the
    point spacing, and otherwise interpolates the points; 0 always interpolates. A fit that moves
    the path more than :func:`~mpc_tracking.paths.builder.fit_tolerance` from an input point is
    warned about with the point, its file line and the distance (a smoothing chosen here gets no
    allowance: 0.25 m).
    """
    filename = Path(filename)
    tab = _Table(filename, (2, 4), "x, y[, w_right, w_left] in m")
    a = tab.data = tab.columns(_XY_ROLES, 2)
    if closed is None and "closed" in tab.meta:
        closed = tab.meta["closed"].lower() in ("true", "1", "yes")
    elif closed is None:
        closed = decide_closed(a[:, :2], str(filename))
    ds = resolve_ds(ds, a[:, :2], closed)
    wr = wl = None
    if a.shape[1] == 4:
        tab.check_positive((2, 3), "track width")
        wr, wl = a[:, 2], a[:, 3]
    if corner_radius is not None:
        corner_radius = _check_positive(corner_radius, "corner_radius", "a corner radius > 0 m",
                                        "a finite corner radius > 0 m")
    if corners is not False:
        with np.errstate(over="ignore", invalid="ignore"):  # absurd coordinates: the path builder says so
            vertices = _corner_polygon(a[:, :2], closed, forced=bool(corners) or corner_radius is not None)
        if vertices is not None:
            radius = corner_radius if corner_radius is not None else default_corner_radius
            v = a[vertices]
            if radius is None and min_corner_radius is not None:
                radius = corner_default_radius(v[:, :2], closed, min_corner_radius)
            fit = corner_radius is None and radius is not None  # a default radius shrinks to fit short edges
            with input_source(filename, tab.lines[vertices]):
                path = _wrap_errors(filename, lambda: ReferencePath.from_corners(
                    v[:, :2], ds=ds, closed=closed, radius=radius, fit_radius=fit, smoothing=smoothing or None,
                    width_right=None if wr is None else v[:, 2], width_left=None if wl is None else v[:, 3],
                    name=name or tab.meta.get("name", filename.stem),
                ))
            _report_corners(path, filename, tab.lines[vertices], decided=corners is None and corner_radius is None)
            return path
    chosen = smoothing is None
    if smoothing is None:
        smoothing = _auto_smoothing(a[:, :2], closed, filename)
    with input_source(filename, tab.lines, smoothing_chosen=chosen):
        return _wrap_errors(filename, lambda: ReferencePath(
            a[:, 0], a[:, 1], width_right=wr, width_left=wl, ds=ds, closed=closed, smoothing=smoothing,
            name=name or tab.meta.get("name", filename.stem),
        ))


def _report_corners(path: ReferencePath, filename: Path, lines: np.ndarray, *, decided: bool) -> None:
    """Say that (and how far) rounding the corners of a polygon moved the path from them: a warning when the
    corners were recognised from the data (the user asked for neither corners nor a radius), else INFO."""
    i = path.fit_deviation_index
    radius = 1.0 / max(float(np.max(np.abs(path.kappa))), 1e-300)
    text = (f"{filename}: read as the {len(lines)} corners of a polygon and rounded (the smallest radius "
            f"{radius:.3g} m): the path passes {path.fit_deviation:.3g} m from corner {i} at "
            f"{filename}:{int(lines[i])}")
    if decided:
        logger.warning("%s (corners decided from the data; pass corners=False to fit a curve through the points, "
                       "or corner_radius= to choose the radius; scenario: path.corner_radius, CLI: --corner-radius)",
                       text)
    else:
        logger.info("%s", text)


#: fewest points whose noise is measured (and smoothed away when it is large): fewer points are too
#: sparse to tell noise from shape (12 points round a parking lot read as 1.47 m of "noise")
MIN_POINTS_FOR_NOISE = 30


def _auto_smoothing(pts: np.ndarray, closed: bool, filename: Path) -> float:
    """RMS smoothing [m] for a trace of at least :data:`MIN_POINTS_FOR_NOISE` points whose measured
    noise exceeds 5 % of its spacing, else 0."""
    keep = _distinct_mask(pts, closed)
    pts = pts[keep]
    if len(pts) < MIN_POINTS_FOR_NOISE:
        if len(pts) >= 8:
            logger.info("%s: %d points are too few to measure their noise (at least %d); interpolating them "
                        "(smoothing= to smooth)", filename, len(pts), MIN_POINTS_FOR_NOISE)
        return 0.0
    sigma = estimate_noise(pts, closed)
    spacing = float(np.median(np.hypot(*np.diff(pts, axis=0).T)))
    if sigma <= 0.05 * spacing:
        return 0.0
    rms = float(np.sqrt(2.0) * sigma)  # RMS distance of 2-D noise with sigma per coordinate
    logger.warning("%s: the points are noisy (about %.3g m per coordinate on a %.3g m spacing); smoothing them by "
                   "%.3g m RMS (pass smoothing=0 to fit them exactly, or a value of your own)",
                   filename, sigma, spacing, rms)
    return rms


def _corner_polygon(pts: np.ndarray, closed: bool, *, forced: bool) -> np.ndarray | None:
    """Rows of ``pts`` that are the polygon's vertices (duplicates dropped), or None for a curve."""
    keep = np.flatnonzero(_distinct_mask(pts, closed))
    if len(keep) < (3 if closed else 2):
        return None  # the path builder reports too few points
    vertices = corner_vertices(pts[keep], closed)
    if vertices is None and forced:
        tol = 0.02 * float(np.median(np.hypot(*np.diff(pts[keep], axis=0).T)))
        vertices = simplify_collinear(pts[keep], closed, tol)
    return None if vertices is None else keep[vertices]


def read_raceline(filename: str | Path, *, ds: float | None = None, smoothing: float = 0.0,
                  closed: bool | None = None, name: str | None = None) -> ReferencePath:
    """Read a raceline ``s_m; x_m; y_m; psi_rad; kappa_radpm; vx_mps; ax_mps2`` and keep its speed profile.

    The TUM raceline tools measure ``psi_rad`` from the +y axis (north), ours from +x: the
    offset (0 or +pi/2, whichever matches the x/y geometry) is detected and added; a heading
    that matches neither is an error. ``closed`` defaults to True when the last point is about
    one step away from the first and the closing segment turns like the path
    (:func:`mpc_tracking.paths.defaults.closure`, logged). With ``ds=None`` the file's waypoints are used as they are
    (heading, curvature and speed from the file); with a ``ds`` the centre line is resampled.
    """
    filename = Path(filename)
    tab = _Table(filename, (7,), "; ".join(_RACELINE_COLS))
    s, x, y, psi, kap, vx = tab.columns(_RACELINE_ROLES, 7)[:, :6].T
    if np.any(np.diff(s) <= 0):
        r = int(np.flatnonzero(np.diff(s) <= 0)[0]) + 1
        raise PathFormatError(f"{filename}:{tab.lines[r]}: s_m must increase, got {s[r]} after {s[r - 1]}")
    if np.any(vx < 0):
        r = int(np.flatnonzero(vx < 0)[0])
        raise PathFormatError(f"{filename}:{tab.lines[r]}: vx_mps must be >= 0, got {vx[r]}")
    gap = float(np.hypot(x[0] - x[-1], y[0] - y[-1]))
    if closed is None:
        closed = decide_closed(np.column_stack([x, y]), str(filename))
    if closed and gap < 1e-9 * max(1.0, float(np.abs(x).max())):  # repeated closing point
        s, x, y, psi, kap, vx = (a[:-1] for a in (s, x, y, psi, kap, vx))
        gap = float(np.hypot(x[0] - x[-1], y[0] - y[-1]))
    if len(x) < 3:
        raise PathFormatError(f"{filename}: a raceline needs at least 3 points, got {len(x)}")
    # heading convention: compare with the chord directions
    chord = np.arctan2(np.diff(y), np.diff(x))
    mid = 0.5 * (psi[:-1] + psi[1:])
    errs = {off: float(np.median(np.abs((mid + off - chord + np.pi) % (2 * np.pi) - np.pi)))
            for off in (0.0, 0.5 * np.pi)}
    off = min(errs, key=errs.__getitem__)
    if errs[off] > 0.2:
        raise PathFormatError(
            f"{filename}: psi_rad does not match the x/y geometry (median mismatch {errs[off]:.2f} rad)")
    if off:
        logger.info("%s: psi_rad measured from north; converted with +pi/2", filename)
    label = name or filename.stem
    if ds is not None:
        with input_source(filename, tab.lines):
            return _wrap_errors(filename, lambda: ReferencePath(
                x, y, ds=ds, closed=closed, smoothing=smoothing, v_ref=vx, name=label))
    heading = np.unwrap(psi + off)
    length = float(s[-1] - s[0] + gap) if closed else None
    return _wrap_errors(filename, lambda: ReferencePath.from_waypoints(
        s, x, y, heading, kap, v_ref=vx, closed=closed, length=length, name=label))


def write_path(path: ReferencePath, filename: str | Path) -> Path:
    """Write waypoints ``s, x, y, psi, kappa, width_left, width_right, v_ref`` as CSV.

    Numbers are written with 17 significant digits, so :func:`read_waypoints` (and
    :func:`load_path`) give back the same arrays. Missing widths are ``inf``, a missing speed
    profile is ``nan``. Returns the file name.
    """
    filename = Path(filename)
    v = path.v_ref if path.v_ref is not None else np.full(path.n, np.nan)
    data = np.column_stack([path.s, path.x, path.y, path.psi, path.kappa, path.width_left, path.width_right, v])
    from mpc_tracking.paths.geo import origin_meta  # the GNSS origin, when the path has one

    with filename.open("w") as fh:
        fh.write(f"# mpc_tracking path: name={path.name}; closed={str(path.closed).lower()}; length={path.length!r}"
                 f"{origin_meta(path)}\n")
        fh.write("# " + ",".join(_WAYPOINT_COLS) + "\n")
        np.savetxt(fh, data, fmt="%.17g", delimiter=",")
    return filename


def read_waypoints(filename: str | Path, *, name: str | None = None) -> ReferencePath:
    """Read a file written by :func:`write_path` (no resampling; lossless)."""
    filename = Path(filename)
    tab = _Table(filename, (8,), ",".join(_WAYPOINT_COLS), finite_cols=5)  # inf widths, nan speeds allowed
    s, x, y, psi, kap, wl, wr, v = tab.columns(_WAYPOINT_ROLES, 8).T
    closed = tab.meta.get("closed", "false") == "true"
    length = float(tab.meta["length"]) if "length" in tab.meta else None
    v_ref = None if np.all(np.isnan(v)) else v
    path = _wrap_errors(filename, lambda: ReferencePath.from_waypoints(
        s, x, y, psi, kap, width_left=None if np.all(np.isinf(wl)) else wl,
        width_right=None if np.all(np.isinf(wr)) else wr, v_ref=v_ref, closed=closed, length=length,
        name=name or tab.meta.get("name", filename.stem)))
    from mpc_tracking.paths.geo import origin_from_meta

    if (geo := origin_from_meta(tab.meta, str(filename))) is not None:
        path.geo_origin = geo
    return path


def read_yaml(filename: str | Path, *, ds: float | None = None) -> ReferencePath:
    """Read a YAML corner-point course (see :mod:`mpc_tracking.paths.course_yaml`)."""
    from mpc_tracking.paths.course_yaml import read_course

    return read_course(filename, ds=ds)


def missing_file_hint(name: str | Path, *, bundled: bool = True) -> str:
    """The ``"; did you mean 'my_track.csv'?"`` of a file name that does not exist: the nearest name in
    its folder (:func:`difflib.get_close_matches`), else the nearest bundled path name (``bundled``),
    else what is missing (its folder); ``""`` when nothing is near.

    >>> missing_file_hint("/no/such/folder/track.csv", bundled=False)
    '; the folder /no/such/folder does not exist'
    """
    from mpc_tracking.paths.bundled import list_bundled

    p = Path(name)
    folder = p.parent
    try:
        names = sorted(c.name for _, c in zip(range(5000), folder.iterdir(), strict=False))
    except OSError:
        return f"; the folder {folder} does not exist" if not folder.exists() else ""
    near = difflib.get_close_matches(p.name, names, n=1, cutoff=0.8)
    if near:
        return f"; did you mean {str(folder / near[0]) if str(folder) != '.' else near[0]!r}?"
    if bundled:
        near = difflib.get_close_matches(p.stem, list_bundled(), n=1, cutoff=0.6)
        if near:
            return f"; did you mean the bundled path {near[0]!r}?"
    return ""


def _sniff(filename: Path) -> str:
    if filename.suffix.lower() in (".yaml", ".yml"):
        return "yaml"
    check_input_file(filename, what="path file", error=PathFormatError, max_bytes=MAX_PATH_FILE_BYTES)
    try:
        with filename.open("r", errors="replace") as fh:  # a regular file (checked): the read cannot block
            head = fh.read(4000).lower()
    except OSError as exc:
        raise PathFormatError(f"{filename}: cannot read ({exc})") from None
    if "psi_rad" in head and "width_left_m" in head:
        return "waypoints"
    if "vx_mps" in head or ("s_m" in head and "kappa_radpm" in head):
        return "raceline"
    if "w_tr_right" in head:
        return "tum"
    if filename.suffix.lower() in (".gpx", ".kml") or _geo_columns(head):
        return "geo"
    return "xy"


def load_path(source: str | Path, *, ds: float | None = None, smoothing: float | None = None,
              closed: bool | None = None, corners: bool | None = None,
              corner_radius: float | None = None, default_corner_radius: float | None = None,
              min_corner_radius: float | None = None) -> ReferencePath:
    """Load a bundled path by name, or a path file in any supported format.

    Parameters
    ----------
    source : str or path
        A file, or the name of a bundled path (:func:`mpc_tracking.paths.bundled.list_bundled`).
    ds : float, optional
        Waypoint spacing [m]. Default: :func:`~mpc_tracking.paths.defaults.default_ds` (0.5 m,
        finer on paths shorter than 50 m) for centre-line tables (TUM, x/y, GNSS) and YAML courses
        without a ``ds``; the file's own waypoints for raceline and waypoint files.
    smoothing : float, optional
        RMS distance [m] the centre line may move when smoothed (TUM, x/y, resampled raceline).
        Default: none, except that x/y tables measure their noise and smooth a noisy trace
        (:func:`read_xy`).
    closed : bool, optional
        Override for x/y tables and racelines (TUM files are always closed). Default: decided
        from the data (:func:`mpc_tracking.paths.defaults.closure`), logged with how to override.
    corners, corner_radius, default_corner_radius, min_corner_radius : optional
        x/y tables: whether the points are polygon corners to round (None: decided from the
        data), the corner radius [m], the radius of recognised corners when none is given, and
        the least default radius [m]; see :func:`read_xy`.
    """
    if ds is not None:
        ds = _check_ds(ds, "ds")
    p = Path(source)
    if not p.exists():
        if p.suffix or "/" in str(source):
            raise PathFormatError(f"{source}: no such file{missing_file_hint(p)}")
        p = bundled_file(str(source))
    kind = _sniff(p)
    logger.debug("loading %s as %s", p, kind)
    if (corners or corner_radius is not None) and kind != "xy":
        raise PathError(f"corner_radius/corners: only x/y tables are read as corner polygons; {p} is a {kind} file "
                        "(YAML courses set 'radius' in the file)")
    if kind == "yaml":
        return read_yaml(p, ds=ds)
    if kind == "waypoints":
        return read_waypoints(p)
    if kind == "raceline":
        return read_raceline(p, ds=ds, smoothing=smoothing or 0.0, closed=closed)
    if kind == "tum":
        return read_tum(p, ds=ds, smoothing=smoothing or 0.0)
    if kind == "geo":
        return read_geo(p, ds=ds, smoothing=smoothing, closed=closed)
    try:
        return read_xy(p, ds=ds, smoothing=smoothing, closed=closed, corners=corners,
                       corner_radius=corner_radius, default_corner_radius=default_corner_radius,
                       min_corner_radius=min_corner_radius)
    except PathError:
        if not _unnamed_degrees(p):
            raise
        logger.warning("%s: the numbers look like latitude, longitude in degrees, not metres; reading them as WGS84 "
                       "lat, lon (name the columns lat,lon to say so)", p)
        return read_geo(p, ds=ds, smoothing=smoothing, closed=closed, unnamed_degrees=True)


# ---------------------------------------------------------------------- geographic input (paths/geo.py)
def _geo_columns(head: str) -> bool:
    """Whether the first line of ``head`` names latitude and longitude columns."""
    from mpc_tracking.paths.geo import geo_columns

    first = next((ln for ln in head.splitlines() if ln.strip()), "")
    return geo_columns(first) is not None


def _unnamed_degrees(filename: Path) -> bool:
    """Whether an x/y table that failed to read as metres holds lat, lon degrees instead."""
    import warnings

    from mpc_tracking.paths.geo import looks_like_degrees

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # an empty table: the x/y reader's error stands
            data = np.loadtxt(filename, delimiter="," if "," in filename.read_text()[:2000] else None,
                              comments="#", ndmin=2)
    except (OSError, ValueError, UnicodeDecodeError):
        return False
    return looks_like_degrees(data)


def path_from_points(x: np.ndarray, y: np.ndarray, *, ds: float | None = None, smoothing: float | None = None,
                     closed: bool | None = None, name: str = "trace", source: str = "trace",
                     width_right: np.ndarray | None = None, width_left: np.ndarray | None = None) -> ReferencePath:
    """A path through measured points (a GNSS or odometry trace) as :func:`read_xy` builds one.

    ``closed`` None: a loop when the end is back near the start (logged); ``smoothing`` None: the
    trace's measured noise decides (logged, a warning when it smooths). ``source`` names the data in
    the messages.
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if closed is None:
        closed = decide_closed(np.column_stack([x, y]), source)
    ds = resolve_ds(ds, np.column_stack([x, y]), closed)
    chosen = smoothing is None
    if smoothing is None:
        smoothing = _auto_smoothing(np.column_stack([x, y]), closed, Path(source))
    label = Path(source)
    with input_source(source, smoothing_chosen=chosen):
        return _wrap_errors(label, lambda: ReferencePath(x, y, width_right=width_right, width_left=width_left,
                                                         ds=ds, closed=closed, smoothing=smoothing, name=name))


def read_geo(filename: str | Path, *, ds: float | None = None, smoothing: float | None = None,
             closed: bool | None = None, origin: tuple[float, float] | None = None,
             unnamed_degrees: bool = False) -> ReferencePath:
    """Read a GNSS trace (GPX, KML, or a CSV with lat/lon columns) as a path in a local east-north frame.

    The conversion is :mod:`mpc_tracking.paths.geo` (transverse Mercator about ``origin``, default
    the first point); the origin is stored on the path as ``path.geo_origin``
    (:class:`~mpc_tracking.paths.geo.GeoOrigin`). ``closed`` and ``smoothing`` are decided from the
    data as for :func:`read_xy` when not given.
    """
    from mpc_tracking.paths.geo import read_geo_trace

    filename = Path(filename)
    trace = read_geo_trace(filename, origin=origin, unnamed_degrees=unnamed_degrees)
    path = path_from_points(trace.x, trace.y, ds=ds, smoothing=smoothing,
                            closed=trace.closed if closed is None else closed, name=trace.name,
                            source=str(filename), width_right=trace.w_right, width_left=trace.w_left)
    path.geo_origin = trace.origin  # type: ignore[attr-defined]
    return path
