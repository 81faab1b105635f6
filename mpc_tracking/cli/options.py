"""Command-line option parsing shared by the subcommands: ``--set KEY=VALUE`` and the checked
number types of flags (:func:`int_range`, :func:`number`), whose errors name the flag, the value
given and what is allowed (argparse prefixes ``argument --dpi:``; exit code 2)."""
from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any

from mpc_tracking.errors import ScenarioError
from mpc_tracking.fileio import parse_yaml

__all__ = ["parse_set_option", "split_key_value", "parse_value", "int_range", "number"]


def parse_set_option(text: str) -> tuple[str, Any]:
    """Split ``"controller.horizon=50"`` into ``("controller.horizon", 50)``; values are YAML scalars.

    ``"a.b=[1, 2]"`` gives a list, ``"a.b=null"`` None, ``"a.b=true"`` True, ``"a.b=inf"`` inf,
    ``"a.b=nan"`` NaN (which the scenario then rejects by name), ``"a.b=1e3"`` 1000.0. Text that is
    not valid YAML stays a string; a value beyond the limits of
    :func:`mpc_tracking.fileio.parse_yaml` (nesting, alias expansion) is an error.
    """
    key, raw = split_key_value(text, "--set", "KEY=VALUE", "controller.horizon=50")
    return key, parse_value(raw, f"--set {key}")


def split_key_value(text: Any, flag: str, form: str, example: str) -> tuple[str, str]:
    """``"KEY=VALUE"`` -> ``(key, raw value)``, the key checked (dotted names, no empty part).

    Raises
    ------
    ScenarioError
        Naming ``flag`` (``--set``, ``--grid``), the text given and the expected ``form``.
    """
    if not isinstance(text, str) or "=" not in text:
        raise ScenarioError(f"{flag} {text!r}: expected {form}, e.g. {example}")
    key, _, raw = text.partition("=")
    key = key.strip()
    if not key or any(not part.strip() for part in key.split(".")):
        raise ScenarioError(f"{flag} {text!r}: expected a dotted key before '=' (e.g. {example}), got {key!r}")
    return key, raw.strip()


def parse_value(raw: str, name: str) -> Any:
    """One ``--set``/``--grid`` value: YAML, with ``inf``/``nan`` as floats; invalid YAML stays text."""
    low = raw.lower()
    if low in ("inf", "+inf", "-inf"):
        return -math.inf if raw.startswith("-") else math.inf
    if low in ("nan", "+nan", "-nan"):
        return math.nan
    if not raw:
        return None
    try:
        return parse_yaml(raw, name=name, error=ScenarioError).data
    except ScenarioError as exc:
        if "not valid YAML" not in str(exc):  # a limit (nesting, aliases, duplicate key): an error
            raise
        return raw


def int_range(lo: int, hi: int | None = None) -> Callable[[str], int]:
    """An argparse ``type=``: an integer ``lo <= n (<= hi)``.

    Examples
    --------
    >>> int_range(1)("3")
    3
    >>> int_range(10, 600)("0")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected an integer from 10 to 600, got '0'
    """
    want = f"an integer from {lo} to {hi}" if hi is not None else f"an integer >= {lo}"

    def convert(text: str) -> int:
        try:
            n = int(text)
        except (TypeError, ValueError):
            raise argparse.ArgumentTypeError(f"expected {want}, got {text!r}") from None
        if n < lo or (hi is not None and n > hi):
            raise argparse.ArgumentTypeError(f"expected {want}, got {text!r}")
        return n

    convert.__name__ = "integer"  # argparse names the type in "invalid integer value" messages
    return convert


def number(*, gt: float | None = None, ge: float | None = None, le: float | None = None,
           unit: str = "") -> Callable[[str], float]:
    """An argparse ``type=``: a finite number with optional bounds (``gt``: greater than, ``ge``:
    at least, ``le``: at most).

    Examples
    --------
    >>> number(gt=0)("2.5")
    2.5
    >>> number(ge=0, unit="m")("-5")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected a finite number >= 0 m, got '-5'
    """
    parts = [f"> {gt:g}" if gt is not None else "", f">= {ge:g}" if ge is not None else "",
             f"<= {le:g}" if le is not None else ""]
    bounds = " and ".join(p for p in parts if p)
    want = "a finite number" + (f" {bounds}" if bounds else "") + (f" {unit}" if unit else "")

    def convert(text: str) -> float:
        try:
            x = float(text)
        except (TypeError, ValueError):
            raise argparse.ArgumentTypeError(f"expected {want}, got {text!r}") from None
        if (not math.isfinite(x) or (gt is not None and not x > gt) or (ge is not None and not x >= ge)
                or (le is not None and not x <= le)):
            raise argparse.ArgumentTypeError(f"expected {want}, got {text!r}")
        return x

    convert.__name__ = "number"
    return convert
