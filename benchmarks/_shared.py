"""Where the shared reference data is (``tracks/``, ``plants/``): one lookup for the benchmarks and the tests.

The folder is read-only and lives outside the project (never copy it in). It is, in this order:

1. ``$MPC_TRACKING_SHARED`` when that variable is set (used as given, found or not);
2. ``../shared`` beside the checkout;
3. ``../../shared`` (a worktree one folder down, ``<work>/wt/<name>``, beside ``<work>/shared``).

Standard library only; the tests load this file too (``tests/_shared.py``).
"""
from __future__ import annotations

import os
from pathlib import Path

__all__ = ["ENV_VAR", "shared_dir"]

#: environment variable that names the shared folder explicitly
ENV_VAR = "MPC_TRACKING_SHARED"
REPO = Path(__file__).resolve().parents[1]


def shared_dir(*parts: str) -> Path:
    """The shared folder, joined with ``parts`` (``shared_dir("tracks")``).

    Parameters
    ----------
    *parts : str
        Sub-path inside the shared folder.

    Returns
    -------
    Path
        The first of the places above that exists (``../shared`` when none does), joined with
        ``parts``; the result may not exist: callers check it and say what they need.
    """
    given = os.environ.get(ENV_VAR)
    if given:
        base = Path(given).expanduser()
    else:
        candidates = [REPO.parent / "shared", REPO.parent.parent / "shared"]
        base = next((c for c in candidates if c.is_dir()), candidates[0])
    return base.joinpath(*parts)
