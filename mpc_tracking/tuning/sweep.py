"""Parameter sweeps: many closed-loop runs of one scenario with dotted-key overrides.

A sweep expands a grid (cartesian product of ``{"controller.horizon": [10, 20, 30], ...}``) or
an explicit list of override dicts, runs every point (``repeats`` times) on an executor --
in-process, local processes (default, one per core) or a Dask distributed cluster -- and
streams one row per run to CSV/JSON as runs finish (see :mod:`mpc_tracking.tuning.io`). Rows are
returned sorted by run index, so the same sweep gives the same rows on every executor (apart
from the timing fields :data:`TIMING_FIELDS`). A run that fails records its error in its row.

Points are ranked (:meth:`SweepResult.recommend`, the Pareto figure) by the RMS lateral error
after the start transient, ``rms_e_y_settled`` (:mod:`mpc_tracking.tuning.metrics`). A warning
that runs log (a path's spacing, a smoothed path) is shown once per sweep, with the number of
runs that gave it, not once per run. In a notebook the result shows as a table and the Pareto
figure (``_repr_html_``), ``to_pandas()`` gives the rows as a DataFrame, and the progress bar is
tqdm's notebook bar.

Examples
--------
Two horizons on the first 2 s of the default lap, in this process (a real sweep drops
``simulation.t_max`` and ``executor``, and passes ``out="out/sweep"`` to keep the files):

>>> from mpc_tracking.scenario.core import default_scenario
>>> short = default_scenario().with_overrides({"simulation.t_max": 2.0})
>>> res = sweep(short, {"controller.horizon": [10, 20]}, executor="serial", progress=False)
>>> [(row["controller.horizon"], row["status"]) for row in res.rows]
[(10, 'ok'), (20, 'ok')]
>>> rec = res.recommend()
>>> rec.param, rec.value in (10, 20)
('controller.horizon', True)
>>> repr(res).startswith("<SweepResult: 2 runs over controller.horizon")
True
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mpc_tracking.errors import InputError
from mpc_tracking.tuning.analysis import Recommendation, aggregate, plot_metrics, plot_pareto, recommend
from mpc_tracking.tuning.executors import check_connect_timeout, check_executor, iter_runs
from mpc_tracking.tuning.grid import check_keys, check_values, expand_grid, grid_size, point_key
from mpc_tracking.tuning.io import META_NAME, SweepWriter, read_rows, write_json_atomic
from mpc_tracking.tuning.metrics import DEFAULT_METRIC, settled_metrics

__all__ = ["sweep", "SweepResult", "run_point", "METRIC_FIELDS", "TIMING_FIELDS",
           "DEFAULT_MAX_RUNS", "MAX_SWEEP_RUNS"]

logger = logging.getLogger(__name__)

#: a sweep larger than this needs ``yes=True`` (``--yes``)
DEFAULT_MAX_RUNS = 200
#: no sweep launches more runs than this, even with ``yes=True`` (its task list alone would take
#: about 1 GB; split the grid into several sweeps)
MAX_SWEEP_RUNS = 1_000_000
#: metrics of :attr:`SimulationResult.metrics` written as CSV columns (in this order)
METRIC_FIELDS = (
    "reason", "lap_completed", "laps_completed", "lap_time", "duration", "steps", "rms_e_y", "max_abs_e_y",
    "rms_e_y_settled", "max_abs_e_y_settled", "settle_distance", "max_abs_e_psi", "max_abs_delta", "mean_speed",
    "corridor_violation_steps", "infeasible_steps",
    "solve_time_median", "solve_time_p95", "solve_time_max", "step_time_median", "step_time_p95",
    "realtime_overruns", "worst_step_time",
)
#: row fields that depend on the machine and load (everything else is identical across executors)
TIMING_FIELDS = ("solve_time_median", "solve_time_p95", "solve_time_max", "step_time_median", "step_time_p95",
                 "realtime_overruns", "worst_step_time", "wall_time", "cpu_time", "worker")
_HEAD = ("index", "point", "repeat", "key")
_TAIL = ("status", "error", "wall_time", "cpu_time", "worker")
_NO_FILE = ("<dict>", "overrides", "<default scenario>")

Runner = Callable[[dict, dict], Mapping[str, Any]]


# ---------------------------------------------------------------------- unit of work
def run_point(scenario: dict, overrides: Mapping[str, Any]) -> dict[str, Any]:
    """One closed-loop run: the scenario (as a dict) with ``overrides`` applied; its metrics.

    Parameters
    ----------
    scenario : dict
        :meth:`Scenario.to_dict` of the base scenario.
    overrides : mapping
        Dotted keys -> values (as ``--set``).

    Returns
    -------
    dict
        :attr:`SimulationResult.metrics` of the run and its
        :func:`~mpc_tracking.tuning.metrics.settled_metrics`.
    """
    from mpc_tracking.scenario.core import load_scenario, run_scenario

    sc = load_scenario(scenario).with_overrides(dict(overrides))
    result = run_scenario(sc)
    return {**result.metrics, **settled_metrics(result)}


def _base_row(task: dict) -> dict[str, Any]:
    row = {k: task[k] for k in _HEAD}
    row.update(task["overrides"])
    return row


def _failed_row(task: dict, exc: BaseException, wall: float = float("nan"),
                cpu: float = float("nan")) -> dict[str, Any]:
    row = _base_row(task)
    row.update(status="error", error=f"{type(exc).__name__}: {exc}", wall_time=wall, cpu_time=cpu,
               worker=_worker_name())
    return row


def _worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class _RunWarnings(logging.Handler):
    """Warnings that ``mpc_tracking`` loggers give while runs execute, kept per thread.

    Installed on the ``mpc_tracking`` logger (with ``propagate`` off) while any run of this
    process is under way: the records of a thread that runs a task are kept for its row;
    records of other threads, and those below WARNING, go on to the root logger's handlers.
    """

    def __init__(self) -> None:
        super().__init__(logging.NOTSET)
        self.kept: dict[int, list[str]] = {}
        self.users = 0
        self.lock_ = threading.Lock()
        self.saved_propagate = True

    def emit(self, record: logging.LogRecord) -> None:
        kept = self.kept.get(record.thread or 0) if record.levelno >= logging.WARNING else None
        if kept is not None:
            kept.append(record.getMessage())
        else:
            logging.getLogger().handle(record)


_RUN_WARNINGS = _RunWarnings()


@contextlib.contextmanager
def _captured_warnings() -> Iterator[list[str]]:
    """The warning messages ``mpc_tracking`` logs in this thread inside the block (not shown)."""
    log = logging.getLogger("mpc_tracking")
    h = _RUN_WARNINGS
    me: list[str] = []
    with h.lock_:
        if h.users == 0:
            h.saved_propagate = log.propagate
            log.addHandler(h)
            log.propagate = False
        h.users += 1
        h.kept[threading.get_ident()] = me
    try:
        yield me
    finally:
        with h.lock_:
            h.kept.pop(threading.get_ident(), None)
            h.users -= 1
            if h.users == 0:
                log.removeHandler(h)
                log.propagate = h.saved_propagate


def _execute(common: dict, task: dict) -> dict[str, Any]:
    """Run one task (module level so every executor can pickle it); never raises for a run error.

    The warnings the run logged come back in the row's ``warnings`` (a list of messages) for
    the sweep to show once; the sweep removes that field before the row is written."""
    with _captured_warnings() as warned:
        row = _execute_run(common, task)
    row["warnings"] = warned
    return row


def _execute_run(common: dict, task: dict) -> dict[str, Any]:
    runner: Runner = common.get("runner") or run_point
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        metrics = dict(runner(common["scenario"], task["overrides"]))
    except Exception as exc:  # one failing run is recorded, the sweep goes on
        logger.debug("run %d %s failed", task["index"], task["overrides"], exc_info=True)
        return _failed_row(task, exc, time.perf_counter() - t0, time.process_time() - c0)
    row = _base_row(task)
    row.update({k: v for k, v in metrics.items() if k not in row})
    reason = str(metrics.get("reason", ""))
    failed = reason.startswith("error")
    message = f"{reason}: {metrics.get('message', '')}"
    row.update(status="error" if failed else "ok", error=message if failed else "",
               wall_time=time.perf_counter() - t0, cpu_time=time.process_time() - c0, worker=_worker_name())
    return row


# ---------------------------------------------------------------------- the sweep
@dataclass
class SweepResult:
    """Rows of a finished sweep (sorted by run index) and where they were written.

    Attributes
    ----------
    rows : list of dict
        One per run: ``index, point, repeat, key``, one column per parameter, the metrics
        (:data:`METRIC_FIELDS`), ``status`` ("ok"/"error"), ``error``, ``wall_time`` and
        ``cpu_time`` (process CPU time) of the run [s], ``worker`` (host:pid).
    params : list of str
        The swept dotted keys.
    out : Path or None
        Output folder.
    skipped : int
        Runs taken from the output folder instead of being run (``resume``).
    wall_time : float
        Duration of the sweep [s].
    """

    rows: list[dict[str, Any]]
    params: list[str]
    out: Path | None = None
    skipped: int = 0
    wall_time: float = 0.0
    files: dict[str, Path] = field(default_factory=dict)

    @property
    def n_failed(self) -> int:
        return sum(r.get("status") != "ok" for r in self.rows)

    def points(self) -> list[dict[str, Any]]:
        """One row per grid point: metrics averaged over its successful repeats."""
        return aggregate(self.rows, self.params)

    def recommend(self, param: str | None = None, within: float = 0.05, metric: str = DEFAULT_METRIC,
                  cost: str = "solve_time_median") -> Recommendation | None:
        """The recommended point; ``None`` when no run succeeded (:func:`mpc_tracking.tuning.analysis.recommend`).

        By default ranked by ``rms_e_y_settled``, the RMS lateral error after the start transient
        (:mod:`mpc_tracking.tuning.metrics`)."""
        return recommend(self.rows, self.params, param=param, within=within, metric=metric, cost=cost)

    def plot_metrics(self, param: str | None = None, metrics: Sequence[str] | None = None,
                     axes: Sequence[Any] | None = None):
        """Plot (Figure, axes): each metric against ``param`` (:func:`~mpc_tracking.tuning.analysis.plot_metrics`)."""
        return plot_metrics(self.rows, self.params, param=param, metrics=metrics, axes=axes)

    def plot_pareto(self, chosen: Recommendation | None = None, metric: str = DEFAULT_METRIC,
                    cost: str = "solve_time_median", ax: Any = None):
        """Plot (Figure, Axes): tracking error vs compute time, the Pareto front, ``chosen`` marked.

        Shown inline as the last expression of a Jupyter cell; ``fig, ax = res.plot_pareto()``
        unpacks it."""
        return plot_pareto(self.rows, self.params, chosen=chosen, metric=metric, cost=cost, ax=ax)

    def to_pandas(self, points: bool = False) -> Any:
        """The rows (or, with ``points``, one row per grid point) as a :class:`pandas.DataFrame`.

        Columns as in ``sweep.csv`` (run index, parameters, metrics in SI units, status, timing);
        ``points=True`` gives :meth:`points` (repeats averaged). Needs the optional extra:
        ``pip install mpc_tracking[pandas]``.

        Returns
        -------
        pandas.DataFrame
            Indexed by run index (``points``: by grid point).
        """
        import importlib

        try:
            pd = importlib.import_module("pandas")  # by name: pandas ships no type information
        except ImportError:
            raise ImportError("SweepResult.to_pandas() needs pandas, an optional extra: "
                              "pip install mpc_tracking[pandas]") from None
        if points:
            return pd.DataFrame(self.points()).set_index("point")
        order = [*_HEAD, *self.params, *METRIC_FIELDS, *_TAIL]
        names = [k for k in order if any(k in r for r in self.rows)]
        names += [k for r in self.rows for k in r if k not in names and k not in order]
        frame = pd.DataFrame([{k: r.get(k) for k in names} for r in self.rows], columns=list(dict.fromkeys(names)))
        return frame.set_index("index") if "index" in frame else frame

    def __repr__(self) -> str:
        """One line: runs, swept keys, failures, wall time and the recommendation (never the rows)."""
        rec = self._recommendation()
        best = f"; recommended {rec.param} = {rec.value}" if rec is not None else "; no run succeeded"
        keys = ", ".join(self.params) or "no keys"
        return (f"<SweepResult: {len(self.rows)} runs over {keys} ({len(self.points())} points), "
                f"{self.n_failed} failed, {self.wall_time:.1f} s{best}>")

    def _repr_html_(self) -> str:
        """Jupyter display: the points as a table, the recommendation and the Pareto figure (inline PNG)."""
        from mpc_tracking.tuning.display import sweep_html

        return sweep_html(self)

    def _recommendation(self) -> Recommendation | None:
        try:
            return self.recommend()
        except InputError:  # no swept keys (an explicit list of empty overrides)
            return None


def _scenario_payload(scenario: Any) -> tuple[Any, dict]:
    """The validated Scenario and its dict for the workers (path files resolved against the scenario file)."""
    from mpc_tracking.scenario.core import Scenario, load_scenario

    sc = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
    data = sc.to_dict()
    src = data.get("path", {}).get("source")
    if src and sc.source not in _NO_FILE and not Path(src).exists():
        rel = Path(sc.source).parent / src
        if rel.exists():
            data["path"]["source"] = str(rel.resolve())
    return sc, data


def _note_warnings(row: dict[str, Any], seen: Counter[str], params: list[str]) -> None:
    """Take the run's warnings out of ``row``; log each message the first time this sweep sees it."""
    for message in dict.fromkeys(row.pop("warnings", None) or ()):
        if message not in seen:
            logger.warning("%s [run %d, %s; a warning is shown once per sweep]", message, row["index"],
                           _short(row, params) or "base scenario")
        seen[message] += 1


