"""``kernels.warm_up()`` loads every compiled kernel a closed loop uses, so that a sweep worker that called it
never compiles (or loads from numba's cache) in the middle of a run."""
from __future__ import annotations

import subprocess
import sys

import pytest

from mpc_tracking.mpc import kernels

pytestmark = pytest.mark.skipif(not kernels.numba_available(), reason="numba is not installed (the [fast] extra)")

CHECK = """
import sys
from mpc_tracking.mpc import kernels
kernels.warm_up()
from mpc_tracking.models.plants import kinematic_bicycle
from mpc_tracking.models.plants.ackermann3d import batch_numba, held
from mpc_tracking.paths import projection
loaded = {"mpc": kernels._MODULE is not None,
          "kinematic_bicycle": bool(kinematic_bicycle._KERNEL), "ackermann3d_step": batch_numba._KERNELS is not None,
          "ackermann3d_held": held._KERNEL is not None}
print(sorted(k for k, v in loaded.items() if not v))
"""


def test_warm_up_loads_the_plant_kernels_too():
    """In a fresh process (the module caches start empty): after warm_up() no kernel is left to load."""
    out = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, timeout=600, check=True)
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout + out.stderr
