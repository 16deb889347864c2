"""The collector pause around big decodes and the C heap trim after a list."""

from __future__ import annotations

import gc
import platform
import threading
from collections.abc import Iterator

import pytest

from karpy.kube.memory import collector_paused, freeze_heap, gc_paused, release_free_memory


@pytest.fixture(autouse=True)
def _collector_restored() -> Iterator[None]:
    was_enabled = gc.isenabled()
    yield
    if was_enabled:
        gc.enable()
    else:
        gc.disable()


def test_the_collector_is_off_inside_and_back_on_after() -> None:
    gc.enable()
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_call_runs_with_the_collector_off_in_its_worker_thread() -> None:
    gc.enable()
    seen: list[object] = []

    def work(a: int, *, b: int) -> int:
        seen.append(gc.isenabled())
        return a + b

    worker = threading.Thread(target=lambda: seen.append(collector_paused(work)(1, b=2)))
    worker.start()
    worker.join()
    assert seen == [False, 3]
    assert gc.isenabled()


def test_nested_pauses_restore_only_at_the_outermost() -> None:
    gc.enable()
    with gc_paused():
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    with gc_paused():
        pass
    assert not gc.isenabled()


def test_an_exception_inside_still_restores_the_collector() -> None:
    gc.enable()
    with pytest.raises(ValueError), gc_paused():
        raise ValueError("decode failed")
    assert gc.isenabled()


def test_overlapping_pauses_in_two_threads_restore_once_both_end() -> None:
    gc.enable()
    inside = threading.Event()
    leave = threading.Event()

    def other() -> None:
        with gc_paused():
            inside.set()
            leave.wait(10)

    thread = threading.Thread(target=other)
    with gc_paused():
        thread.start()
        assert inside.wait(10)
    assert not gc.isenabled()  # the other thread's pause is still open
    leave.set()
    thread.join(10)
    assert gc.isenabled()


def test_release_free_memory_works_where_glibc_is() -> None:
    released = release_free_memory()
    assert released is (platform.libc_ver()[0] == "glibc")


def test_freeze_heap_moves_live_objects_out_of_collection() -> None:
    try:
        kept = [{"pod": i} for i in range(1000)]
        assert any(o is kept for o in gc.get_objects())
        frozen = freeze_heap()
        assert frozen >= len(kept)
        # Objects frozen by this call that other threads (a test runner's) free meanwhile leave
        # the permanent generation, so the count may only have fallen since.
        assert len(kept) <= gc.get_freeze_count() <= frozen
        assert not any(o is kept for o in gc.get_objects())
    finally:
        gc.unfreeze()
