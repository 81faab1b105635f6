"""A private network namespace with only loopback, for everything that starts ROS 2 in tests and
simulations.

``unshare -n`` gives the command a network namespace of its own; ``ip link set lo up`` brings up its
loopback, the only interface it has; ``ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST`` keeps DDS discovery
on it. No discovery or data traffic can reach any network, and nodes outside the namespace cannot
see the ones inside (nor disturb them). Non-root users get the namespace through a user namespace
(``unshare -r -n``) where the kernel allows it.

Examples
--------
>>> cmd = isolated_command(["python", "-c", "pass"], unshare=("unshare", "-n"))
>>> cmd[:2], cmd[-3:]
(['unshare', '-n'], ['python', '-c', 'pass'])
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence

__all__ = ["ISOLATED_ENV", "isolation_problem", "isolated_command", "isolated_env", "in_isolation"]

#: set to "1" inside a namespace made by :func:`isolated_command` (a command re-executing itself
#: into isolation checks it, so it does so once)
ISOLATED_ENV = "MPC_TRACKING_ROS_ISOLATED"

#: the shell line run inside the namespace before the command: bring up loopback, then exec it
_INSIDE = 'ip link set lo up && exec "$@"'


def _probe(prefix: tuple[str, ...]) -> bool:
    try:
        done = subprocess.run([*prefix, "sh", "-c", "ip link set lo up"], capture_output=True, timeout=20,
                              check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0


@functools.lru_cache(maxsize=1)
def _unshare_prefix() -> tuple[tuple[str, ...] | None, str]:
    """The ``unshare`` invocation that works here, or None and why not."""
    if shutil.which("unshare") is None:
        return None, "the unshare command is not installed (util-linux)"
    if shutil.which("ip") is None:
        return None, "the ip command is not installed (iproute2), so the namespace's loopback cannot be brought up"
    for prefix in (("unshare", "-n"), ("unshare", "-r", "-n")):
        if _probe(prefix):
            return prefix, ""
    return None, "unshare -n is not permitted here (no CAP_SYS_ADMIN and no unprivileged user namespaces)"


def isolation_problem() -> str | None:
    """Why a private network namespace cannot be made here, or None when it can."""
    prefix, why = _unshare_prefix()
    return None if prefix is not None else why


def in_isolation() -> bool:
    """True inside a namespace made by :func:`isolated_command`."""
    return os.environ.get(ISOLATED_ENV) == "1"


def isolated_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's environment) with discovery kept on localhost and the
    isolation marker set."""
    out = dict(os.environ if env is None else env)
    out["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
    out.pop("ROS_STATIC_PEERS", None)
    out[ISOLATED_ENV] = "1"
    return out


def isolated_command(argv: Sequence[str], unshare: Sequence[str] | None = None) -> list[str]:
    """``argv`` wrapped to run in a new network namespace with only loopback (up).

    Parameters
    ----------
    argv : sequence of str
        The command to run.
    unshare : sequence of str, optional
        The ``unshare`` invocation; default the one that works here (``unshare -n``, else
        ``unshare -r -n``).

    Returns
    -------
    list of str
        Run it with ``env=isolated_env()``.

    Raises
    ------
    OSError
        When no namespace can be made here (:func:`isolation_problem` says why).
    """
    if unshare is None:
        prefix, why = _unshare_prefix()
        if prefix is None:
            raise OSError(f"cannot isolate ROS 2 in a private network namespace: {why}")
        unshare = prefix
    return [*unshare, "sh", "-c", _INSIDE, "sh", *argv]
