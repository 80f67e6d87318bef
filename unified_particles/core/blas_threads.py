# SPDX-License-Identifier: GPL-3.0-or-later
"""BLAS on one thread while a world steps: no second thread spinning beside the solver.

The step's few matrix products are small ((N, 3) by (3, 3) or (3,): a mesh collider's particles into its
frame, a fluid's distances to a plane, a grain's height), and OpenBLAS, which NumPy's wheels bundle,
splits each one over every core. Its worker then spins, waiting for the next job, through the NumPy
passes that follow; on the two-core machines of `make bench` (two hardware threads of one core) the
spinning thread takes half the core from the solver. Measured on S9 (sand and rocks) once one such product
ran each small step: CPU time twice the wall time, frames 480 ms against 320 ms with the product done
without BLAS (found with gdb on OpenBLAS's ``exec_blas``). One thread is also what these products want:
single-threaded BLAS does (20000, 3) @ (3, 3) in 49 us, faster than any NumPy expression of it (110 us).

:func:`one_blas_thread` sets OpenBLAS's thread count to 1 for the duration of a ``with`` block and puts the
previous count back after, so the rest of the process (Blender, other add-ons) keeps its threads. The
library is NumPy's own copy (``numpy.libs`` on Linux and Windows, ``numpy/.dylibs`` on macOS), found
by its file name and asked through ctypes for ``openblas_set_num_threads`` under the names NumPy's
builds give it (``openblas_*64_`` in NumPy 1.26, ``scipy_openblas_*64_`` in NumPy 2). NumPy without
OpenBLAS (Accelerate, MKL) is left alone.
"""

from __future__ import annotations

import ctypes
import glob
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np

# Name stems NumPy's OpenBLAS builds export, each with its integer-size suffixes.
_PREFIXES = ("scipy_openblas", "openblas")
_SUFFIXES = ("64_", "_64", "")

_api: tuple[Callable[[], int], Callable[[int], None]] | None = None
_searched = False
_lock = threading.Lock()
_depth = 0  # blocks of one_blas_thread entered and not left
_saved = 1  # the process's thread count when the first of them entered


def blas_thread_api() -> tuple[Callable[[], int], Callable[[int], None]] | None:
    """(get, set) of the bundled OpenBLAS's thread count, or None without one; looked up once."""
    global _api, _searched
    if not _searched:
        _searched = True
        _api = _find()
    return _api


def _find() -> tuple[Callable[[], int], Callable[[int], None]] | None:
    base = os.path.dirname(np.__file__)
    dirs = (base + ".libs", os.path.join(base, ".dylibs"), os.path.join(base, "..", "numpy.libs"))
    for folder in dirs:
        for path in sorted(glob.glob(os.path.join(folder, "*openblas*"))):
            try:
                lib = ctypes.CDLL(path)  # already loaded by NumPy: the same library, not a second copy
            except OSError:
                continue
            for prefix in _PREFIXES:
                for suffix in _SUFFIXES:
                    get = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
                    put = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
                    if get is not None and put is not None:
                        get.restype, get.argtypes = ctypes.c_int, []
                        put.restype, put.argtypes = None, [ctypes.c_int]
                        return get, put
    return None


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Within the block OpenBLAS runs on the calling thread only; its thread count is restored after.

    Nested and concurrent blocks (worlds stepped from several Python threads) share one count: the first
    to enter sets 1, the last to leave puts the process's count back."""
    global _depth, _saved
    api = blas_thread_api()
    if api is None:
        yield
        return
    with _lock:
        if _depth == 0:
            _saved = api[0]()
            if _saved > 1:
                api[1](1)
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _saved > 1:
                api[1](_saved)
