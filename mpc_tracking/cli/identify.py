"""``mpc-tracking identify --plant NAME [--set plant.params.K=V] --out vehicle.yaml`` (:func:`add_identify_command`).

Every option of :func:`mpc_tracking.identify` has a flag: ``--speed``, ``--dt``, ``--mu``, ``--mu-max``,
``--a-y-cap``, ``--ramp-rate``, ``--shape-factor``, ``--smooth``, ``--prediction-step``, ``--max-time``,
``--[no-]fit-inertia``, ``--no-holdout`` and the geometry ``--mass``, ``--yaw-inertia``, ``--l-f``, ``--l-r``,
``--cg-height``, ``--gravity``, ``--wheelbase``.

Command-line code: it prints the fit summary; the logic lives in :mod:`mpc_tracking.identification`.
Exit codes: 0 written, 1 the plant could not do a manoeuvre (one line naming it), 2 bad input.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

from mpc_tracking.cli.options import number
from mpc_tracking.errors import IdentificationError, InputError

__all__ = ["add_identify_command"]


def _split_sets(items: list[str]) -> tuple[dict[str, Any], str | None, dict[str, Any]]:
    """``--set`` values -> (plant params, actuator name, actuator params)."""
    from mpc_tracking.cli.options import parse_set_option

    plant: dict[str, Any] = {}
    act_params: dict[str, Any] = {}
    act_name = None
    for text in items:
        key, value = parse_set_option(text)
        if key.startswith("plant.params."):
            plant[key[len("plant.params."):]] = value
        elif key.startswith("actuation.params."):
            act_params[key[len("actuation.params."):]] = value
        elif key == "actuation.name":
            act_name = value
        else:
            raise InputError(f"--set {text!r}: identify takes plant.params.KEY, actuation.name and "
                             f"actuation.params.KEY")
    return plant, act_name, act_params


#: identify() keyword arguments the command passes when given (same names as the options)
_OPTIONS = ("speed", "dt", "mu", "mu_max", "ramp_rate", "a_y_cap", "smooth", "prediction_step", "max_time",
            "fit_inertia")
#: geometry key -> option destination
_GEOMETRY = {"mass": "mass", "I_z": "yaw_inertia", "l_f": "l_f", "l_r": "l_r", "h_cg": "cg_height", "g": "gravity",
             "wheelbase": "wheelbase"}


def _cmd_identify(args: argparse.Namespace) -> int:
    from mpc_tracking.actuation import make_actuator
    from mpc_tracking.identification import identify
    from mpc_tracking.models import create_model

    if args.log:
        from mpc_tracking.cli.logs import run_identify_from_log

        return run_identify_from_log(args)
    if not args.plant:
        raise InputError("identify: give --plant NAME (a simulated plant) or --log LOG (a recorded drive)")
    params, act_name, act_params = _split_sets(args.set)
    plant = create_model(args.plant, params)
    actuator = None
    if act_name or act_params:
        from mpc_tracking.actuation import default_actuator

        actuator = make_actuator(act_name or default_actuator(plant).name, **act_params)
    options = {k: getattr(args, k) for k in _OPTIONS if getattr(args, k) is not None}
    geometry = {k: getattr(args, a) for k, a in _GEOMETRY.items() if getattr(args, a) is not None}
    try:
        result = identify(plant, actuator, shape_factor=args.shape_factor, geometry=geometry or None,
                          holdout=not args.no_holdout, **options)
    except IdentificationError as exc:
        print(f"mpc-tracking: identify failed: {' '.join(str(exc).split())}", file=sys.stderr)
        return 1
    out = result.to_yaml(args.out or f"{args.plant}_vehicle.yaml")
    if not args.quiet:
        print(f"identified {args.plant} ({', '.join(f'{k}={v}' for k, v in params.items()) or 'default parameters'})")
        print(result.summary())
        print(f"wrote {out}")
    return 0


def add_identify_command(sub: Any) -> None:
    """Add the ``identify`` subparser to ``sub`` (an argparse subparsers action)."""
    p = sub.add_parser(
        "identify", help="identify a plant's dynamic model, speed lag and limits; write a vehicle file",
        description="Run excitation manoeuvres (acceleration, braking, constant-steer speed ramp, step steers, "
                    "sine sweep) on a registered plant through its actuator, fit the dynamic prediction model "
                    "(mu, axle cornering stiffnesses), the speed lag and the acceleration limits by least squares, "
                    "report the prediction error on hold-out manoeuvres and write a vehicle file (scenario key "
                    "vehicle.file). Exit 1 when the plant cannot do a manoeuvre.")
    p.add_argument("--plant", metavar="NAME", help="registered plant (mpc-tracking models)")
    p.add_argument("--set", action="append", metavar="KEY=VALUE", default=[],
                   help="plant.params.KEY=V, actuation.name=NAME or actuation.params.KEY=V (repeatable)")
    p.add_argument("--out", metavar="FILE.yaml", help="vehicle file (default NAME_vehicle.yaml)")
    p.add_argument("--speed", type=number(gt=0, unit="m/s"),
                   help="reference speed of the manoeuvres [m/s] (default 3.5 sqrt(g L))")
    p.add_argument("--dt", type=number(gt=0, unit="s"), help="plant step [s] (default min(0.01, sqrt(L/g)/50))")
    p.add_argument("--mu", type=number(gt=0),
                   help="use this friction coefficient instead of measuring it (also bounds the manoeuvre sizes)")
    p.add_argument("--mu-max", dest="mu_max", type=number(gt=0),
                   help="upper bound of the friction coefficient: sizes the manoeuvres from min(ramp limit, "
                        "mu_max g) and caps the identified mu")
    p.add_argument("--a-y-cap", dest="a_y_cap", type=number(gt=0, unit="m/s^2"),
                   help="lateral acceleration at which the speed ramp stops unsaturated [m/s^2] (default 1.5 g)")
    p.add_argument("--ramp-rate", dest="ramp_rate", type=number(gt=0, unit="m/s^2"),
                   help="speed ramp of the constant-steer run [m/s^2]")
    p.add_argument("--shape-factor", dest="shape_factor", type=number(gt=0), default=1.3,
                   help="Pacejka shape factor C of both axles (default 1.3)")
    p.add_argument("--smooth", type=number(gt=0, unit="s"),
                   help="Savitzky-Golay window of the measured derivatives [s]")
    p.add_argument("--prediction-step", dest="prediction_step", type=number(gt=0, unit="s"),
                   help="horizon of the one-step prediction errors [s] (default 0.1)")
    p.add_argument("--max-time", dest="max_time", type=number(gt=0, unit="s"),
                   help="longest time a manoeuvre may wait for its speed [s] (default 80 sqrt(L/g))")
    p.add_argument("--fit-inertia", dest="fit_inertia", action=argparse.BooleanOptionalAction, default=None,
                   help="fit the yaw inertia (default: only when neither the plant nor --yaw-inertia gives it)")
    p.add_argument("--no-holdout", dest="no_holdout", action="store_true", help="skip the hold-out manoeuvres")
    g = p.add_argument_group("geometry (overrides what the plant declares: MotionModel.mass, yaw_inertia, l_f, "
                             "l_r, cg_height)")
    g.add_argument("--mass", type=number(gt=0, unit="kg"), help="mass [kg]")
    g.add_argument("--yaw-inertia", dest="yaw_inertia", type=number(gt=0, unit="kg m^2"),
                   help="yaw moment of inertia about the CG [kg m^2]")
    g.add_argument("--l-f", dest="l_f", type=number(gt=0, unit="m"), help="CG to front axle [m]")
    g.add_argument("--l-r", dest="l_r", type=number(gt=0, unit="m"), help="CG to rear axle [m]")
    g.add_argument("--cg-height", dest="cg_height", type=number(ge=0, unit="m"), help="CG height [m]")
    g.add_argument("--gravity", type=number(gt=0, unit="m/s^2"), help="gravitational acceleration [m/s^2]")
    p.add_argument("-q", "--quiet", action="store_true", help="no summary")
    from mpc_tracking.cli.logs import add_identify_log_options

    add_identify_log_options(p)
    p.set_defaults(func=_cmd_identify)
