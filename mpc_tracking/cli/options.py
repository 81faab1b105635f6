"""Command-line option parsing shared by the subcommands: ``--set KEY=VALUE``, the keys of a
scenario's ``path:`` section as flags (:func:`add_path_options`: ``--closed/--open``,
``--smoothing``, ``--corner-radius``, ``--ds`` ...) and the checked number types of flags
(:func:`int_range`, :func:`number`), whose errors name the flag, the value given and what is
allowed (argparse prefixes ``argument --dpi:``; exit code 2)."""
from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any

from mpc_tracking.errors import ScenarioError
from mpc_tracking.fileio import parse_yaml

__all__ = ["parse_set_option", "split_key_value", "parse_value", "int_range", "number", "add_path_options",
           "path_overrides", "path_option_keys"]


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


# ---------------------------------------------------------------------- the path: section as flags
#: keys of a scenario's ``path:`` section that are not flags (the positional argument names the source;
#: corner points are given in a scenario file or with --set path.corners=...)
_NOT_PATH_FLAGS = ("source", "corners")


def path_option_keys() -> list[tuple[str, Any]]:
    """``(key, field)`` of every ``path:`` key that is a flag of ``run``, ``check``, ``animate`` and
    ``path show`` (from :class:`~mpc_tracking.scenario.schema.PathConfig`: one list of keys)."""
    from dataclasses import fields

    from mpc_tracking.scenario.schema import PathConfig

    return [(f.name, f) for f in fields(PathConfig) if f.name not in _NOT_PATH_FLAGS]


def add_path_options(p: argparse.ArgumentParser) -> None:
    """The keys of a scenario's ``path:`` section as flags: ``--closed/--open``, ``--ds``,
    ``--smoothing``, ``--corner-radius``, ``--format``, ``--width-left``, ``--width-right``,
    ``--name``; each sets ``path.<key>`` (checked as the scenario checks it, :func:`path_overrides`)."""
    g = p.add_argument_group("path (the keys of a scenario's path: section)")
    for key, f in path_option_keys():
        doc = f.metadata.get("doc", "")
        dest = f"path_{key}"
        if f.metadata.get("kind", "").startswith("bool"):
            both = g.add_mutually_exclusive_group()
            both.add_argument(f"--{key}", dest=dest, action="store_const", const=True, default=None,
                              help=f"path.{key}: true; {doc}")
            opposite = "open" if key == "closed" else f"no-{key.replace('_', '-')}"
            both.add_argument(f"--{opposite}", dest=dest, action="store_const", const=False,
                              help=f"path.{key}: false")
            continue
        choices = f.metadata.get("choices")
        kind = f.metadata.get("kind", "")
        gt, ge, le = f.metadata.get("bounds") or (None, None, None)
        convert = number(gt=gt, ge=ge, le=le, unit="m") if kind.startswith("float") else str
        g.add_argument(f"--{key.replace('_', '-')}", dest=dest, default=None, choices=choices, type=convert,
                       metavar=None if choices else key.split("_")[-1].upper(), help=f"path.{key}: {doc}")


def path_overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The ``{"path.<key>": value}`` overrides of the path flags given (numbers checked by the flag's
    type, :func:`number`; the scenario validates them again and names the key)."""
    out: dict[str, Any] = {}
    for key, _f in path_option_keys():
        raw = getattr(args, f"path_{key}", None)
        if raw is None:
            continue
        out[f"path.{key}"] = raw  # converted by the flag's type; the scenario checks it again by key
    return out