def _in_notebook() -> bool:
    """True inside a Jupyter kernel (IPython's ZMQ shell)."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        shell = ipython.get_ipython()
    except Exception:  # pragma: no cover - a broken IPython
        return False
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def _progress(total: int, initial: int, enabled: bool | None):
    if enabled is None:  # a terminal or a notebook; never a log file or CI
        enabled = sys.stderr.isatty() or _in_notebook()
    if not enabled:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        logger.info("progress bar off: tqdm is not installed (pip install mpc_tracking[progress])")
        return None
    return tqdm(total=total, initial=initial, unit="run", desc="sweep", dynamic_ncols=True, file=sys.stderr)


def _logging_redirect():
    """Log records go through tqdm.write while the bar is shown (no torn bar lines)."""
    try:
        from tqdm.contrib.logging import logging_redirect_tqdm
    except ImportError:  # pragma: no cover - old tqdm
        return contextlib.nullcontext()
    return logging_redirect_tqdm()


def sweep(
    scenario: Any,
    grid: Mapping[str, Any] | Sequence[Mapping[str, Any]],
    executor: Any = "processes",
    *,
    dask: Any = None,
    workers: int | None = None,
    repeats: int = 1,
    out: str | Path | None = None,
    resume: bool = False,
    max_runs: int = DEFAULT_MAX_RUNS,
    yes: bool = False,
    progress: bool | None = None,
    connect_timeout: float = 10.0,
    runner: Runner | None = None,
) -> SweepResult:
    """Run the closed loop for every point of ``grid``; stream the rows to ``out``.

    Parameters
    ----------
    scenario : Scenario, mapping or YAML file name
        The base scenario.
    grid : mapping or sequence of mappings
        Dotted keys -> lists of values (cartesian product), or a list of override dicts
        (see :func:`expand_grid`).
    executor : {"processes", "serial", "dask"} or concurrent.futures.Executor
        Where runs execute; ``processes`` uses one worker per core (``workers``).
    dask : str or distributed.Client, optional
        ``"tcp://host:8786"`` connects to a running scheduler (:class:`ClusterError` after
        ``connect_timeout`` s when unreachable); ``"local"`` starts a LocalCluster here.
    workers : int, optional
        Local worker processes (processes executor and ``dask="local"``).
    repeats : int
        Runs per point (timing statistics; the closed loop itself is deterministic, so repeats
        differ only in their timing fields).
    out : path, optional
        Folder for ``sweep.csv``/``sweep.jsonl``/``sweep.json``; nothing is written when None.
    resume : bool
        Skip runs whose key (:func:`point_key`) is already in ``out``.
    max_runs : int
        Refuse to launch more runs than this unless ``yes``.
    progress : bool, optional
        Progress bar (``tqdm.auto``: a widget in Jupyter, text in a terminal); default on when
        stderr is a terminal or in a Jupyter notebook, off otherwise (log files, CI).
    runner : callable, optional
        ``runner(scenario_dict, overrides) -> metrics`` instead of :func:`run_point` (module
        level, so that it pickles).

    Returns
    -------
    SweepResult
        Rows sorted by run index (the resumed ones included).

    Raises
    ------
    InputError
        Empty grid, unknown key (named, with the nearest valid key), too many runs without
        ``yes``, bad executor, ``resume`` against a different scenario.
    ClusterError
        The Dask scheduler cannot be reached.

    Notes
    -----
    An interrupt (Ctrl-C) propagates after the finished rows are flushed and ``sweep.json`` is
    written; ``resume=True`` continues. The processes executor *spawns* its workers, so a script
    that calls ``sweep`` needs the ``if __name__ == "__main__":`` guard. Workers of a remote Dask
    cluster need mpc_tracking installed and the scenario's path file at the same location
    (bundled paths need nothing).
    """
    t0 = time.perf_counter()
    if not isinstance(repeats, int) or isinstance(repeats, bool) or repeats < 1:
        raise InputError(f"repeats: expected a positive integer, got {repeats!r}")
    check_executor(executor, dask)
    check_connect_timeout(connect_timeout)
    if resume and out is None:
        raise InputError("resume: needs out= (the folder of the sweep to resume)")
    sc, payload = _scenario_payload(scenario)
    _check_size(grid_size(grid) * repeats, max_runs, yes or resume)  # counted, not expanded
    check_values(sc, grid)  # each distinct value once, before any run
    params, points = expand_grid(grid)
    tasks: list[dict[str, Any]] = []
    for p, ov in enumerate(points):
        for r in range(repeats):
            tasks.append({"index": p * repeats + r, "point": p, "repeat": r, "key": point_key(ov, r),
                          "overrides": dict(ov)})
    check_keys(sc, params, [t["overrides"] for t in tasks])

    done: list[dict] = []
    warned: Counter[str] = Counter()
    if out is not None:
        out = Path(out)
        meta = {"scenario_hash": point_key(payload), "params": params, "scenario": payload}
        if resume:
            old = _read_meta(out / META_NAME)
            if old and old.get("scenario_hash") != meta["scenario_hash"]:
                raise InputError(f"resume: {out} holds a sweep of a different scenario; use another out folder "
                                 "or drop resume")
            wanted = {t["key"]: t for t in tasks}
            old_rows = {r["key"]: r for r in read_rows(out)}  # last row of a key wins
            stray = [r for k, r in old_rows.items() if k not in wanted]
            if stray:
                raise InputError(f"resume: {out} holds {len(stray)} runs that are not in this grid (e.g. "
                                 f"{_short(stray[0], old.get('params', params))}, repeat {stray[0].get('repeat')}); "
                                 "resume may add points or repeats, not drop them: use another out folder")
            # the stored rows take the index of their point in this grid (a grid may have grown)
            done = [dict(r, **{f: wanted[k][f] for f in _HEAD}) for k, r in old_rows.items()]
            tasks = [t for t in tasks if t["key"] not in old_rows]
        elif (out / "sweep.csv").exists():
            logger.warning("%s: replacing the rows of an earlier sweep (use resume to keep them)", out)
    _check_size(len(tasks), max_runs, yes)

    # nothing left to run (resume): no pool or cluster to start
    rows_iter = iter_runs(_execute, {"scenario": payload, "runner": runner}, tasks, _failed_row,
                          executor=executor if tasks else "serial", dask=dask if tasks else None,
                          workers=workers, connect_timeout=connect_timeout)
    writer = bar = None
    rows = list(done)
    n_bad = sum(r.get("status") != "ok" for r in done)
    logger.info("sweep: %d runs to launch (%d already done)", len(tasks), len(done))
    with contextlib.ExitStack() as stack:
        stack.callback(getattr(rows_iter, "close", lambda: None))  # stop the executor / cluster last
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            write_json_atomic(out / META_NAME, meta)
            writer = SweepWriter(out, list(_HEAD) + params + list(METRIC_FIELDS) + list(_TAIL), existing=done)
            stack.callback(writer.close)
        bar = _progress(len(tasks) + len(done), len(done), progress)
        if bar is not None:
            stack.callback(bar.close)
            stack.enter_context(_logging_redirect())
        for row in rows_iter:
            _note_warnings(row, warned, params)
            rows.append(row)
            n_bad += row.get("status") != "ok"
            if writer is not None:
                writer.append(row)
            if bar is not None:
                bar.set_postfix_str(f"ok={len(rows) - n_bad}, failed={n_bad}", refresh=False)
                bar.update(1)
            if row.get("status") != "ok":
                logger.warning("run %d %s: %s", row["index"], _short(row, params), row.get("error"))
    rows.sort(key=lambda r: r["index"])
    for message, count in warned.items():
        if count > 1:
            logger.info("%d of the %d runs warned: %s", count, len(rows) - len(done), message)
    files = {} if writer is None else {"csv": writer.csv_path, "jsonl": writer.jsonl_path, "json": writer.json_path}
    return SweepResult(rows=rows, params=params, out=out, skipped=len(done), wall_time=time.perf_counter() - t0,
                       files=files)


def _check_size(runs: int, max_runs: int, yes: bool) -> None:
    """Refuse ``runs`` above ``max_runs`` (unless ``yes``) or above :data:`MAX_SWEEP_RUNS`."""
    if runs > MAX_SWEEP_RUNS:
        raise InputError(f"grid: {runs:,} runs are more than any sweep launches ({MAX_SWEEP_RUNS:,}); "
                         "split the grid into several sweeps")
    if runs > max_runs and not yes:
        raise InputError(f"grid: {runs} runs to launch exceed max_runs={max_runs}; "
                         "pass yes=True (--yes) or raise max_runs (--max-runs)")


def _read_meta(filename: Path) -> dict:
    """The ``sweep_meta.json`` of an earlier sweep ({} when there is none)."""
    from mpc_tracking.fileio import read_input_text

    if not filename.exists():
        return {}
    text = read_input_text(filename, what="sweep metadata file")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InputError(f"{filename}: not a sweep metadata file (invalid JSON: {exc})") from None
    return data if isinstance(data, dict) else {}


def _short(row: dict, params: list[str]) -> str:
    return ", ".join(f"{k}={row.get(k)!r}" for k in params if k in row)
