"""Writing the files of a run: result ``.npz``, time-series CSV, metrics + scenario JSON, plots.

Every file is written under a temporary name in the target folder and renamed when complete,
so a crash never leaves a half-written file under the final name (:mod:`mpc_tracking.fileio`;
``atomic_path``, ``json_safe`` and ``write_json`` are re-exported here). A whole run is written
through :func:`staged_folder`: into a hidden folder beside the output folder, moved into place
at the end; a run stopped midway (Ctrl-C, SIGTERM, a disk error) leaves an ``INCOMPLETE`` file
in the output folder saying so instead of a mix of old and new files.
"""
from __future__ import annotations

import contextlib
import datetime
import logging
import os
import re
import shutil
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np

from mpc_tracking.errors import InputError
from mpc_tracking.fileio import atomic_path, json_safe, write_json

__all__ = [
    "prepare_folder", "atomic_path", "write_csv", "write_json", "save_figure", "write_run_files",
    "json_safe", "PLOT_FILES", "staged_folder", "Staging", "INCOMPLETE_NAME", "remove_stale_staging",
    "check_output_formats", "check_log_outputs", "write_log_outputs",
]

logger = logging.getLogger(__name__)

#: file written into an output folder whose run was stopped before its files were complete
INCOMPLETE_NAME = "INCOMPLETE"

#: file name of each plot kind
PLOT_FILES = {"track": "track.png", "timeseries": "timeseries.png", "path": "path.png"}


def prepare_folder(folder: str | Path) -> Path:
    """Create ``folder`` (and parents) and check that files can be written in it.

    Raises
    ------
    InputError
        The folder cannot be created or written (names the folder and the cause).
    """
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".write-test-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise InputError(f"output folder {folder}: cannot write there ({exc.strerror or exc})") from None
    return folder


def check_animation_file(out: str | Path, what: str) -> Path:
    """The animation file ``out`` if its format can be written here, else :class:`InputError`.

    The one check of an animation's format: ``animate --out``, a scenario's
    ``outputs.animation.file`` in ``check`` and at the start of ``run`` (before simulating, not
    after), so ``check`` passes exactly what ``run`` writes.

    Parameters
    ----------
    out : str or Path
    what : str
        The option or key, for the message (``"--out"``, ``"outputs.animation.file"``).
    """
    from mpc_tracking.viz.animation import FORMATS, available_formats

    out = Path(out)
    suffix = out.suffix.lower()
    if suffix not in FORMATS:
        raise InputError(f"{what} {out}: unknown animation format {out.suffix!r}; expected one of {', '.join(FORMATS)}")
    reason = available_formats()[suffix]
    if reason is not None:
        raise InputError(f"{what} {out}: {reason}")
    return out


def check_output_formats(scenario) -> None:
    """Every output format a scenario asks for can be written: its animation file is a plain file
    name (written into the output folder) in a format this installation writes."""
    check_log_outputs(scenario.outputs.mcap, scenario.outputs.bag)
    name = scenario.outputs.animation.file
    if not name:
        return
    p = Path(name)
    if p.name != name or p.name in ("", ".", ".."):
        raise InputError(f"outputs.animation.file {name!r}: expected a file name in the output folder (no folder "
                         "part), e.g. run.gif")
    check_animation_file(p, "outputs.animation.file")


def check_log_outputs(mcap: str | None, bag: str | None) -> None:
    """``outputs.mcap`` is a plain ``.mcap`` file name and ``outputs.bag`` a plain folder name (both
    written into the output folder), and the packages that write them are installed; else
    :class:`InputError` naming the key."""
    import importlib.util

    for key, name, example in (("outputs.mcap", mcap, "run.mcap"), ("outputs.bag", bag, "run_bag")):
        if name is None:
            continue
        p = Path(name)
        if p.name != name or p.name in ("", ".", "..") or (key == "outputs.mcap" and p.suffix.lower() != ".mcap"):
            raise InputError(f"{key} {name!r}: expected a {'file' if key == 'outputs.mcap' else 'folder'} name in "
                             f"the output folder (no folder part), e.g. {example}")
        if importlib.util.find_spec("rosbags") is None:
            raise InputError(f"{key} {name!r}: writing MCAP files and ROS 2 bags needs the optional package "
                             "'rosbags': pip install \"mpc_tracking[logs]\"")


