"""Provenance of a benchmark run: commit, date, machine and load, package versions, command line.

Every script in ``benchmarks/`` that prints or saves JSON puts :func:`provenance` under a
``"provenance"`` key (in what it prints and in what it saves); scripts that write CSV/PNG write a
sidecar ``<name>.json`` with it. Call :func:`finish` when the measurements are done to add the
load average at the end and the elapsed wall time::

    prov = provenance()
    ...  # measure
    out = {"provenance": finish(prov), ...}
    print(dumps(out))
    if args.save:
        save_json(RESULTS / "name.json", out)

Nothing here needs git, a particular platform or an optional package: what is missing is None.
"""
from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

BENCHMARKS = Path(__file__).resolve().parent
REPO = BENCHMARKS.parent
RESULTS = BENCHMARKS / "results"

#: distributions whose versions are recorded (None when not installed)
PACKAGES = ("mpc_tracking", "numpy", "scipy", "osqp", "cvxpy", "matplotlib", "PyYAML", "dask", "distributed",
            "imageio", "imageio-ffmpeg", "pillow", "tqdm")
#: environment variables that change numerical speed, recorded when set
ENV_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
_MAX_DIRTY_FILES = 40


def _git(*args: str) -> str | None:
    """Output of ``git args`` in the repository (trailing whitespace removed), or None when git or
    the repository is missing."""
    try:
        done = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=20, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.rstrip()


def git_info() -> dict[str, Any]:
    """Commit, branch and whether the working tree differs from it.

    Returns
    -------
    dict
        ``commit`` (full hash), ``branch``, ``dirty`` (bool) and ``dirty_files`` (``git status
        --porcelain`` lines, at most 40); all None when git is unavailable. In a tree shared by
        several people ``dirty`` is often true: ``dirty_files`` says whether it touches the code
        being measured.
    """
    commit = _git("rev-parse", "HEAD")
    if commit is None:
        return {"commit": None, "branch": None, "dirty": None, "dirty_files": None}
    status = _git("status", "--porcelain", "--untracked-files=no")
    lines = status.splitlines() if status else []
    return {"commit": commit, "branch": _git("rev-parse", "--abbrev-ref", "HEAD"),
            "dirty": bool(lines) if status is not None else None, "dirty_files": lines[:_MAX_DIRTY_FILES]}


def _cpu_model() -> str | None:
    """CPU model name (``platform.processor()`` is often empty on Linux; /proc/cpuinfo then)."""
    name = platform.processor()
    if name and name != platform.machine():
        return name
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith(("model name", "hardware", "cpu model")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return name or None


def loadavg() -> list[float] | None:
    """1, 5 and 15 minute load averages, or None where the OS has none."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        return None


def machine_info() -> dict[str, Any]:
    """Platform, CPU, core counts and the load average now (``loadavg_start``)."""
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = None
    return {"platform": platform.platform(), "machine": platform.machine(), "processor": _cpu_model(),
            "cpu_count": os.cpu_count(), "cpu_usable": usable, "loadavg_start": loadavg()}


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str | None]:
    """Installed version of each distribution (importlib.metadata), None when not installed."""
    out: dict[str, str | None] = {}
    for name in names:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = None
    return out


def command_line() -> str:
    """The command that ran this process, with the script relative to the repository root."""
    script = Path(sys.argv[0]).resolve() if sys.argv and sys.argv[0] else None
    if script is not None and script.is_relative_to(REPO):
        script = script.relative_to(REPO)
    return shlex.join(["python", str(script) if script else "-", *sys.argv[1:]])


def provenance() -> dict[str, Any]:
    """Where, when and with what a benchmark ran; call at the start of the run.

    Returns
    -------
    dict
        ``command``, ``date_utc`` (ISO 8601), ``git`` (:func:`git_info`), ``machine``
        (:func:`machine_info`), ``python``, ``packages`` (:func:`package_versions`) and ``env``
        (the speed-relevant environment variables that are set). The private key ``_t0`` lets
        :func:`finish` add the elapsed time; it is removed there.
    """
    return {
        "command": command_line(),
        "date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "git": git_info(),
        "machine": machine_info(),
        "python": platform.python_version(),
        "packages": package_versions(),
        "env": {k: os.environ[k] for k in ENV_VARS if k in os.environ},
        "_t0": time.perf_counter(),
    }


def finish(prov: dict[str, Any]) -> dict[str, Any]:
    """Add the load average at the end (``machine.loadavg_end``) and ``elapsed_s``; returns ``prov``."""
    t0 = prov.pop("_t0", None)
    prov["machine"]["loadavg_end"] = loadavg()
    if t0 is not None:
        prov["elapsed_s"] = round(time.perf_counter() - t0, 2)
    return prov


def dumps(data: dict[str, Any]) -> str:
    """JSON text as the benchmarks print and save it (indent 1; non-JSON values as strings)."""
    return json.dumps(data, indent=1, default=str)


def save_json(path: Path, data: dict[str, Any]) -> Path:
    """Write ``data`` as JSON to ``path`` (parents created) and return the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(data) + "\n")
    return path
