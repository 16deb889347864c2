"""The Azure unavailable-offerings cache: which offerings each refusal rules out, and for how
long (upstream's TTLs), on a clock the test moves."""

from __future__ import annotations

import pytest

from karpy.cloudprovider.azure.unavailable import (
    AzureUnavailableOfferings,
    LaunchFailure,
    classify,
)

ZONES = ("westus2-1", "westus2-2", "westus2-3")


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _failure(capacity_type: str = "spot", sku: str = "Standard_D4s_v3") -> LaunchFailure:
    return LaunchFailure(
        sku=sku, family="standardDSv3Family", vcpus=4, zone="westus2-2",
        capacity_type=capacity_type, zones=ZONES,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("code", "message", "kind"),
    [
        ("SkuNotAvailable", "", "SkuNotAvailable"),
        ("ZonalAllocationFailed", "", "ZonalAllocationFailed"),
        ("OperationNotAllowed", "exceeding approved standardDSv3Family Cores quota", "FamilyQuota"),
        ("OperationNotAllowed", "exceeding approved LowPriorityCores quota", "LowPriorityQuota"),
        ("OperationNotAllowed", "exceeding approved Total Regional Cores quota", "RegionalQuota"),
        ("OperationNotAllowed", "the VM is being deleted", None),
        ("InvalidParameter", "quota", None),
    ],
)
def test_errors_are_classified_by_code_and_message(code: str, message: str, kind: str) -> None:
    assert classify(code, message) == kind


def test_sku_not_available_rules_out_every_zone_of_the_capacity_type_for_its_ttl() -> None:
    clock = Clock()
    cache = AzureUnavailableOfferings(clock=clock)
    cache.record("SkuNotAvailable", _failure("spot"))
    assert all(cache.is_unavailable("spot", "Standard_D4s_v3", z) for z in ZONES)
    assert not cache.is_unavailable("on-demand", "Standard_D4s_v3", "westus2-1")
    clock.now = 3599
    assert cache.is_unavailable("spot", "Standard_D4s_v3", "westus2-1")
    clock.now = 3600
    assert not cache.is_unavailable("spot", "Standard_D4s_v3", "westus2-1")
    cache.record("SkuNotAvailable", _failure("on-demand"))
    clock.now += 22 * 3600
    assert cache.is_unavailable("on-demand", "Standard_D4s_v3", "westus2-3")


def test_zonal_allocation_failure_rules_out_the_family_from_its_size_up_in_that_zone() -> None:
    cache = AzureUnavailableOfferings(clock=Clock())
    cache.record("ZonalAllocationFailed", _failure("on-demand"))
    family = "standardDSv3Family"
    for capacity_type in ("on-demand", "spot"):
        assert cache.is_unavailable(
            capacity_type, "Standard_D8s_v3", "westus2-2", family=family, vcpus=8
        )
    assert not cache.is_unavailable(
        "on-demand", "Standard_D2s_v3", "westus2-2", family=family, vcpus=2
    )
    assert not cache.is_unavailable(
        "on-demand", "Standard_D8s_v3", "westus2-1", family=family, vcpus=8
    )


def test_quotas_rule_out_what_they_cover() -> None:
    clock = Clock()
    cache = AzureUnavailableOfferings(clock=clock)
    cache.record("FamilyQuota", _failure("on-demand"), message="Current Limit: 10")
    assert cache.is_unavailable("on-demand", "Standard_D4s_v3", "westus2-1")
    clock.now = 180
    assert not cache.is_unavailable("on-demand", "Standard_D4s_v3", "westus2-1")
    cache.record("LowPriorityQuota", _failure("spot"))
    assert cache.is_unavailable("spot", "Standard_E2s_v5", "westus2-3")
    assert not cache.is_unavailable("on-demand", "Standard_E2s_v5", "westus2-3")
    cache.record("RegionalQuota", _failure("on-demand"))
    assert cache.is_unavailable("on-demand", "Standard_E2s_v5", "westus2-3")
    before = cache.seq_num
    cache.record("AllocationFailed", _failure("spot", "Standard_F4s_v2"))
    assert cache.seq_num > before
    assert cache.is_unavailable("on-demand", "Standard_F4s_v2", "westus2-1")
    clock.now += 3600
    assert len(cache) == 0
