"""The compiled (numba) 3D Ackermann car against the numpy batch and the scalar path.

* agreement to 1e-12 (relative, and absolute near 0) of every state after hundreds of steps, for parameter sets
  that switch on every option of the kernel, from random states and inputs in every regime (standstill, slip floor,
  wheel slip, airborne wheels, friction-circle saturation, brakes holding a wheel, fast rotation);
* the check that the agreement test can fail: perturbing any one constant of the kernel by 1e-6, or flipping any
  one option, moves the states by more than 1000 times the tolerance in those scenarios, so a dropped or changed
  term shows;
* backend selection and its errors.

numba compiles once per session (or loads its cache): the kernels are loaded in a module-scoped fixture.
"""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from mpc_tracking import ModelError
from mpc_tracking.models import Ackermann3DBatch, Ackermann3DParams, create_model
from mpc_tracking.models.plants.ackermann3d import batch_numba

RTOL = ATOL = 1e-12
STATE = ("p", "R", "v", "w", "omega")
N_CARS = 12
BLOCKS, STEPS, DT = 5, 40, 0.01  # inputs change every STEPS steps of DT [s] (each step several substeps)

#: parameter sets that together switch every option of the kernel on and off
SCENARIOS = {
    "rc_car": Ackermann3DParams.rc_car(),
    # smooth limit, tanh squash, sqrt slip, explicit wheels, float32. With the reference's eps_v = 1e-3 m/s its explicit
    # wheel update chatters at the slip floor (h C_kappa r^2 / (I_w eps_v) ~ 120): there a 1-ulp change of the start
    # moves omega by 1e-6 within 2 s, numpy against numpy, and no implementation can agree to 1e-12
    "rc_car_reference": Ackermann3DParams.rc_car_reference(eps_v=0.2),
    "sedan": Ackermann3DParams.sedan(),  # load-sensitive tires, front anti-roll bar
    # implicit wheels with slip squashing (the squash enters the implicit wheel gain); with slip_denominator="sqrt"
    # as well one car's trajectory amplified rounding to half the tolerance (sqrt is covered by rc_car_reference)
    "sedan_variant": Ackermann3DParams.sedan(drive="fwd", brakes="driven", contact_damping="compression",
                                             slip_squash=True, arb_rear=8e3, mu_load=0.0, lateral_force=400.0),
    "rc_car_variant": Ackermann3DParams.rc_car(friction_limit="smooth", slip_squash=True, drive="awd",
                                               wheel_update="explicit", brake_model="torque", c_alpha_peak_load=1.5,
                                               mu_load=0.1, arb_front=300.0, arb_rear=100.0, lateral_force=0.5),
}
#: constants whose effect is below rounding in any regime: eps_force (1e-8 N^2) regularizes sqrt(|F|^2 + ...)
NEGLIGIBLE = {"eps_force"}


@pytest.fixture(scope="module")
def kernels():
    pytest.importorskip("numba")
    return batch_numba.load_kernels()


def _rot(roll: np.ndarray, pitch: np.ndarray) -> np.ndarray:
    """(3, 3, n) rotations Ry(pitch) Rx(roll)."""
    cr, sr, cp, sp = np.cos(roll), np.sin(roll), np.cos(pitch), np.sin(pitch)
    o, z = np.ones_like(roll), np.zeros_like(roll)
    Rx = np.array([[o, z, z], [z, cr, -sr], [z, sr, cr]])
    Ry = np.array([[cp, z, sp], [z, o, z], [-sp, z, cp]])
    return np.einsum("ikn,kjn->ijn", Ry, Rx)


