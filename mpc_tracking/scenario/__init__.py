"""Scenario files: one YAML describes a run; schema, validation, building the objects, running it."""
from __future__ import annotations

from mpc_tracking.scenario.core import Scenario, default_scenario, load_scenario, run_scenario

__all__ = ["Scenario", "default_scenario", "load_scenario", "run_scenario"]
