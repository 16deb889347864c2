"""DescribeInstances by ID, coalesced: calls within the window share one request."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from karpy.cloudprovider.aws.describebatch import DescribeBatcher


class EC2:
    def __init__(self, known: set[str], *, fail: bool = False) -> None:
        self.known = known
        self.fail = fail
        self.requests: list[list[str]] = []

    async def describe(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        self.requests.append(list(ids))
        await asyncio.sleep(0)
        if self.fail:
            raise RuntimeError("throttled")
        return [{"InstanceId": i, "State": {"Name": "running"}} for i in ids if i in self.known]


async def test_calls_within_the_window_share_one_request() -> None:
    ec2 = EC2({"i-1", "i-2", "i-3"})
    batcher = DescribeBatcher(ec2.describe, window=0.05)
    found = await asyncio.gather(
        batcher.get("i-1"), batcher.get("i-2"), batcher.get("i-1"), batcher.get("i-9")
    )
    assert ec2.requests == [["i-1", "i-2", "i-9"]]
    assert [f["InstanceId"] if f else None for f in found] == ["i-1", "i-2", "i-1", None]
    # A later call opens a new batch.
    assert (await batcher.get("i-3")) == {"InstanceId": "i-3", "State": {"Name": "running"}}
    assert ec2.requests[-1] == ["i-3"]


async def test_a_full_batch_is_sent_at_once() -> None:
    ec2 = EC2({"i-1", "i-2"})
    batcher = DescribeBatcher(ec2.describe, window=60.0, max_ids=2)
    found = await asyncio.wait_for(asyncio.gather(batcher.get("i-1"), batcher.get("i-2")), 5)
    assert ec2.requests == [["i-1", "i-2"]] and all(found)


async def test_a_failed_request_fails_every_caller_of_its_batch() -> None:
    ec2 = EC2({"i-1"}, fail=True)
    batcher = DescribeBatcher(ec2.describe, window=0.01)
    results = await asyncio.gather(batcher.get("i-1"), batcher.get("i-2"), return_exceptions=True)
    assert all(isinstance(r, RuntimeError) for r in results)
    ec2.fail = False
    assert await batcher.get("i-1") is not None


@pytest.mark.parametrize("ids", [["i-1"], ["i-1", "i-1", "i-1"]])
async def test_duplicates_ask_once(ids: list[str]) -> None:
    ec2 = EC2({"i-1"})
    batcher = DescribeBatcher(ec2.describe, window=0.01)
    await asyncio.gather(*(batcher.get(i) for i in ids))
    assert ec2.requests == [["i-1"]]


async def test_callers_get_the_instance_of_their_key() -> None:
    """With `key`, the answer is matched by another value of the instance (the NodeClaim tag of
    the lookups for instances a previous leader launched)."""
    requests: list[list[str]] = []

    async def describe(names: Sequence[str]) -> list[dict[str, Any]]:
        requests.append(list(names))
        return [{"InstanceId": f"i-{n}", "Tag": n} for n in names if n != "gone"]

    batcher = DescribeBatcher(describe, key=lambda i: str(i["Tag"]), window=0.01)
    found = await asyncio.gather(batcher.get("a"), batcher.get("gone"), batcher.get("b"))
    assert requests == [["a", "b", "gone"]]
    assert [f["InstanceId"] if f else None for f in found] == ["i-a", None, "i-b"]


async def test_each_batch_is_measured_by_its_callers() -> None:
    from tests.unit.cloudprovider.aws.test_fleetbatch import batch_samples

    before = batch_samples("describe_instances")
    batcher = DescribeBatcher(EC2({"i-1"}).describe, window=0.05)
    await asyncio.gather(batcher.get("i-1"), batcher.get("i-1"), batcher.get("i-2"))
    batches, callers, seconds = (
        a - b for a, b in zip(batch_samples("describe_instances"), before, strict=True)
    )
    assert (batches, callers) == (1, 3)
    assert seconds >= 0.04  # the window (timers may fire a little early)
