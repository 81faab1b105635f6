"""Declaring a setting: :func:`setting` (default, doc, unit, range or choices in one place) and what is
derived from that declaration: its kind, its allowed values, its documentation
(:func:`field_doc`, :func:`documented` for the generated ``Attributes`` section)."""
from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import Field, dataclass, field, fields
from typing import Any, TypeVar

__all__ = ["KINDS", "Bounds", "setting", "field_choices", "field_doc", "documented", "document"]

#: what a field's ``kind`` (from its default) accepts, for messages and the scenario schema
KINDS = ("int", "float", "float?", "bool", "str", "weights")

_C = TypeVar("_C", bound=type)


@dataclass(frozen=True)
class Bounds:
    """Range of a numeric setting: ``gt`` (greater than), ``ge`` (at least), ``lt``, ``le``; inf allowed or not."""

    gt: float | None = None
    ge: float | None = None
    lt: float | None = None
    le: float | None = None
    allow_inf: bool = False

    def lower_problem(self, x: float) -> str | None:
        """The lower bound ``x`` breaks (``"> 0"``), or None."""
        if self.gt is not None and not x > self.gt:
            return f"> {self.gt:g}"
        if self.ge is not None and not x >= self.ge:
            return f">= {self.ge:g}"
        return None

    def upper_problem(self, x: float) -> str | None:
        """The upper bound ``x`` breaks (``"at most 10000"``), or None."""
        if self.lt is not None and not x < self.lt:
            return f"< {self.lt:.6g}"
        if self.le is not None and not x <= self.le:
            return f"at most {self.le:g}"
        return None

    def text(self) -> str:
        """The range in words (``"> 0 (inf allowed)"``; empty when unbounded)."""
        pairs = ((">", self.gt, "g"), (">=", self.ge, "g"), ("<", self.lt, ".6g"), ("<=", self.le, "g"))
        parts = [f"{op} {bound:{fmt}}" for op, bound, fmt in pairs if bound is not None]
        return " and ".join(parts) + (" (inf allowed)" if self.allow_inf else "")


def setting(default: Any, doc: str, unit: str, *,
            choices: tuple[str, ...] | Callable[[], Sequence[str]] | None = None,
            gt: float | None = None, ge: float | None = None, lt: float | None = None, le: float | None = None,
            allow_inf: bool = False, notes: str = "") -> Any:
    """A settings field, documented where it is declared (the one place of its facts).

    Parameters
    ----------
    default : int, float, bool, str, tuple or None
        Default value; its type gives the field's kind (:data:`KINDS`): a tuple is a weight
        vector (``"weights"``), None an optional number (``"float?"``).
    doc : str
        One-line description (``mpc-tracking check --keys`` shows it).
    unit : str
        SI unit (``"m/s"``), ``"-"`` when the value has none.
    choices : tuple of str or callable, optional
        Allowed values of a text field; a callable returning them is resolved when they are
        needed (registries filled at import, e.g. the prediction models).
    gt, ge, lt, le : float, optional
        Range of a number: greater than, at least, less than, at most.
    allow_inf : bool
        A float field may be ``inf`` (no limit).
    notes : str
        Longer explanation for the docstring (numpydoc text, may hold roles).

    Returns
    -------
    dataclasses.Field
        Typed ``Any``, as it stands in for the field's value in the class body.
    """
    meta = {"doc": doc, "unit": unit, "kind": _kind_of(default), "choices": choices,
            "bounds": Bounds(gt, ge, lt, le, allow_inf), "notes": notes}
    return field(default=default, metadata=meta)


def _kind_of(default: Any) -> str:
    if default is None:
        return "float?"
    if isinstance(default, tuple):
        return "weights"
    for kind, typ in (("bool", bool), ("int", int), ("float", float), ("str", str)):
        if isinstance(default, typ):
            return kind
    raise TypeError(f"setting: no kind for a default of type {type(default).__name__}")  # pragma: no cover


def field_choices(f: Field) -> tuple[str, ...] | None:
    """The allowed values of a settings field (a callable in its declaration is called)."""
    choices = f.metadata.get("choices")
    return tuple(choices()) if callable(choices) else choices


# ---------------------------------------------------------------------- generated documentation
def _type_text(f: Field) -> str:
    kind = f.metadata["kind"]
    choices = f.metadata["choices"]
    if kind == "str" and isinstance(choices, tuple):
        return "{" + ", ".join(f'"{c}"' for c in choices) + "}"
    return {"weights": "sequence of float or ndarray", "float?": "float or None"}.get(kind, kind)


def field_doc(f: Field) -> str:
    """The description of a settings field: doc, unit, range, notes and default (one paragraph)."""
    m = f.metadata
    text = m["doc"]
    text += "" if m["unit"] == "-" else f" [{m['unit']}]"
    rng = m["bounds"].text()
    text += f"; {rng}." if rng else "."
    text += f" {m['notes']}" if m["notes"] else ""
    return text + f" Default: ``{f.default!r}``."


def _attributes_section(items: list[Field]) -> str:
    lines = ["Attributes", "----------"]
    for f in items:
        lines.append(f"{f.name} : {_type_text(f)}")
        lines.append("    " + field_doc(f))
    return "\n".join(lines)


def document(cls: type, items: list[Field], intro: str = "") -> None:
    """Add the generated ``Attributes`` section of ``items`` to ``cls.__doc__`` (before its ``Examples``, if any)."""
    doc = inspect.cleandoc(cls.__doc__ or "")
    head, examples, tail = doc.partition("\nExamples\n--------\n")
    cls.__doc__ = f"{head.rstrip()}\n\n{intro}{_attributes_section(items)}\n" + (examples + tail if examples else "")


def documented(cls: _C) -> _C:
    """Class decorator (above ``@dataclass``): the generated ``Attributes`` section of a group's own fields."""
    document(cls, list(fields(cls)))
    return cls