def write_log_outputs(result, folder: str | Path, outputs: dict | None) -> list[Path]:
    """Write the run as MCAP / a ROS 2 bag into ``folder`` when the scenario's ``outputs`` mapping
    asks for it (keys ``mcap``, ``bag``: the same files as ``run --mcap`` / ``--bag``); returns
    the files written (a bag folder's files)."""
    from mpc_tracking.logs.export import write_run

    outputs = outputs or {}
    check_log_outputs(outputs.get("mcap"), outputs.get("bag"))
    folder = Path(folder)
    files: list[Path] = []
    if outputs.get("mcap"):
        files.append(write_run(result, folder / outputs["mcap"], storage="mcap"))
    if outputs.get("bag"):
        bag = write_run(result, folder / outputs["bag"], storage="sqlite3")
        files.extend(sorted(f for f in bag.rglob("*") if f.is_file()))
    return files


def write_csv(target: str | Path, series: dict[str, np.ndarray]) -> Path:
    """Write equal-length time series as CSV (header row of names, one row per control step)."""
    target = Path(target)
    names = list(series)
    cols = np.column_stack([np.asarray(series[n], dtype=float) for n in names]) if names else np.zeros((0, 0))
    with atomic_path(target) as tmp:
        np.savetxt(tmp, cols, delimiter=",", header=",".join(names), comments="", fmt="%.9g")
    return target


def save_figure(fig, target: str | Path, dpi: int = 110) -> Path:
    """Save a matplotlib figure atomically (format from the suffix)."""
    target = Path(target)
    with atomic_path(target) as tmp:
        fig.savefig(tmp, dpi=dpi, format=target.suffix.lstrip(".") or "png")
    return target


def _plot(kind: str, result):
    from mpc_tracking.viz import plotting

    if kind == "track":
        return plotting.plot_track(result)[0]
    if kind == "timeseries":
        fig = plotting.plot_timeseries(result)[0]
        fig.tight_layout()
        return fig
    if kind == "path":
        return plotting.plot_path_view(
            result.path, v_max=plotting.run_setting(result, "v_max"), a_y_max=plotting.run_setting(result, "a_y_max"),
            obstacles=plotting.scenario_obstacles(result),
        )[0]
    raise InputError(f"plots: unknown plot kind {kind!r}; expected some of {list(PLOT_FILES)}")


def write_plots(result, folder: str | Path, kinds: Sequence[str] = ("track", "timeseries")) -> list[Path]:
    """Write the requested figures (``track``, ``timeseries``, ``path``) as PNG; returns the files."""
    folder = Path(folder)
    files = []
    for kind in kinds:
        if kind not in PLOT_FILES:
            raise InputError(f"plots: unknown plot kind {kind!r}; expected some of {list(PLOT_FILES)}")
        if kind != "path" and len(result) == 0:
            continue
        files.append(save_figure(_plot(kind, result), folder / PLOT_FILES[kind]))
    return files


def write_run_files(result, folder: str | Path, *, plots: Sequence[str] = ("track", "timeseries"),
                    scenario: dict | None = None, data: bool = True,
                    log: Callable[[Path], None] | None = None) -> list[Path]:
    """Write everything about a run into ``folder``.

    Files: ``result.npz`` (:meth:`SimulationResult.save`), ``timeseries.csv``, ``metrics.json``
    (metrics, outcome, lap times, info and the resolved scenario), ``scenario.yaml`` (when a
    scenario is given), the plots, and the MCAP file / ROS 2 bag of the scenario's
    ``outputs.mcap`` / ``outputs.bag`` (:func:`write_log_outputs`). Returns the files written.
    """
    folder = prepare_folder(folder)
    files: list[Path] = []

    def done(f: Path) -> None:
        files.append(f)
        if log is not None:
            log(f)

    if data:
        target = folder / "result.npz"
        with atomic_path(target) as tmp:
            result.save(tmp)
        done(target)
        done(write_csv(folder / "timeseries.csv", result.series))
        info = {k: v for k, v in (result.info or {}).items() if k != "scenario"}
        done(write_json(folder / "metrics.json", {
            "metrics": result.metrics, "reason": result.reason, "lap_times": list(result.lap_times),
            "info": info, "scenario": scenario if scenario is not None else (result.info or {}).get("scenario"),
        }))
        if scenario is not None:
            import yaml

            target = folder / "scenario.yaml"
            with atomic_path(target) as tmp:
                tmp.write_text(yaml.safe_dump(json_safe(scenario), sort_keys=False, default_flow_style=None))
            done(target)
    for f in write_plots(result, folder, plots):
        done(f)
    if scenario is not None and len(result):
        for f in write_log_outputs(result, folder, scenario.get("outputs")):
            done(f)
    return files


