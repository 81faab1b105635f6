"""The drivable corridor: lateral bounds on e_y along the path from track widths, obstacles and grids."""
from __future__ import annotations

from mpc_tracking.environment.corridor import Corridor, ObstacleCorridor, TrackCorridor, car_bounds, choose_gaps
from mpc_tracking.environment.obstacles import CircleObstacle, MovingCircle, PolygonObstacle
from mpc_tracking.environment.occupancy_grid import OccupancyGrid

__all__ = [
    "Corridor", "TrackCorridor", "ObstacleCorridor", "choose_gaps", "car_bounds",
    "CircleObstacle", "MovingCircle", "PolygonObstacle", "OccupancyGrid",
]