def _start(P: Ackermann3DParams, backend: str, seed: int, nudge: bool = False) -> Ackermann3DBatch:
    """N_CARS cars in random states: at rest, below the slip floor, fast; dropped in or above the ground; rolled and
    pitched; sliding sideways; wheels spinning or locked; the last one airborne and rotating fast (Rodrigues branch
    of the rotation update)."""
    rng = np.random.default_rng(seed)
    n = N_CARS
    b = Ackermann3DBatch(P, n, backend=backend)
    big = P.mass > 100
    speed = rng.uniform(0.0, 25.0 if big else 3.0, n)
    speed[:2] = 0.0, 0.3 * P.eps_v
    b.reset(x=rng.uniform(-5, 5, n), y=rng.uniform(-5, 5, n), yaw=rng.uniform(-np.pi, np.pi, n), speed=speed)
    b.p[2] += P.cg_height * rng.uniform(-0.1, 0.3, n)
    b.R = np.einsum("ikn,kjn->ijn", b.R, _rot(*rng.uniform(-0.12, 0.12, (2, n))))
    b.v += rng.uniform(-0.3, 0.3, (3, n)) * speed
    b.w = rng.uniform(-1.5, 1.5, (3, n))
    b.omega *= rng.uniform(0.5, 1.5, (4, n))
    b.omega[:, 2] = 0.0
    h = P.substep()
    b.p[2, -1] += 2.0 * P.cg_height
    b.w[:, -1] = np.array([0.3, -0.4, 1.0]) * 0.02 / h  # |w| h > 0.01
    if nudge:  # every velocity 1 ulp larger
        b.v = np.nextafter(b.v, np.inf)
    return b


def _inputs(P: Ackermann3DParams, seed: int, per_car_tau: bool) -> list[tuple[np.ndarray, np.ndarray]]:
    """BLOCKS (delta (n,), tau (4, n) or (4, 1)) with torques up to 3x what the tires can carry (saturation) and
    negative ones (brakes)."""
    rng = np.random.default_rng(seed + 1)
    tau_max = 3.0 * P.mu * P.mass * P.gravity / 4 * P.wheel_radius
    out = []
    for block in range(BLOCKS):
        tau = rng.uniform(-1.0, 1.0, (4, N_CARS if per_car_tau else 1)) * tau_max
        if block == 0 and per_car_tau:
            tau[:, 0] = 0.0  # car 0 (at rest) stays at rest for a block
        out.append((rng.uniform(-0.5, 0.5, N_CARS), tau))
    return out


def _run(name: str, backend: str, numba_constants=None, record: bool = False, nudge: bool = False):
    """States after BLOCKS * STEPS steps of scenario ``name``; with ``record`` also the regimes the run visited."""
    P = SCENARIOS[name]
    seed = sorted(SCENARIOS).index(name)
    b = _start(P, backend, seed, nudge)
    if numba_constants is not None:
        b._numba = numba_constants
    seen = dict(standstill=False, slip_floor=False, slipping=False, airborne=False, saturated=False, locked=False,
                rodrigues=False, taylor=False)
    h = P.substep()
    for delta, tau in _inputs(P, seed, per_car_tau=name != "sedan"):
        for k in range(STEPS):
            b.step(DT, delta, tau)
            if record and k % 4 == 0:
                f = b.forces(delta, tau)
                fz = f["Fz"]
                fmax = P.friction(fz) * fz
                mag = np.hypot(f["Fx"], f["Fy"])
                speed = np.linalg.norm(b.v, axis=0)
                th2 = np.sum((h * b.w) ** 2, axis=0)
                seen["standstill"] |= bool(np.any(speed < 1e-3))
                seen["slip_floor"] |= bool(np.any((np.abs(f["v_t"]) < P.eps_v) & (fz > 0)))
                seen["slipping"] |= bool(np.any((np.abs(f["kappa"]) > 0.3) & (fz > 0)))
                seen["airborne"] |= bool(np.any(fz == 0.0))
                limit = 0.9 if P.friction_limit == "smooth" else 1.0 - 1e-9
                seen["saturated"] |= bool(np.any((fz > 0) & (mag >= limit * fmax)))
                seen["locked"] |= bool(np.any((b.omega == 0.0) & (tau < 0)))
                seen["rodrigues"] |= bool(np.any(th2 >= 1e-4))
                seen["taylor"] |= bool(np.any(th2 < 1e-4))
    states = {k: getattr(b, k).copy() for k in STATE}
    return (states, seen) if record else states


def _deviation(a: dict, b: dict) -> float:
    """Largest |a - b| / (ATOL + RTOL |b|) over every state (inf for a NaN): <= 1 is agreement."""
    worst = 0.0
    for k in STATE:
        with np.errstate(invalid="ignore"):
            r = np.abs(a[k] - b[k]) / (ATOL + RTOL * np.abs(b[k]))
        worst = max(worst, float(np.max(np.where(np.isnan(r), np.inf, r))))
    return worst


