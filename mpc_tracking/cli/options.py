"""Command-line option parsing shared by the subcommands (``--set KEY=VALUE``)."""
from __future__ import annotations

import math
from typing import Any

import yaml

from mpc_tracking.errors import ScenarioError

__all__ = ["parse_set_option"]


def parse_set_option(text: str) -> tuple[str, Any]:
    """Split ``"controller.horizon=50"`` into ``("controller.horizon", 50)``; values are YAML scalars.

    ``"a.b=[1, 2]"`` gives a list, ``"a.b=null"`` None, ``"a.b=true"`` True, ``"a.b=inf"`` inf.
    """
    if not isinstance(text, str) or "=" not in text:
        raise ScenarioError(f"--set {text!r}: expected KEY=VALUE, e.g. controller.horizon=50")
    key, _, raw = text.partition("=")
    key = key.strip()
    if not key or any(not part for part in key.split(".")):
        raise ScenarioError(f"--set {text!r}: expected a dotted key before '=', e.g. controller.horizon=50")
    raw = raw.strip()
    if raw.lower() in ("inf", "+inf", "-inf"):
        return key, -math.inf if raw.startswith("-") else math.inf
    try:
        value = yaml.safe_load(raw) if raw else None
    except yaml.YAMLError:
        value = raw
    return key, value
