"""Where the runs of a sweep execute: in-process, local processes, or a Dask distributed cluster.

Every executor takes the same unit of work -- a module-level (picklable) function
``work(common, task) -> row`` -- and yields rows as runs finish, in completion order. The caller
sorts by run index, so the rows do not depend on the executor. A failure of the machinery
itself (a worker process that died, a task lost by the cluster) becomes an error row built by
``fail(task, exc)``; the other runs go on.
"""
from __future__ import annotations

import ast
import logging
import math
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from types import FrameType
from typing import Any

from mpc_tracking.errors import ClusterError, InputError

__all__ = [
    "EXECUTORS", "default_workers", "iter_runs", "check_executor", "check_connect_timeout", "check_main_guard",
    "dask_client",
]

logger = logging.getLogger(__name__)

#: executor names accepted by :func:`iter_runs` (``dask`` needs the ``dask`` argument)
EXECUTORS = ("serial", "processes", "dask")

Work = Callable[[Any, dict], dict]
Fail = Callable[[dict, BaseException], dict]


def default_workers() -> int:
    """Cores this process may use (one worker per core)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


#: start methods whose workers re-import the main script (as ``__mp_main__``) before they run a task
_REIMPORT_MAIN = ("spawn", "forkserver")

_GUARD_HINT = ("the worker processes import the main script again and would start the sweep again, so every "
               "run would fail. Put the call under `if __name__ == \"__main__\":`, or use executor='serial'")


def _main_guard_branch(test: ast.expr) -> str | None:
    """``"body"`` for ``__name__ == "__main__"``, ``"orelse"`` for ``!=``, else None."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and len(test.comparators) == 1):
        return None
    sides = {_guard_operand(test.left), _guard_operand(test.comparators[0])}
    if sides != {"__name__", "__main__"}:
        return None
    return {ast.Eq: "body", ast.NotEq: "orelse"}.get(type(test.ops[0]))


def _guard_operand(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name) and node.id == "__name__":
        return "__name__"
    if isinstance(node, ast.Constant) and node.value == "__main__":
        return "__main__"
    return None


def _under_main_guard(tree: ast.AST, line: int) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            branch = _main_guard_branch(node.test)
            if branch and any(s.lineno <= line <= (s.end_lineno or s.lineno) for s in getattr(node, branch)):
                return True
    return False


def _unguarded_main_call() -> str | None:
    """``"file:line"`` when the main script runs this call at load time outside a ``__main__`` guard."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if main is None or not path:  # interactive, -c, notebooks: the workers do not import it again
        return None
    line = None
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:  # the outermost statement of the main script that led here
        if frame.f_globals is main.__dict__ and frame.f_code.co_name == "<module>":
            line = frame.f_lineno
        frame = frame.f_back
    if line is None:
        return None
    try:
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), filename=path)
    except (OSError, SyntaxError, ValueError):  # cannot tell: let it run
        return None
    return None if _under_main_guard(tree, line) else f"{path}:{line}"


def check_main_guard(mp_context: str = "spawn") -> None:
    """Raise :class:`InputError` when a process pool started now would only have broken workers.

    With the ``spawn`` and ``forkserver`` start methods every worker imports the main script
    again before it runs a task. A script that starts a process sweep at load time, outside
    ``if __name__ == "__main__":``, would start it again in every worker, and multiprocessing
    kills such workers: every run would fail with ``BrokenProcessPool``. This check finds that
    case before any worker starts (from the main script's source: the statement that led here
    must be inside a ``__main__`` guard), and in a worker that is still importing the main
    script. ``fork`` does not import the script again; it is not checked.
    """
    import multiprocessing

    method = multiprocessing.get_context(mp_context).get_start_method()
    if method not in _REIMPORT_MAIN:
        return
    if getattr(multiprocessing.current_process(), "_inheriting", False):
        raise InputError(f"executor='processes': a worker process that imports the main script reached a process "
                         f"sweep (start method {method!r}); {_GUARD_HINT}")
    where = _unguarded_main_call()
    if where is not None:
        raise InputError(f"executor='processes': {where} starts a process sweep while the script loads, outside "
                         f"`if __name__ == \"__main__\":`; with start method {method!r} {_GUARD_HINT}")


def _iter_serial(work: Work, common: Any, tasks: list[dict], fail: Fail) -> Iterator[dict]:
    for task in tasks:
        try:
            yield work(common, task)
        except Exception as exc:  # work() records run errors itself; this is a last resort
            yield fail(task, exc)


def _iter_futures(pool: Executor, work: Work, common: Any, tasks: list[dict], fail: Fail) -> Iterator[dict]:
    futures = {pool.submit(work, common, task): task for task in tasks}
    broken = False
    try:
        for fut in as_completed(futures):
            try:
                yield fut.result()
            except Exception as exc:  # e.g. BrokenProcessPool: a worker died
                if isinstance(exc, BrokenProcessPool) and not broken:
                    broken = True
                    logger.warning("a worker process died (%s); a script that starts a process sweep needs "
                                   "the `if __name__ == '__main__':` guard", exc)
                yield fail(futures[fut], exc)
    finally:
        for fut in futures:
            fut.cancel()


#: how often a worker checks that the process that started it is still alive [s]
PARENT_POLL_SECONDS = 0.5


def _init_worker() -> None:
    """Worker initializer: ignore Ctrl-C (it reaches the whole process group; only the parent
    handles it and stops the workers, so the workers print no tracebacks of their own), and end
    the worker when its parent is gone (:func:`watch_parent`)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    watch_parent()


