"""The 3D car (``ackermann3d``) with another balance than the sedan's: the cars the identification and the grip
tests drive besides the preset (the benchmarks' ``bench_identify.OVERSTEER`` and ``bench_grip_change.CARS``)."""
from __future__ import annotations

from typing import Any

#: rear-driven and oversteering: the CG 0.5 m further back, the roll stiffness on the rear axle (it spins at its
#: limit instead of running wide)
OVERSTEER: dict[str, Any] = {"preset": "sedan", "cg_to_front": 1.6, "arb_front": 0.0, "arb_rear": 3.0e4}
#: a heavy, tall, front-driven car (an SUV): mass and inertias x1.4, the CG 0.75 m high and further forward, a
#: stiffer front anti-roll bar (strong understeer, more load transfer)
SUV: dict[str, Any] = {"preset": "sedan", "drive": "fwd", "mass": 1.4 * 1573.0, "inertia": (770.0, 4060.0, 4022.0),
                       "cg_height": 0.75, "cg_to_front": 1.0, "arb_front": 2.0e4}
