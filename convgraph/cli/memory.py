"""How a command sets up its own process's memory (the library never
touches the process): Arrow's buffers from C's malloc, glibc's mapping
threshold fixed, a whole read's freed memory handed back."""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import cache
from typing import Any

#: glibc's `mallopt` parameter for the mapping threshold, and its start.
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 128 * 1024


def use_system_allocator() -> None:
    """Have Arrow take its buffers from C's malloc once pyarrow is imported
    (the user's own setting wins)."""
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")


def fixed_mmap_threshold() -> None:
    """Keep glibc mapping every buffer from 128 KiB up on its own, so that
    freeing one hands it back."""
    libc = _libc()
    if libc is not None and hasattr(libc, "mallopt"):
        libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)


def give_back_memory() -> None:
    """Hand the memory freed by a whole-forest read back to the system."""
    import sys

    pyarrow = sys.modules.get("pyarrow")
    if pyarrow is not None:
        pyarrow.default_memory_pool().release_unused()
    libc = _libc()
    if libc is not None and hasattr(libc, "malloc_trim"):  # glibc only
        libc.malloc_trim(0)


@cache
def _libc() -> Any:
    """C's library (ctypes), or None where it is not found."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    return ctypes.CDLL(name) if name else None


def measuring(progress: Callable[[str, int, int | None], None] | None = None) -> Any:
    """A progress callback for a read that is measured (`Logs.summaries`):
    glibc's threshold fixed when a read begins (a small file measured tree
    by tree reads none), the read's memory given back before the statistics
    are computed; each report then passed on to `progress`."""
    from convgraph.logs import COMPUTING

    began = False

    def report(phase: str, done: int, total: int | None) -> None:
        nonlocal began
        if not began:
            began = True
            fixed_mmap_threshold()
        if phase == COMPUTING:
            give_back_memory()
        if progress is not None:
            progress(phase, done, total)

    return report