_ignore_sigint = _init_worker  # the name of earlier releases


def watch_parent(poll: float = PARENT_POLL_SECONDS) -> threading.Thread | None:
    """End this process when the process that started it dies (SIGKILL of a sweep's main process).

    A killed parent runs no clean-up, so its workers would go on for the whole run in flight and
    then wait for work for ever (and keep multiprocessing's resource tracker alive). On Linux the
    kernel sends SIGKILL at once (``prctl(PR_SET_PDEATHSIG)``); everywhere a daemon thread polls
    the parent's pid every ``poll`` seconds and ends the process with ``os._exit``.

    Returns
    -------
    threading.Thread or None
        The watching thread (None when this process has no parent to watch).
    """
    import multiprocessing

    started_by = multiprocessing.parent_process()  # the pid of the process that started this one
    parent = started_by.pid if started_by is not None and started_by.pid else os.getppid()
    if parent <= 1:  # the init process: nothing to watch
        return None
    _die_with_parent()
    if os.getppid() != parent:  # the parent died before the kernel was asked to tell us
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(poll)
            if os.getppid() != parent:
                os._exit(1)

    thread = threading.Thread(target=watch, name="mpc-tracking-parent-watch", daemon=True)
    thread.start()
    return thread


def _die_with_parent() -> None:
    """Linux: ask the kernel for SIGKILL when the parent dies (no-op elsewhere or without libc)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # pragma: no cover - no libc: the watching thread remains
        pass


def _terminate_workers(pool: ProcessPoolExecutor) -> None:
    """Stop a process pool now: cancel what has not started and terminate the workers' runs in flight."""
    stop = getattr(pool, "terminate_workers", None)  # Python >= 3.14
    if stop is not None:
        stop()
        return
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        if proc.is_alive():
            proc.terminate()
    for proc in procs:
        proc.join(timeout=5)
    if procs:
        logger.info("stopped %d worker processes", len(procs))


def _iter_processes(work: Work, common: Any, tasks: list[dict], fail: Fail, workers: int | None,
                    mp_context: str) -> Iterator[dict]:
    import multiprocessing

    n = min(workers or default_workers(), max(1, len(tasks)))
    if n > 1:  # the compiled MPC kernels into numba's on-disk cache once here: no worker compiles them
        from mpc_tracking.mpc import kernels

        kernels.warm_up()
    pool = ProcessPoolExecutor(max_workers=n, mp_context=multiprocessing.get_context(mp_context),
                               initializer=_init_worker)
    finished = False
    try:
        yield from _iter_futures(pool, work, common, tasks, fail)
        finished = True
    finally:
        if finished:
            pool.shutdown(wait=True)
        else:  # interrupted (Ctrl-C, SIGTERM) or abandoned: do not wait for the runs in flight
            _terminate_workers(pool)


def dask_client(dask: Any, *, workers: int | None = None, connect_timeout: float = 10.0):
    """A ``distributed.Client`` for ``dask`` and whether the caller owns (must close) it.

    Parameters
    ----------
    dask : str or distributed.Client
        ``"local"`` starts a ``LocalCluster`` on this machine (processes, one thread each,
        no dashboard, quiet logs); ``"tcp://host:port"`` (or ``host:port``) connects to a
        running scheduler; a Client is used as is.
    workers : int, optional
        Worker processes of the local cluster (default: one per core).
    connect_timeout : float
        Seconds to wait for a remote scheduler before :class:`ClusterError`.

    Returns
    -------
    (client, cluster_or_None, owned) : tuple
    """
    check_connect_timeout(connect_timeout)
    try:
        import distributed
    except ImportError:
        raise ClusterError("dask: the Dask executor needs dask.distributed; install it with "
                           "`pip install mpc_tracking[dist]`") from None
    if isinstance(dask, distributed.Client):
        return dask, None, False
    if not isinstance(dask, str) or not dask.strip():
        raise InputError(f"dask: expected 'local', a scheduler address like 'tcp://host:8786' or a Client, "
                         f"got {dask!r}")
    address = dask.strip()
    if address == "local":
        n = workers or default_workers()
        logging.getLogger("distributed").setLevel(logging.ERROR)  # scheduler/nanny chatter of our own cluster
        cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                                           dashboard_address=None, silence_logs=logging.ERROR)
        try:
            client = distributed.Client(cluster)
        except Exception:
            cluster.close()
            raise
        return client, cluster, True
    if ":" not in address:
        raise InputError(f"dask: expected 'local' or a scheduler address like 'tcp://host:8786', got {dask!r}")
    try:
        client = distributed.Client(address, timeout=connect_timeout)
    except (OSError, TimeoutError) as exc:
        raise ClusterError(f"dask: cannot reach the Dask scheduler at {address!r} within {connect_timeout:g} s "
                           f"({exc}); is `dask scheduler` running there? (or use dask='local')") from None
    return client, None, True


