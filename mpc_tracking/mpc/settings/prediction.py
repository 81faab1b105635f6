"""The prediction group: horizon, step, model, linearization and timing."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mpc_tracking.mpc.settings.fields import documented, setting
from mpc_tracking.mpc.settings.group import SettingsGroup

__all__ = ["PredictionSettings", "LINEARIZATIONS", "MAX_HORIZON"]

LINEARIZATIONS = ("auto", "previous", "reference")
#: longest horizon accepted (a QP of ~100 000 variables; far beyond any useful look-ahead)
MAX_HORIZON = 10_000


def _discretizations() -> Sequence[str]:
    from mpc_tracking.models.prediction.spatial_bicycle import DISCRETIZATIONS

    return DISCRETIZATIONS


def _prediction_models() -> Sequence[str]:
    """'auto' and the registered prediction models, sorted (a list: the message says
    "one of ['auto", "dynamic", "kinematic']")."""
    from mpc_tracking.models.prediction import PREDICTION_MODELS

    return ["auto", *sorted(PREDICTION_MODELS)]


@documented
@dataclass(frozen=True)
class PredictionSettings(SettingsGroup):
    """How the controller predicts: horizon, step, model, linearization and timing."""

    horizon: int = setting(30, "Number N of prediction steps", "steps", ge=1, le=MAX_HORIZON)
    ds: float | None = setting(None, "Prediction step along the path (null: the path's waypoint spacing)", "m", gt=0)
    prediction_model: str = setting(
        "auto", "The controller's model of the car", "-", choices=_prediction_models,
        notes="'kinematic': the kinematic spatial bicycle (state e_y, e_psi, t; input v, delta), or 'dynamic': the "
              "dynamic one with tyre forces (adds v_x, v_y, r; input a_x, delta; see "
              ":mod:`mpc_tracking.models.prediction`). 'auto' (default): the dynamic model when the run has a "
              "plant that slips (the 3D car) or a vehicle file with tyre data (a scenario, see "
              ":func:`mpc_tracking.scenario.defaults.grip_defaults`), else the kinematic one; a "
              ":class:`SpatialMPC` built without a ``prediction`` object uses the kinematic model.")
    discretization: str = setting(
        "euler", "How the spatial model is discretized over one step ds", "-", choices=_discretizations,
        notes="'euler': explicit Euler (``A = I + ds Jx``), or 'rk4': one classical Runge-Kutta step with its exact "
              "sensitivities (more accurate at large ``ds``, a little more work).")
    linearization: str = setting(
        "auto", "Operating point of the linearization", "-", choices=LINEARIZATIONS,
        notes="'previous': the previous solution shifted by the distance travelled (real-time iteration); "
              "'reference': the reference (e = 0, v_ref, path curvature); 'auto' takes the prediction model's "
              "own choice (``PredictionModel.LINEARIZATION``): 'previous' for the kinematic model, 'reference' "
              "for the dynamic one (about a shifted plan its stiff tyre dynamics made the steering oscillate at "
              "the grip limit: RMS e_y 15-41 cm and 2-3 m excursions on the shared race tracks at 0.85 of the "
              "sedan's limit, 7-18 cm about the reference).")
    iterations: int = setting(1, "Re-linearizations per step (each re-solves about the newest solution)", "-", ge=1)
    control_period: float = setting(0.05, "Time between two solves; bounds the change of the first input", "s",
                                    gt=0)
    delay: float = setting(0.0, "Computation/actuation delay the measured state is predicted over", "s", ge=0)
