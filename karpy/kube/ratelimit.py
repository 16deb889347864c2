"""Rate limiters with client-go's semantics.

Two families share one token bucket:

- work-queue limiters answer "how long until this item may be retried?" through a three-method
  protocol (`when`, `forget`, `num_requeues`): per-item exponential failure backoff, a global
  token bucket, and the max of several (client-go's default controller limiter);
- the API client's QPS/burst limiter awaits a token before each request.

Buckets reserve rather than refuse: a caller that finds the bucket empty is told how long to
wait, and the tokens go negative so later callers queue up behind it, as golang.org/x/time/rate
does.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, Protocol, TypeVar

from karpy.kube.clock import Clock, RealClock

__all__ = [
    "BucketRateLimiter",
    "ItemExponentialFailureRateLimiter",
    "MaxOfRateLimiter",
    "RateLimiter",
    "TokenBucket",
    "default_controller_rate_limiter",
]

K = TypeVar("K", bound=Hashable)
K_contra = TypeVar("K_contra", bound=Hashable, contravariant=True)


class TokenBucket:
    """`qps` tokens per second up to `burst`; `qps <= 0` means unlimited."""

    def __init__(self, *, qps: float, burst: int, clock: Clock | None = None) -> None:
        if qps > 0 and burst < 1:
            raise ValueError(f"burst must be at least 1 when qps > 0 (burst={burst})")
        self.qps = qps
        self.burst = burst
        self._clock = clock or RealClock()
        self._tokens = float(burst)
        self._last = self._clock.now()

    def reserve(self) -> float:
        """Take one token; returns the seconds the caller must wait before using it."""
        if self.qps <= 0:
            return 0.0
        now = self._clock.now()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0
        if self._tokens >= 0:
            return 0.0
        return -self._tokens / self.qps

    def try_take(self) -> bool:
        """Take a token only if one is available now (no reservation otherwise)."""
        if self.qps <= 0:
            return True
        now = self._clock.now()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False

    async def acquire(self) -> None:
        """Wait (on the bucket's clock) until a token is available."""
        delay = self.reserve()
        if delay > 0:
            await self._clock.sleep(delay)


class RateLimiter(Protocol[K_contra]):
    """client-go's `TypedRateLimiter`: how long to wait before retrying an item."""

    def when(self, item: K_contra) -> float:
        """Record a retry of `item` and return its delay in seconds."""
        ...

    def forget(self, item: K_contra) -> None:
        """Stop tracking `item` (it succeeded or was given up on)."""
        ...

    def num_requeues(self, item: K_contra) -> int:
        """How many times `item` has been retried since it was last forgotten."""
        ...


class ItemExponentialFailureRateLimiter(Generic[K]):
    """`base * 2**failures`, capped at `max_delay`, counted per item."""

    def __init__(self, *, base: float = 0.005, max_delay: float = 1000.0) -> None:
        if base <= 0 or max_delay < base:
            raise ValueError(f"need 0 < base <= max_delay (base={base}, max_delay={max_delay})")
        self.base = base
        self.max_delay = max_delay
        self._failures: dict[K, int] = {}

    def when(self, item: K) -> float:
        failures = self._failures.get(item, 0)
        self._failures[item] = failures + 1
        if failures > 1000:  # 2**1000 would overflow a float
            return self.max_delay
        return min(self.base * (2.0**failures), self.max_delay)

    def forget(self, item: K) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: K) -> int:
        return self._failures.get(item, 0)


class BucketRateLimiter(Generic[K]):
    """One token bucket shared by all items: bounds the overall retry rate."""

    def __init__(self, *, qps: float = 10.0, burst: int = 100, clock: Clock | None = None) -> None:
        self.bucket = TokenBucket(qps=qps, burst=burst, clock=clock)

    def when(self, item: K) -> float:
        return self.bucket.reserve()

    def forget(self, item: K) -> None:
        """The bucket has no per-item state."""

    def num_requeues(self, item: K) -> int:
        return 0


class MaxOfRateLimiter(Generic[K]):
    """The longest delay any of `limiters` asks for; every limiter records every retry."""

    def __init__(self, *limiters: RateLimiter[K]) -> None:
        if not limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")
        self.limiters = limiters

    def when(self, item: K) -> float:
        return max(limiter.when(item) for limiter in self.limiters)

    def forget(self, item: K) -> None:
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: K) -> int:
        return max(limiter.num_requeues(item) for limiter in self.limiters)


def default_controller_rate_limiter(clock: Clock | None = None) -> MaxOfRateLimiter[Hashable]:
    """client-go's default: 5 ms doubling to 1000 s per item, under a 10 qps / 100 burst bucket."""
    return MaxOfRateLimiter[Hashable](
        ItemExponentialFailureRateLimiter[Hashable](base=0.005, max_delay=1000.0),
        BucketRateLimiter[Hashable](qps=10.0, burst=100, clock=clock),
    )