def _iter_dask(work: Work, common: Any, tasks: list[dict], fail: Fail, client: Any, cluster: Any,
               owned: bool) -> Iterator[dict]:
    import distributed

    try:
        [shared] = client.scatter([common], broadcast=True)
        token = uuid.uuid4().hex[:8]  # fresh keys: never pick up a finished task of an earlier sweep
        futures = {client.submit(work, shared, task, key=f"mpc-sweep-{token}-{task['index']}", pure=False): task
                   for task in tasks}
        try:
            for fut in distributed.as_completed(list(futures)):
                try:
                    yield fut.result()
                except Exception as exc:  # e.g. KilledWorker
                    yield fail(futures[fut], exc)
        finally:
            client.cancel(list(futures))
    finally:
        if owned:
            client.close()
            if cluster is not None:
                cluster.close()


def iter_runs(work: Work, common: Any, tasks: list[dict], fail: Fail, *, executor: str | Executor = "processes",
              dask: Any = None, workers: int | None = None, connect_timeout: float = 10.0,
              mp_context: str = "spawn") -> Iterator[dict]:
    """Run ``work(common, task)`` for every task; return an iterator of the rows as they finish.

    Arguments are checked and a Dask cluster is reached (or started) before this returns, so
    bad input fails before any run starts.

    Parameters
    ----------
    work : callable
        Module-level function ``(common, task) -> row`` (pickled to the workers).
    common : object
        Data every task shares (sent once per worker on Dask).
    tasks : list of dict
        Each has at least ``index`` and ``key``.
    fail : callable
        ``(task, exc) -> row`` for a task the executor lost.
    executor : {"serial", "processes", "dask"} or concurrent.futures.Executor
        ``"dask"`` is implied when ``dask`` is given.
    dask : str or distributed.Client, optional
        See :func:`dask_client`.
    workers : int, optional
        Worker processes (default one per core).
    connect_timeout : float
        Seconds to wait for a remote Dask scheduler.
    mp_context : str
        multiprocessing start method of the process pool (``spawn`` is safe with threads).

    Raises
    ------
    InputError
        For bad arguments, and for a process pool started by a script at load time outside
        ``if __name__ == "__main__":`` (see :func:`check_main_guard`): the workers would import
        the script again and die, so this fails at once with one message instead.
    """
    if isinstance(executor, Executor):
        return _iter_futures(executor, work, common, tasks, fail)
    check_executor(executor, dask)
    check_connect_timeout(connect_timeout)
    if workers is not None and (not isinstance(workers, int) or isinstance(workers, bool) or workers < 1):
        raise InputError(f"workers: expected a positive integer, got {workers!r}")
    if dask is not None:
        client, cluster, owned = dask_client(dask, workers=workers, connect_timeout=connect_timeout)
        return _iter_dask(work, common, tasks, fail, client, cluster, owned)
    if executor == "serial":
        return _iter_serial(work, common, tasks, fail)
    check_main_guard(mp_context)
    return _iter_processes(work, common, tasks, fail, workers, mp_context)


def check_connect_timeout(connect_timeout: Any) -> float:
    """``connect_timeout`` as seconds > 0; :class:`InputError` naming it and the value otherwise."""
    if isinstance(connect_timeout, bool) or not isinstance(connect_timeout, (int, float)) or not (
            math.isfinite(connect_timeout) and connect_timeout > 0):
        raise InputError(f"connect_timeout: expected a finite number of seconds > 0, got {connect_timeout!r}")
    return float(connect_timeout)


def check_executor(executor: Any, dask: Any) -> None:
    """Raise :class:`InputError` unless ``executor``/``dask`` name a usable combination."""
    if isinstance(executor, Executor):
        return
    if executor not in EXECUTORS:
        raise InputError(f"executor: expected one of {', '.join(EXECUTORS)} or a concurrent.futures.Executor, "
                         f"got {executor!r}")
    if dask is not None and executor == "serial":
        raise InputError(f"executor: 'serial' cannot be combined with dask={dask!r}; drop one of them")
    if dask is None and executor == "dask":
        raise InputError("dask: executor='dask' needs dask='local' or a scheduler address 'tcp://host:8786'")
