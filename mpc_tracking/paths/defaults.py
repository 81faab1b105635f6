"""The defaults of a path built from points: one set for ``from_corners``, x/y tables, scenarios and the CLI.

Every way of making a path from points -- :meth:`ReferencePath.from_corners
<mpc_tracking.paths.ReferencePath.from_corners>`, :func:`~mpc_tracking.paths.load_path` /
:func:`~mpc_tracking.paths.read_xy` on a table, a scenario's ``path:`` section, ``mpc-tracking run
FILE.csv`` and ``mpc-tracking path show`` -- takes its unset values from here:

* waypoint spacing ``ds``: :data:`DEFAULT_DS` (0.5 m), finer on short paths so that they keep
  :data:`DEFAULT_MIN_WAYPOINTS` waypoints (:func:`default_ds`);
* ``closed``: decided from the data (:func:`closure`): a loop only when the end meets the start
  *and* the closing segment is like the others in length and in turning; the decision is logged
  as a warning with the way to override it (:func:`decide_closed`), unless the ends are plainly
  apart;
* corner radius: :data:`CORNER_RADIUS_SHARE` (a quarter) of the median edge of the corner
  polygon; where the vehicle is known (scenarios, ``mpc-tracking run`` / ``check`` / ``path
  show``) at least twice its minimum turning radius; reduced where two corners do not fit on
  their edge (:func:`default_corner_radius`).

>>> import numpy as np
>>> closure(np.array([[0, 0], [80, 0], [80, 40], [0, 40]], float)).closed  # a typed rectangle
True
>>> x = np.linspace(0, 40, 20)
>>> t = np.linspace(-np.pi / 2, np.pi / 2, 15)[1:-1]
>>> out_and_back = np.vstack([np.column_stack([x, 0 * x]), np.column_stack([40 + 2 * np.cos(t), 2 + 2 * np.sin(t)]),
...                           np.column_stack([x[::-1], 4 + 0 * x])])
>>> closure(out_and_back).closed  # its ends are 4 m apart, but the closing segment turns 90 deg twice
False
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

__all__ = ["DEFAULT_DS", "DEFAULT_MIN_WAYPOINTS", "DEFAULT_MIN_DS", "CORNER_RADIUS_SHARE", "CLOSE_GAP_SPACINGS",
           "CLOSE_TURN_SLACK_DEG", "default_ds", "resolve_ds",
           "polyline_length", "default_corner_radius", "Closure", "closure", "decide_closed"]

logger = logging.getLogger(__name__)

#: waypoint spacing [m] of a path built from points when none is given
DEFAULT_DS = 0.5
#: ... finer on short paths: at least this many waypoints (a 10 m course gets ds = 0.1 m) ...
DEFAULT_MIN_WAYPOINTS = 100
#: ... but not below 1 cm (a path shorter than 1 m is given its ds; lat/lon degrees read as metres
#: are then too short, and :func:`~mpc_tracking.paths.io.load_path` reads them as degrees)
DEFAULT_MIN_DS = 0.01
#: default corner radius, as a share of the median edge of the corner polygon
CORNER_RADIUS_SHARE = 0.25
#: the end meets the start when it is at most this many point spacings from it (the longer of the
#: median spacing and the first and last segments)
CLOSE_GAP_SPACINGS = 1.5
#: ... and the closing segment turns at its two ends by at most this much [deg] more than the path
#: turns anywhere else between its points
CLOSE_TURN_SLACK_DEG = 15.0
#: ends further apart than this many spacings are plainly an open path (logged at INFO, not warned)
_PLAINLY_OPEN_SPACINGS = 3.0


def default_ds(length: float) -> float:
    """The waypoint spacing [m] of a path of about ``length`` [m] when none is given:
    :data:`DEFAULT_DS`, or ``length /`` :data:`DEFAULT_MIN_WAYPOINTS` on shorter paths, at least
    :data:`DEFAULT_MIN_DS`.

    >>> default_ds(500.0), default_ds(10.0), default_ds(0.003)
    (0.5, 0.1, 0.01)
    """
    length = float(length)
    if not np.isfinite(length) or length <= 0:
        return DEFAULT_DS
    return float(max(DEFAULT_MIN_DS, min(DEFAULT_DS, length / DEFAULT_MIN_WAYPOINTS)))


def resolve_ds(ds: float | None, points: np.ndarray, closed: bool) -> float:
    """``ds`` as given, or :func:`default_ds` of the polyline through ``points`` (n, 2) when None."""
    return default_ds(polyline_length(points, closed)) if ds is None else ds


def polyline_length(pts: np.ndarray, closed: bool) -> float:
    """Length [m] of the polyline through ``pts`` (n, 2), with the closing segment when ``closed``."""
    pts = np.asarray(pts, dtype=float)
    if len(pts) < 2:
        return 0.0
    ring = np.vstack([pts, pts[:1]]) if closed else pts
    return float(np.hypot(*np.diff(ring, axis=0).T).sum())


def default_corner_radius(points: np.ndarray, closed: bool, min_radius: float | None = None) -> float:
    """The corner radius [m] of a corner polygon when none is given: a quarter of its median edge,
    at least ``min_radius`` [m] (scenarios pass twice the vehicle's minimum turning radius, so that
    the car can steer round the corners with room to correct). The path builder then reduces it
    where two corners do not fit on their edge.

    >>> rect = np.array([[0, 0], [80, 0], [80, 40], [0, 40]], float)
    >>> default_corner_radius(rect, closed=True), default_corner_radius(rect, closed=True, min_radius=20.0)
    (15.0, 20.0)
    """
    pts = np.asarray(points, dtype=float)
    ring = np.vstack([pts, pts[:1]]) if closed else pts
    step = np.hypot(*np.diff(ring, axis=0).T)
    radius = CORNER_RADIUS_SHARE * float(np.median(step[step > 0])) if np.any(step > 0) else 1.0
    return max(radius, float(min_radius)) if min_radius is not None else radius


@dataclass(frozen=True)
class Closure:
    """What the data say about a path being a loop (:func:`closure`).

    Attributes
    ----------
    closed : bool
        A loop: the end meets the start and the closing segment fits.
    gap : float
        Distance from the last point to the first [m] (0 when the first point is repeated).
    spacing : float
        The point spacing the gap is compared with [m].
    join_turn_deg : float
        The largest turn where the closing segment meets the path [deg].
    path_turn_deg : float
        The largest turn between the path's own points [deg].
    reason : str
        The decision in words.
    """

    closed: bool
    gap: float
    spacing: float
    join_turn_deg: float
    path_turn_deg: float
    reason: str

    @property
    def plainly_open(self) -> bool:
        """The ends are far apart (more than three spacings): nothing to warn about."""
        return not self.closed and not self.gap <= _PLAINLY_OPEN_SPACINGS * self.spacing


def _turn_deg(a: np.ndarray, b: np.ndarray) -> float:
    """Turn [deg] from direction ``a`` to direction ``b`` (2-vectors), in [0, 180]."""
    cross = a[0] * b[1] - a[1] * b[0]
    return float(np.degrees(abs(np.arctan2(cross, a @ b))))


def closure(points: np.ndarray) -> Closure:
    """Decide from the points alone whether they are a loop.

    A loop when (1) the end meets the start: the last point is within :data:`CLOSE_GAP_SPACINGS`
    spacings of the first (or repeats it), and (2) the closing segment is consistent with the
    heading: where it meets the path it turns by at most :data:`CLOSE_TURN_SLACK_DEG` more than
    the path turns anywhere between its own points. An out-and-back route whose ends lie side by
    side fails (2) (the closing segment crosses over at right angles), a loop typed without
    repeating its first point passes both, and so does a typed polygon (every corner turns alike).

    Parameters
    ----------
    points : ndarray, shape (n, 2)
        The points in driving order [m]; consecutive duplicates are ignored.

    Returns
    -------
    Closure
    """
    pts = np.asarray(points, dtype=float).reshape(-1, 2)
    if len(pts):
        scale = max(1.0, float(np.abs(pts).max()))
        step = np.hypot(*np.diff(pts, axis=0).T)
        pts = pts[np.concatenate([[True], step > 1e-9 * scale])]
    if len(pts) < 3:
        return Closure(False, float("nan"), float("nan"), float("nan"), float("nan"),
                       f"{len(pts)} distinct points cannot make a loop")
    seg = np.diff(pts, axis=0)
    step = np.hypot(*seg.T)
    med = float(np.median(step))
    gap = float(np.hypot(*(pts[-1] - pts[0])))
    repeated = gap <= 1e-6 * med
    turns = [_turn_deg(seg[i], seg[i + 1]) for i in range(len(seg) - 1)]
    if repeated:  # the first point repeated at the end: the seam is the turn from the last segment to the first
        if len(pts) < 4:
            return Closure(False, 0.0, med, float("nan"), max(turns), "the last point repeats the first of only 2")
        joins = [_turn_deg(seg[-1], seg[0])]
        spacing, gap = med, 0.0
    else:
        closing = pts[0] - pts[-1]
        joins = [_turn_deg(seg[-1], closing), _turn_deg(closing, seg[0])]
        spacing = max(med, float(step[0]), float(step[-1]))
    path_turn = max(turns)
    join = max(joins)
    near = repeated or gap <= CLOSE_GAP_SPACINGS * spacing
    fits = join <= path_turn + CLOSE_TURN_SLACK_DEG
    ends = ("its last point repeats the first" if repeated else
            f"its end is {gap:.3g} m from its start ({gap / spacing:.2g} point spacings of {spacing:.3g} m"
            + ("" if near else f", more than {CLOSE_GAP_SPACINGS:g}") + ")")
    turn = (f"a closing segment {'turns' if fits else 'would turn'} by {join:.0f} deg where it meets the path, "
            f"which turns by at most {path_turn:.0f} deg between its points"
            + ("" if fits else f" (allowed: {CLOSE_TURN_SLACK_DEG:g} deg more)"))
    why = ends if not near and fits else f"{ends} {'and' if near == fits else 'but'} {turn}"
    return Closure(bool(near and fits), gap, spacing, join, path_turn, why)


def decide_closed(points: np.ndarray, source: str) -> bool:
    """:func:`closure` of ``points``, logged: a warning with the way to override it (``closed=``),
    unless the ends are plainly apart (then at INFO). ``source`` names the data (file, argument)."""
    c = closure(points)
    if c.closed:
        logger.warning("%s: read as a closed loop (no closed= given; decided from the data: %s); pass closed=False "
                       "(scenario: path.closed: false, CLI: --open) to drive it as an open path", source, c.reason)
    elif c.plainly_open:
        logger.info("%s: read as an open path (no closed= given; %s)", source, c.reason)
    else:
        logger.warning("%s: read as an open path (no closed= given; decided from the data: %s); pass closed=True "
                       "(scenario: path.closed: true, CLI: --closed) to drive it as a loop", source, c.reason)
    return c.closed
