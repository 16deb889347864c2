"""Memory hygiene around the big decodes of list pages and watch events.

- `gc_paused()`: decoded JSON is a tree, so the cyclic garbage collector can find nothing in it.
  Yet a 500-pod list page decodes into about a million fresh dicts, lists and strings, and each
  few hundred of them trigger a collection that walks them again; measured, that is three
  quarters of the time spent decoding a page. Decoding and trimming under the pause lets the raw
  objects die by reference counting before any collection sees them.
- `release_free_memory()`: glibc keeps the heap pages a freed page body (~10 MB) and the
  decoder's larger blocks lived in, raising its own trim thresholds as it goes; after a list
  has been ingested those pages are free but resident. `malloc_trim(0)` hands them back to the
  OS. Called after the initial sync and after each relist, not per page: it walks the heap.
- `collector_paused(fn)`: `fn` run under `gc_paused()`, for CPU work run off the loop that
  builds a large graph living only as long as the call (a consolidation snapshot and its
  simulations). Left on, the collector walks that graph again and again while it grows; each
  full collection holds the GIL, so the event loop waited for it: 1-2 s pauses per decision on
  the 1,000-node benchmark, 3 of them per decision. Paused, the graph dies by reference counting
  when the call returns; what survives is collected as usual afterwards.
- `freeze_heap()`: once the caches have synced, the heap holds tens of thousands of cached
  objects that live for the whole run. A full collection walks them all and blocks the event
  loop for 100 ms or more; frozen, they are left out of every later collection. Cached objects
  are trees freed by reference counting, so freezing them keeps nothing alive for longer.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import ParamSpec, TypeVar

__all__ = ["collector_paused", "freeze_heap", "gc_paused", "release_free_memory"]

P = ParamSpec("P")
R = TypeVar("R")

_lock = threading.Lock()
_depth = 0
_reenable = False


@contextmanager
def gc_paused() -> Iterator[None]:
    """Keep the cyclic collector off for the block; nested and concurrent uses stack, and the
    collector is turned back on only if it was on when the outermost pause began."""
    global _depth, _reenable
    with _lock:
        if _depth == 0:
            _reenable = gc.isenabled()
            gc.disable()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _reenable:
                gc.enable()


def collector_paused(fn: Callable[P, R]) -> Callable[P, R]:
    """`fn`, called with the cyclic collector paused for the whole call (see `gc_paused`)."""

    @functools.wraps(fn)
    def call(*args: P.args, **kwargs: P.kwargs) -> R:
        with gc_paused():
            return fn(*args, **kwargs)

    return call


def _load_malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        trim = libc.malloc_trim  # glibc only; musl and macOS have no malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    func: Callable[[int], int] = trim
    return func


_malloc_trim = _load_malloc_trim()


def release_free_memory() -> bool:
    """Return the C heap's free pages to the OS; False where the libc cannot (not glibc)."""
    if _malloc_trim is None:
        return False
    _malloc_trim(0)
    return True


def freeze_heap() -> int:
    """Move every object alive now out of the collector's generations; returns how many are
    frozen in all."""
    gc.freeze()
    return gc.get_freeze_count()
