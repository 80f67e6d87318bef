# SPDX-License-Identifier: GPL-3.0-or-later
"""Keep the solver's large temporaries in the heap (glibc, Linux): no page faults at every small step.

Every small step makes and frees hundreds of temporary arrays of pair length (a 20k-grain bed has 130k
candidate pairs: 1-3 MB per array). glibc's malloc maps each block above its mmap threshold afresh from
the kernel and gives it back when it is freed, so the next step's array of the same size is faulted in
again page by page (4 KB each, zeroed by the kernel). Its dynamic threshold is meant to learn the sizes
of transient blocks, but the heap is trimmed whenever 2x that threshold lies free at its top, which a
pass of large temporaries does all the time. Measured on S9 (sand and rocks, 21,708 particles; perf stat
over 14 frames): 870,000 page faults, 62,000 per frame, and frames a third faster without them.
NumPy's developers describe the same cost (numpy/numpy#8783: "Large allocations on glibc systems need to
be faulted into the process before each use"); the dynamic threshold's rules are glibc's malloc.c
comments (quoted in dask/dask#3530).

:func:`keep_temporaries` raises the mmap threshold to 32 MB (glibc's largest, HEAP_MAX_SIZE / 2 on 64-bit
systems) and the trim threshold to 128 MB, once per process, when the first ``World`` is made. Blocks up
to 32 MB are then reused from the heap; at most 128 MB of freed heap is kept before it is returned. The
peak memory of the benchmarks did not change (S1, S2, S4-100k, S9: within 2 MB). Blocks above 32 MB
(million-particle scenes) are mapped as before. Other systems' allocators are left alone. Set the
environment variable ``UNIFIED_PARTICLES_MALLOC=0`` to keep glibc's defaults.
"""

from __future__ import annotations

import ctypes
import os
import sys

M_TRIM_THRESHOLD = -1  # mallopt parameters, glibc's <malloc.h>
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 32 << 20  # bytes: glibc's upper limit for M_MMAP_THRESHOLD on 64-bit systems
TRIM_THRESHOLD = 128 << 20  # bytes of free heap kept before it is given back to the system

_tuned: bool | None = None  # None: not tried yet in this process


def keep_temporaries() -> bool:
    """Set glibc's mmap and trim thresholds (module docstring) once per process; True when set.

    False, and nothing changed, on systems without glibc (macOS, Windows, musl) or when the environment
    variable ``UNIFIED_PARTICLES_MALLOC`` is ``0``."""
    global _tuned
    if _tuned is None:
        _tuned = _set_thresholds()
    return _tuned


def _set_thresholds() -> bool:
    if not sys.platform.startswith("linux") or os.environ.get("UNIFIED_PARTICLES_MALLOC", "1") == "0":
        return False
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # glibc only: musl has mallopt as a no-op  # noqa: B018
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