@pytest.fixture(scope="module")
def reference():
    """States and visited regimes of the numpy batch in every scenario."""
    return {name: _run(name, "numpy", record=True) for name in SCENARIOS}


def test_scenarios_visit_every_regime(reference):
    for name, (_, seen) in reference.items():
        missing = [k for k in ("slipping", "airborne", "saturated", "rodrigues", "taylor") if not seen[k]]
        assert not missing, f"{name}: the scenario never reached {missing}"
    missing = [k for k in reference["rc_car"][1] if not any(seen[k] for _, seen in reference.values())]
    assert not missing, f"no scenario reached {missing}"


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenarios_are_well_conditioned(name, kernels):
    """A 1-ulp change of the start moves no state by more than a quarter of the tolerance (measured: at most 0.07):
    the agreement test compares trajectories that rounding does not decide (a failure here is the scenario's, not
    the kernel's)."""
    assert _deviation(_run(name, "numba", nudge=True), _run(name, "numba")) < 0.25


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_batch_numba_matches_numpy(name, kernels, reference):
    states, _ = reference[name]
    b = _run(name, "numba")
    for k in STATE:
        np.testing.assert_allclose(b[k], states[k], rtol=RTOL, atol=ATOL, err_msg=f"{name}: {k}")


def test_agreement_test_sees_every_constant_and_option(kernels, reference):
    """Perturb one kernel constant by 1e-6 (relative, or 1e-6 absolute if 0) or flip one option: in some scenario
    the states must move by more than 1000x the agreement tolerance, so a kernel that dropped or changed the term
    would fail test_batch_numba_matches_numpy."""
    packed = {name: batch_numba.pack_constants(P.numeric()) for name, P in SCENARIOS.items()}
    unseen = []
    for which, names in (("prm", batch_numba.PRM_NAMES), ("flg", batch_numba.FLG_NAMES)):
        for i, key in enumerate(names):
            if key in NEGLIGIBLE:
                continue
            worst = 0.0
            for name in SCENARIOS:
                prm, flg = (a.copy() for a in packed[name])
                if which == "prm":
                    prm[i] = prm[i] * (1.0 + 1e-6) if prm[i] != 0.0 else 1e-6
                else:
                    flg[i] = 1 - flg[i]
                worst = max(worst, _deviation(_run(name, "numba", (prm, flg)), reference[name][0]))
                if worst > 1e3:
                    break
            if worst <= 1e3:
                unseen.append((key, worst))
    assert not unseen, f"the agreement test cannot see these kernel inputs (key, deviation/tolerance): {unseen}"


def test_numba_layout_matches_the_names(kernels):
    expected = {"prm": {k: i for i, k in enumerate(batch_numba.PRM_NAMES)},
                "flg": {k: i for i, k in enumerate(batch_numba.FLG_NAMES)}}
    assert expected == kernels.LAYOUT
    assert batch_numba.compile_seconds() is not None and batch_numba.compile_seconds() > 0


@pytest.mark.parametrize("preset, u, speed", [
    ("rc_car", [0.3, 0.0, 0.0, 0.08, 0.08], 2.0),
    ("rc_car_reference", [-0.2, 0.0, 0.0, 0.05, 0.05], 1.0),
    ("sedan", [0.15, 0.0, 0.0, 900.0, 900.0], 20.0),
])
def test_single_car_numba_matches_scalar(preset, u, speed, kernels):
    rng = np.random.default_rng(7)
    cars = [create_model("ackermann3d", {"preset": preset, "backend": be}, info={"speed": speed})
            for be in ("numpy", "numba")]
    assert [c.backend for c in cars] == ["numpy", "numba"]
    x0 = cars[0].state
    x0[2] += 0.2 * cars[0].vehicle.cg_height  # dropped from above: wheels airborne, then landing
    x0[15:18] = rng.uniform(-1, 1, 3)
    x0[18:22] *= rng.uniform(0.5, 1.5, 4)  # slipping wheels
    for c in cars:
        c.state = x0
    out = [[], []]
    u = np.array(u)
    for k in range(150):
        uk = u if k < 100 else np.r_[-u[0], -2.0 * u[3:], -2.0 * u[3:]]  # then brake hard, wheels locking
        for c, o in zip(cars, out, strict=True):
            o.append(c.step(k * DT, DT, uk))
    a, b = np.array(out[0]), np.array(out[1])
    np.testing.assert_allclose(b, a, rtol=RTOL, atol=ATOL)
    if cars[0].vehicle.brake_model == "friction":
        assert np.any(a[-1, 18:22] == 0.0), "the brakes never held a wheel"
    # the returned state is a new array each step
    x = cars[1].step(0.0, DT, u)
    x_copy = x.copy()
    cars[1].step(DT, DT, u)
    np.testing.assert_array_equal(x, x_copy)


