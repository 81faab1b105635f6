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
import os
import shutil
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np

from mpc_tracking.errors import InputError
from mpc_tracking.fileio import atomic_path, json_safe, write_json

__all__ = [
    "prepare_folder", "atomic_path", "write_csv", "write_json", "save_figure", "write_run_files",
    "json_safe", "PLOT_FILES", "staged_folder", "Staging", "INCOMPLETE_NAME",
]

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
    scenario is given) and the plots. Returns the files written.
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
        left alone), remove the staging folder and a stale ``INCOMPLETE``; returns the final files."""
        from mpc_tracking.fileio import named_oserror

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


@contextlib.contextmanager
def staged_folder(target: str | Path, what: str = "run") -> Iterator[Staging]:
    """Write into a hidden folder beside ``target`` and move the files into ``target`` on :meth:`Staging.commit`.

    When the block raises before the commit (Ctrl-C, SIGTERM, a disk error, a failure), the
    staged files are removed and ``target/INCOMPLETE`` says what stopped the ``what``; bad input
    (:class:`~mpc_tracking.errors.InputError`) only removes the staged files. ``target`` must exist
    (:func:`prepare_folder`).
    """
    staging = Staging(Path(target))
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
