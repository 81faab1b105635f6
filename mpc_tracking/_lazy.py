"""Lazy public names for a package ``__init__`` (PEP 562): a name's module is imported on first access.

Used by ``mpc_tracking/__init__.py`` and ``mpc_tracking/paths/__init__.py`` so that importing a
package does not import every heavy dependency of every name it exports (SciPy's interpolation and
optimisation stack, the QP solver, Numba, YAML, Matplotlib). Standard library only.
"""
from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["lazy_names", "attach"]


def lazy_names(by_module: Mapping[str, str]) -> dict[str, str]:
    """``{name: module}`` from ``{module: "name name ..."}`` (names separated by white space).

    Raises
    ------
    ValueError
        If a name is listed under two modules.
    """
    out: dict[str, str] = {}
    for module, names in by_module.items():
        for name in names.split():
            if name in out:
                raise ValueError(f"lazy_names: {name!r} is listed under both {out[name]!r} and {module!r}")
            out[name] = module
    return out


def attach(package: str, namespace: dict[str, Any], lazy: Mapping[str, str],
           submodules: Iterable[str] = ()) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Module-level ``__getattr__`` and ``__dir__`` for ``package`` that import ``lazy`` names on first use.

    Parameters
    ----------
    package : str
        The package's ``__name__``.
    namespace : dict
        The package's ``globals()``; a resolved name is stored there, so it is looked up once.
    lazy : mapping
        ``{public name: absolute module name}`` (see :func:`lazy_names`).
    submodules : iterable of str
        Subpackage / module names (relative) that ``package.<name>`` imports on first access.

    Returns
    -------
    (__getattr__, __dir__)
        Assign both at module level.
    """
    subs = frozenset(submodules)

    def __getattr__(name: str) -> Any:
        module = lazy.get(name)
        if module is not None:
            value = getattr(importlib.import_module(module), name)
        elif name in subs:
            value = importlib.import_module(f"{package}.{name}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(lazy) | set(namespace.get("__all__", ())))

    return __getattr__, __dir__
