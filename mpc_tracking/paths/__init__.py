"""Reference paths: waypoints in, uniform-s samples of x, y, heading, curvature, widths and speed out."""
from __future__ import annotations

from mpc_tracking.paths.bundled import list_bundled
from mpc_tracking.paths.geometry import left_normal, offset_point
from mpc_tracking.paths.io import load_path, read_raceline, read_tum, read_waypoints, read_xy, read_yaml, write_path
from mpc_tracking.paths.projection import Projection, wrap_angle
from mpc_tracking.paths.reference_path import ReferencePath
from mpc_tracking.paths.speed_profile import speed_profile

__all__ = [
    "ReferencePath", "Projection", "wrap_angle", "speed_profile", "list_bundled",
    "offset_point", "left_normal",
    "load_path", "read_raceline", "read_tum", "read_waypoints", "read_xy", "read_yaml", "write_path",
]
