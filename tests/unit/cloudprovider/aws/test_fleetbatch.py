"""The CreateFleet batcher's rules: which requests merge, the batch's token, how an answer is
shared out, and when a batch closes. The CreateFleet call is the batcher's own seam (a callable
that records what it was sent); the moto-backed launches are in
tests/integration/aws/test_fleet_batching.py."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from karpy.cloudprovider.aws.fleetbatch import (
    TOO_FEW,
    FleetBatcher,
    batch_token,
    request_key,
    share_out,
)


def request(token: str, zone: str = "us-east-1a") -> dict[str, Any]:
    return {
        "Type": "instant",
        "ClientToken": token,
        "LaunchTemplateConfigs": [{"Overrides": [{"InstanceType": "m5.large", "Zone": zone}]}],
        "TargetCapacitySpecification": {
            "DefaultTargetCapacityType": "on-demand",
            "TotalTargetCapacity": 1,
        },
    }


def test_requests_equal_but_for_their_token_share_a_key() -> None:
    assert request_key(request("a")) == request_key(request("b"))
    assert request_key(request("a")) != request_key(request("a", zone="us-east-1b"))


def test_batch_token_is_stable_and_short() -> None:
    assert batch_token(["only"]) == "only"
    token = batch_token(["b", "a", "c"])
    assert token == batch_token(["c", "b", "a"]) != batch_token(["a", "b"])
    assert len(token) <= 64 and token.isascii()


def test_share_out_gives_one_instance_each_then_the_errors() -> None:
    answer = {
        "FleetId": "fleet-1",
        "Instances": [
            {"InstanceIds": ["i-1", "i-2"], "InstanceType": "m5.large"},
            {"InstanceIds": ["i-3"], "InstanceType": "m5.xlarge"},
        ],
        "Errors": [{"ErrorCode": "InsufficientInstanceCapacity"}],
    }
    shares = share_out(answer, 5)
    assert [s["Instances"][0]["InstanceIds"] for s in shares[:3]] == [["i-1"], ["i-2"], ["i-3"]]
    assert shares[2]["Instances"][0]["InstanceType"] == "m5.xlarge"
    assert [s["Instances"] for s in shares[3:]] == [[], []]
    assert all(s["Errors"] == answer["Errors"] for s in shares)
    # No instance and no error: the requests left over still learn why.
    assert share_out({"Instances": []}, 1)[0]["Errors"][0]["ErrorCode"] == TOO_FEW
    # More instances than asked: each request gets one, the rest is nobody's.
    assert len(share_out(answer, 2)) == 2


class Recorder:
    """A CreateFleet that launches `TotalTargetCapacity` made-up instances."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    async def __call__(self, req: dict[str, Any]) -> Mapping[str, Any]:
        self.sent.append(req)
        n = req["TargetCapacitySpecification"]["TotalTargetCapacity"]
        base = len(self.sent) * 100
        return {"Instances": [{"InstanceIds": [f"i-{base + i}" for i in range(n)]}]}


async def test_a_batch_closes_at_max_items_and_requests_differ_by_key() -> None:
    recorder = Recorder()
    batcher = FleetBatcher(recorder, idle=0.05, max_wait=5.0, max_items=2)
    answers = await asyncio.gather(
        *(batcher.create(request(f"t{i}")) for i in range(5)),
        batcher.create(request("z", zone="us-east-1b")),
    )
    sizes = sorted(r["TargetCapacitySpecification"]["TotalTargetCapacity"] for r in recorder.sent)
    assert sizes == [1, 1, 2, 2]
    ids = [a["Instances"][0]["InstanceIds"][0] for a in answers]
    assert len(set(ids)) == 6
    merged = [
        r for r in recorder.sent if r["TargetCapacitySpecification"]["TotalTargetCapacity"] == 2
    ]
    assert all(r["ClientToken"].startswith("karpy-batch-") for r in merged)


async def test_a_request_for_more_than_one_instance_is_refused() -> None:
    batcher = FleetBatcher(Recorder())
    bad = request("t")
    bad["TargetCapacitySpecification"]["TotalTargetCapacity"] = 3
    with pytest.raises(ValueError, match="TotalTargetCapacity must be 1"):
        await batcher.create(bad)


def batch_samples(batcher: str) -> tuple[float, float, float]:
    """(batches, requests, seconds) observed so far for `batcher`."""
    from karpy.kube.metrics import REGISTRY

    def value(name: str) -> float:
        return REGISTRY.get_sample_value(name, {"batcher": batcher}) or 0.0

    return (
        value("karpenter_cloudprovider_batcher_batch_size_count"),
        value("karpenter_cloudprovider_batcher_batch_size_sum"),
        value("karpenter_cloudprovider_batcher_batch_time_seconds_sum"),
    )


async def test_each_batch_is_measured_by_its_size_and_how_long_it_was_open() -> None:
    before = batch_samples("create_fleet")
    batcher = FleetBatcher(Recorder(), idle=0.05, max_wait=5.0)
    await asyncio.gather(*(batcher.create(request(f"t{i}")) for i in range(7)))
    batches, requests, seconds = (
        a - b for a, b in zip(batch_samples("create_fleet"), before, strict=True)
    )
    assert (batches, requests) == (1, 7)
    assert seconds >= 0.04  # the idle window after the last request (timers may fire early)
