"""How a command sets up its own process's memory (the library never does)."""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import cache
from typing import Any

_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 128 * 1024


def use_system_allocator() -> None:
    """Have Arrow allocate with C's malloc (the user's own setting wins)."""
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")


def fixed_mmap_threshold() -> None:
    """Have glibc map buffers from 128 KiB up, so freeing one returns it."""
    libc = _libc()
    if libc is not None and hasattr(libc, "mallopt"):
        libc.mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)


def give_back_memory() -> None:
    """Hand the memory freed by a whole-forest read back to the system."""
    import sys

    if (pyarrow := sys.modules.get("pyarrow")) is not None:
        pyarrow.default_memory_pool().release_unused()
    libc = _libc()
    if libc is not None and hasattr(libc, "malloc_trim"):  # glibc only
        libc.malloc_trim(0)


@cache
def _libc() -> Any:
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    return ctypes.CDLL(name) if name else None


def measuring(progress: Callable[[str, int, int | None], None] | None = None) -> Any:
    """A progress callback that fixes glibc's threshold when a read begins and
    gives its memory back before the statistics, then calls `progress`."""
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
