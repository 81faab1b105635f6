"""Reference paths: waypoints in, uniform-s samples of x, y, heading, curvature, widths and speed out.

The names below load on first use (``mpc_tracking._lazy``): importing a module of this package
(``mpc_tracking.paths.interpolation`` from the controller, say) does not import the path readers
or SciPy's spline stack; ``mpc_tracking.paths.load_path`` does.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from mpc_tracking._lazy import attach as _attach
from mpc_tracking._lazy import lazy_names as _lazy_names

# NumPy only: loaded at once. ``speed_profile`` must be: it is also a submodule's name, and importing
# the submodule later would otherwise leave the module, not the function, under this name.
from mpc_tracking.paths.geometry import left_normal, offset_point
from mpc_tracking.paths.projection import Projection, wrap_angle
from mpc_tracking.paths.speed_profile import speed_profile

if TYPE_CHECKING:
    from mpc_tracking.paths.bundled import list_bundled
    from mpc_tracking.paths.io import load_path, read_raceline, read_tum, read_waypoints, read_xy, read_yaml, write_path
    from mpc_tracking.paths.reference_path import ReferencePath

_LAZY = _lazy_names({
    "mpc_tracking.paths.bundled": "list_bundled",
    "mpc_tracking.paths.io": "load_path read_raceline read_tum read_waypoints read_xy read_yaml write_path",
    "mpc_tracking.paths.reference_path": "ReferencePath",
})

__all__ = [
    "ReferencePath", "Projection", "wrap_angle", "speed_profile", "list_bundled",
    "offset_point", "left_normal",
    "load_path", "read_raceline", "read_tum", "read_waypoints", "read_xy", "read_yaml", "write_path",
]

if not TYPE_CHECKING:
    __getattr__, __dir__ = _attach(__name__, globals(), _LAZY)
