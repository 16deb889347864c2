"""Rate limiters: client-go's numbers, checked on a fake clock."""

from __future__ import annotations

import pytest

from karpy.kube.clock import FakeClock
from karpy.kube.ratelimit import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    MaxOfRateLimiter,
    TokenBucket,
    default_controller_rate_limiter,
)


def test_per_item_backoff_doubles_from_5ms_and_caps_at_1000s() -> None:
    limiter = ItemExponentialFailureRateLimiter[str]()
    delays = [limiter.when("a") for _ in range(20)]
    assert delays[:4] == pytest.approx([0.005, 0.01, 0.02, 0.04])
    assert delays[17] == pytest.approx(0.005 * 2**17)  # 655.36 s
    assert delays[18] == 1000.0
    assert delays[19] == 1000.0
    assert limiter.num_requeues("a") == 20
    assert limiter.when("b") == pytest.approx(0.005)  # per item
    limiter.forget("a")
    assert limiter.num_requeues("a") == 0
    assert limiter.when("a") == pytest.approx(0.005)


def test_per_item_backoff_never_overflows() -> None:
    limiter = ItemExponentialFailureRateLimiter[str]()
    for _ in range(5000):
        delay = limiter.when("k")
    assert delay == 1000.0


def test_bucket_allows_burst_100_then_10_per_second() -> None:
    clock = FakeClock()
    limiter = BucketRateLimiter[int](clock=clock)
    assert [limiter.when(i) for i in range(100)] == [0.0] * 100
    # the bucket is empty: each further item waits 0.1 s more than the one before
    assert [limiter.when(i) for i in range(100, 103)] == pytest.approx([0.1, 0.2, 0.3])
    clock.advance(10)  # 100 tokens refill, minus the 3 reserved
    free = 0
    while limiter.when(free) == 0.0:
        free += 1
    assert free == 97


def test_max_of_takes_the_longest_delay_and_forgets_everywhere() -> None:
    clock = FakeClock()
    limiter = default_controller_rate_limiter(clock)
    assert isinstance(limiter, MaxOfRateLimiter)
    for _ in range(100):
        limiter.when("other")  # drain the bucket with another key
    assert limiter.when("k") == pytest.approx(0.1)  # bucket wins over 5 ms
    for _ in range(12):
        limiter.when("k")
    clock.advance(1000)
    assert limiter.when("k") == pytest.approx(0.005 * 2**13)  # per-item wins
    assert limiter.num_requeues("k") == 14
    limiter.forget("k")
    assert limiter.num_requeues("k") == 0


async def test_token_bucket_acquire_waits_on_the_clock() -> None:
    import asyncio

    clock = FakeClock()
    bucket = TokenBucket(qps=2, burst=1, clock=clock)
    await bucket.acquire()  # immediate
    waiter = asyncio.create_task(bucket.acquire())
    await clock.step(0.4)
    assert not waiter.done()
    await clock.step(0.1)
    assert waiter.done()


def test_try_take_never_reserves() -> None:
    clock = FakeClock()
    bucket = TokenBucket(qps=1, burst=2, clock=clock)
    assert bucket.try_take() and bucket.try_take()
    assert not bucket.try_take()
    assert not bucket.try_take()
    clock.advance(1.0)
    assert bucket.try_take()  # refused attempts did not push the next token out


def test_unlimited_bucket() -> None:
    bucket = TokenBucket(qps=0, burst=0)
    assert all(bucket.reserve() == 0 for _ in range(1000))


def test_invalid_limits_are_rejected() -> None:
    with pytest.raises(ValueError):
        TokenBucket(qps=1, burst=0)
    with pytest.raises(ValueError):
        ItemExponentialFailureRateLimiter[str](base=0)
    with pytest.raises(ValueError):
        MaxOfRateLimiter[str]()