def test_numba_batch_accepts_non_contiguous_state(kernels):
    P = SCENARIOS["rc_car"]
    a, b = (Ackermann3DBatch(P, 3, backend=be) for be in ("numpy", "numba"))
    for x in (a, b):
        x.reset(speed=np.array([0.5, 1.0, 2.0]))
    b.v = np.asfortranarray(b.v)[:, :]  # a copy the kernel cannot update in place is replaced by a C-ordered one
    b.omega = b.omega.astype(np.float32).astype(np.float64, order="F")
    a.omega = b.omega.copy()
    for _ in range(20):
        for x in (a, b):
            x.step(0.01, np.array([0.1, -0.2, 0.3]), np.array([0.0, 0.0, 0.05, 0.05])[:, None])
    for k in STATE:
        np.testing.assert_allclose(getattr(b, k), getattr(a, k), rtol=RTOL, atol=ATOL)
    b.p = np.zeros((3, 4))
    with pytest.raises(ModelError, match=r"p must be a writeable C-contiguous float64 array of shape \(3, 3\)"):
        b.step(0.01, 0.0, 0.0)


# ------------------------------------------------------------------ backend selection
def test_auto_backend_uses_numba_when_installed():
    expected = "numba" if batch_numba.numba_available() else "numpy"
    assert Ackermann3DBatch(SCENARIOS["rc_car"], 2).backend == expected
    assert create_model("ackermann3d").backend == expected
    assert Ackermann3DBatch(SCENARIOS["rc_car"], 2, backend="numpy").backend == "numpy"


@pytest.mark.parametrize("backend", ["cuda", "Numba", "", None, 1])
def test_bad_backend_names_the_argument_and_choices(backend):
    msg = r"backend must be one of \['numpy', 'numba', 'auto'\], got"
    with pytest.raises(ModelError, match="Ackermann3DBatch: " + msg):
        Ackermann3DBatch(SCENARIOS["rc_car"], 2, backend=backend)
    with pytest.raises(ModelError, match="ackermann3d: " + msg):
        create_model("ackermann3d", {"backend": backend})


def test_numba_backend_without_numba(monkeypatch):
    monkeypatch.setattr(batch_numba, "numba_available", lambda: False)
    for make in (lambda be: Ackermann3DBatch(SCENARIOS["rc_car"], 2, backend=be),
                 lambda be: create_model("ackermann3d", {"backend": be})):
        with pytest.raises(ModelError, match=r"backend='numba' needs numba.*pip install \"mpc_tracking\[fast\]\""):
            make("numba")
        assert make("auto").backend == "numpy"


def test_numpy_backend_never_imports_numba():
    """Importing the package and stepping with backend="numpy" leaves numba unimported (it is optional and its import
    alone takes ~0.3 s); the numba backend imports it on its first step, not before."""
    code = (
        "import sys\n"
        "import mpc_tracking as mt\n"
        "b = mt.Ackermann3DBatch(mt.Ackermann3DParams.rc_car(), 2, backend='numpy'); b.step(0.01, 0.1, 0.02)\n"
        "c = mt.create_model('ackermann3d', {'backend': 'numpy'}); c.step(0.0, 0.01, [0.1, 0, 0, 0.02, 0.02])\n"
        "assert 'numba' not in sys.modules, 'numba imported'\n"
        "mt.Ackermann3DBatch(mt.Ackermann3DParams.rc_car(), 2, backend='auto')\n"
        "mt.create_model('ackermann3d')\n"
        "assert 'numba' not in sys.modules, 'numba imported before the first step'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