class Staging:
    """A hidden folder beside ``target`` that a run writes into; :meth:`commit` moves its files into ``target``.

    Attributes
    ----------
    folder : Path
        Where to write (``.<target name>.partial-<pid>`` beside ``target``).
    target : Path
        The output folder.
    """

    def __init__(self, target: Path) -> None:
        self.target = target
        self.folder = target.parent / f".{target.name}.partial-{os.getpid()}"
        self.committed = False

    def commit(self) -> list[Path]:
        """Move every staged file into :attr:`target` (replacing files of the same name; others are
        left alone), remove the staging folder and a stale ``INCOMPLETE``; returns the final files.

        ``target/INCOMPLETE`` is written before the first move and removed after the last: a
        process killed while the files move (SIGKILL, power loss) leaves the marker, never a
        silent mix of old and new files.
        """
        from mpc_tracking.fileio import named_oserror

        _write_marker(self.target, f"the files of a run were being moved in from {self.folder.name} (pid "
                                   f"{os.getpid()}) when it stopped; some files here may be from an earlier run")
        moved = []
        for f in sorted(p for p in self.folder.rglob("*") if p.is_file()):
            dest = self.target / f.relative_to(self.folder)
            with named_oserror(dest):
                dest.parent.mkdir(parents=True, exist_ok=True)
                os.replace(f, dest)
            moved.append(dest)
        shutil.rmtree(self.folder, ignore_errors=True)
        with contextlib.suppress(OSError):
            (self.target / INCOMPLETE_NAME).unlink(missing_ok=True)
        self.committed = True
        return moved

    def final(self, path: Path) -> Path:
        """Where a staged file ends up after :meth:`commit`."""
        return self.target / Path(path).relative_to(self.folder)


def _write_marker(target: Path, text: str) -> None:
    """Write ``target/INCOMPLETE`` with a time stamp and ``text`` (flushed to disk: it must survive a kill)."""
    from mpc_tracking.fileio import named_oserror

    stamp = datetime.datetime.now().isoformat(timespec="seconds")
    marker = target / INCOMPLETE_NAME
    with named_oserror(marker), open(marker, "w", encoding="utf-8") as fh:
        fh.write(f"{stamp}: {text}\n")
        fh.flush()
        os.fsync(fh.fileno())


def _pid_alive(pid: int) -> bool:
    """True when a process ``pid`` exists (or may exist: another user's)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def remove_stale_staging(target: str | Path) -> list[Path]:
    """Remove the staging folders ``.NAME.partial-PID`` beside ``target`` whose process is gone.

    A run killed with SIGKILL (or by a power loss) cannot clean up; the next run into the same
    folder removes what it left (logged). Folders of live processes (another run writing into
    the same place now) are left alone. Returns the folders removed.
    """
    target = Path(target)
    removed: list[Path] = []
    pattern = re.compile(rf"^\.{re.escape(target.name)}\.partial-(\d+)$")
    try:
        siblings = list(target.parent.iterdir())
    except OSError:
        return removed
    for p in siblings:
        m = pattern.match(p.name)
        if m is None or not p.is_dir() or p.is_symlink():
            continue
        pid = int(m.group(1))
        if pid == os.getpid() or _pid_alive(pid):
            continue
        shutil.rmtree(p, ignore_errors=True)
        if not p.exists():
            logger.warning("removed %s, left by an earlier run (process %d) that was killed", p, pid)
            removed.append(p)
    return removed


@contextlib.contextmanager
def staged_folder(target: str | Path, what: str = "run") -> Iterator[Staging]:
    """Write into a hidden folder beside ``target`` and move the files into ``target`` on :meth:`Staging.commit`.

    When the block raises before the commit (Ctrl-C, SIGTERM, a disk error, a failure), the
    staged files are removed and ``target/INCOMPLETE`` says what stopped the ``what``; bad input
    (:class:`~mpc_tracking.errors.InputError`) only removes the staged files. ``target`` must exist
    (:func:`prepare_folder`).
    """
    staging = Staging(Path(target))
    remove_stale_staging(staging.target)
    shutil.rmtree(staging.folder, ignore_errors=True)
    prepare_folder(staging.folder)
    try:
        yield staging
    except BaseException as exc:
        shutil.rmtree(staging.folder, ignore_errors=True)
        if not staging.committed and not isinstance(exc, InputError):
            why = "interrupted" if isinstance(exc, KeyboardInterrupt) else f"{type(exc).__name__}: {exc}"
            text = (f"{datetime.datetime.now().isoformat(timespec='seconds')}: the {what} writing into this folder "
                    f"stopped before its files were complete ({' '.join(why.split())}); files here are from an "
                    f"earlier run, if any\n")
            with contextlib.suppress(OSError):
                (staging.target / INCOMPLETE_NAME).write_text(text, encoding="utf-8")
        raise
    finally:
        if staging.committed or staging.folder.exists():
            shutil.rmtree(staging.folder, ignore_errors=True)
