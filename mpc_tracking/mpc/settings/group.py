"""The base class of the settings groups: each field checked from its declaration on construction."""
from __future__ import annotations

from dataclasses import dataclass, fields

from mpc_tracking.mpc.settings.checks import CHECKS

__all__ = ["SettingsGroup"]


@dataclass(frozen=True)
class SettingsGroup:
    """Base of the settings groups: every field is checked from its declaration (:func:`setting`) on
    construction; a bad value is a :class:`~mpc_tracking.errors.SettingsError` naming
    ``<Group>.<field>`` and the expected range."""

    def __post_init__(self) -> None:
        owner = type(self).__name__
        for f in fields(self):
            CHECKS[f.metadata["kind"]](f"{owner}.{f.name}", getattr(self, f.name), f.metadata)
        self._check_together()

    def _check_together(self) -> None:
        """Checks that involve several fields of the group (none unless a group has some)."""

