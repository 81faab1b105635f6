"""numba kernel of the scalar projection's walk (imported lazily by :mod:`mpc_tracking.paths.projection` once numba
is loaded; importing it needs numba).

:func:`project_walk` is :func:`._walk.walk` compiled: the same function Python runs on lists
(``tests/paths/test_projection_compiled.py`` holds the two to 1e-12). Compiler options: ``cache=True`` (numba's
on-disk cache), IEEE arithmetic (``error_model="numpy"``, no ``fastmath``), an explicit signature (compiled or loaded
from the cache at import).
"""
from __future__ import annotations

import numba as nb

from mpc_tracking.paths._walk import walk

_F = nb.float64

project_walk = nb.njit(nb.types.Tuple((nb.boolean, _F, _F, _F))(_F[:, ::1], nb.int64, nb.boolean, _F, _F, _F, _F, _F,
                                                                 nb.int64),
                       cache=True, nogil=True, error_model="numpy", fastmath=False)(walk)
