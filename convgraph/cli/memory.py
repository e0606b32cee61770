"""How a convgraph command sets up its process's memory.

The library never touches the process (a notebook that reads a forest keeps
its allocators as they were: tests/test_process_state.py); a command's
process is the command's own, so the command line sets, when a command
starts, what `python -m benchmarks engine` shows earns its keep on the
whole forest:

- Arrow's buffers come from C's malloc (Arrow's system pool) instead of
  mimalloc, which keeps the pages of the reading threads and of the
  transient arrays Arrow has freed: less time and memory for every command
  that reads a forest by columns. It is chosen by Arrow's environment
  variable, read when pyarrow loads: set before any command imports it.
- For the commands that read a forest without its texts to measure it
  (`stats`, `conversations`), glibc maps every buffer from 128 KiB up on its
  own, so freeing one hands it back, rather than raising that threshold as
  buffers are freed and keeping later column-sized arrays in its heaps:
  less memory. Not for the commands that write texts, which make and drop
  many large buffers and would pay a mapping for each.
- After a whole forest is read, the memory its transient buffers took is
  handed back (glibc's `malloc_trim`, Arrow's pool's unused memory), so
  the work on the forest does not hold it on top of its own.

Elsewhere than glibc the second does nothing.
"""

from __future__ import annotations

import os
from functools import cache
from typing import Any

#: glibc's `mallopt` parameter for the size from which malloc maps a buffer
#: on its own, and the size it starts at (128 KiB).
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD_BYTES = 128 * 1024


def use_system_allocator() -> None:
    """Have Arrow take its buffers from C's malloc, from the next time
    pyarrow is imported (a process that imported it already keeps its
    pool). The user's own setting of the variable wins."""
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")


def fixed_mmap_threshold() -> None:
    """Keep glibc's malloc mapping every buffer from 128 KiB up on its own,
    for the rest of the process (setting it turns glibc's raising off)."""
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
    """C's library as ctypes loads it, or None where it is not found
    (ctypes imported here: most commands never need it)."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    return ctypes.CDLL(name) if name else None
