"""One exception hierarchy for mpc_tracking.

Every error raised on purpose by the library derives from :class:`MPCTrackingError`.
Errors caused by bad input additionally derive from :class:`ValueError`, so callers
that only know the standard library can still catch them.
"""
from __future__ import annotations

__all__ = [
    "MPCTrackingError",
    "InputError",
    "PathError",
    "PathFormatError",
    "SettingsError",
    "ModelError",
    "UnknownModelError",
    "ScenarioError",
    "SolverError",
    "SimulationError",
    "NonFiniteStateError",
    "ClusterError",
    "IdentificationError",
    "VehicleFileError",
    "LogError",
]


class MPCTrackingError(Exception):
    """Base class of every error raised on purpose by mpc_tracking."""


class InputError(MPCTrackingError, ValueError):
    """A public function received an argument it cannot work with."""


class PathError(InputError):
    """Waypoints, widths or path parameters are invalid (too few points, NaN, ds <= 0 ...)."""


class PathFormatError(PathError):
    """A path file cannot be parsed; the message names the file and, where known, the line."""


class SettingsError(InputError):
    """A settings dataclass (MPC, speed profile, simulation) was given inconsistent values."""


class ModelError(InputError):
    """A motion model was given unknown, missing or non-physical parameters, or a bad state/input."""


class UnknownModelError(ModelError, KeyError):
    """A motion model name is not registered; the message lists the known names."""

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return str(self.args[0]) if self.args else ""


class ScenarioError(InputError):
    """A scenario file is invalid; the message names the file, line and key.

    ``key`` is the dotted key at fault when the raiser knows it (``"plant.params.mass"``), else None.
    """

    def __init__(self, message: str = "", *, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class SolverError(MPCTrackingError, RuntimeError):
    """The QP solver could not be set up or failed in a way the fallback policy cannot absorb."""


class SimulationError(MPCTrackingError, RuntimeError):
    """A closed-loop run could not proceed (raised only where no partial result can be returned)."""


class NonFiniteStateError(SimulationError):
    """A plant's state became non-finite (NaN or inf) in a step; :func:`mpc_tracking.simulate`
    ends the run with the outcome ``non_finite_state`` and returns what it logged.

    ``t`` [s]: when raised by a plant's held-command stepper (several steps in one call), the time the
    failing step started at; else None.
    """

    def __init__(self, message: str, t: float | None = None) -> None:
        super().__init__(message)
        self.t = t


class ClusterError(MPCTrackingError, ConnectionError):
    """A compute cluster (Dask scheduler) cannot be reached or used; the message names the address."""


class IdentificationError(MPCTrackingError, RuntimeError):
    """A plant could not perform an identification manoeuvre (never reached the commanded speed,
    spun, diverged, became non-finite); the message names the manoeuvre and what was reached."""


class VehicleFileError(InputError):
    """A vehicle file (``mpc-tracking identify``) is unreadable, or a parameter is missing or out of
    range; the message names the file and the key."""


class LogError(InputError):
    """A drive log (ROS 2 bag, MCAP, CSV log) cannot be read as asked: unknown topic (the message
    lists the available ones), time going backwards, mixed frames, a log too short or too gentle to
    identify anything; the message names the file, the topic and where."""
