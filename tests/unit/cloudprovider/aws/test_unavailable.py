"""The ICE cache: an offering is left out for 3 minutes after an insufficient-capacity error."""

from __future__ import annotations

from karpy.cloudprovider.aws.unavailable import UnavailableOfferings


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_offering_is_unavailable_for_three_minutes_per_capacity_type_type_and_zone() -> None:
    clock = Clock()
    cache = UnavailableOfferings(clock=clock)
    cache.mark_unavailable("spot", "m5.large", "us-east-1a")
    assert cache.is_unavailable("spot", "m5.large", "us-east-1a")
    assert not cache.is_unavailable("on-demand", "m5.large", "us-east-1a")
    assert not cache.is_unavailable("spot", "m5.large", "us-east-1b")
    assert not cache.is_unavailable("spot", "m5.xlarge", "us-east-1a")
    clock.now += 179
    assert cache.is_unavailable("spot", "m5.large", "us-east-1a")
    clock.now += 1
    assert not cache.is_unavailable("spot", "m5.large", "us-east-1a")
    assert len(cache) == 0


def test_a_repeat_restarts_the_ttl_and_bumps_the_sequence_number() -> None:
    clock = Clock()
    cache = UnavailableOfferings(clock=clock)
    cache.mark_unavailable("on-demand", "c5.large", "us-east-1c")
    first = cache.seq_num
    clock.now += 120
    cache.mark_unavailable("on-demand", "c5.large", "us-east-1c")
    assert cache.seq_num == first + 1
    clock.now += 120
    assert cache.is_unavailable("on-demand", "c5.large", "us-east-1c")
    assert UnavailableOfferings.key("on-demand", "c5.large", "us-east-1c") == (
        "on-demand:c5.large:us-east-1c"
    )


def test_a_whole_capacity_type_can_be_unavailable() -> None:
    clock = Clock()
    cache = UnavailableOfferings(clock=clock)
    cache.mark_capacity_type_unavailable("spot")
    assert cache.is_unavailable("spot", "anything", "anywhere")
    assert not cache.is_unavailable("on-demand", "anything", "anywhere")
    clock.now += 180
    assert not cache.is_unavailable("spot", "anything", "anywhere")


def test_active_keys_change_when_an_entry_expires() -> None:
    clock = Clock()
    cache = UnavailableOfferings(clock=clock)
    assert cache.active() == frozenset()
    cache.mark_unavailable("spot", "m5.large", "us-east-1a")
    cache.mark_capacity_type_unavailable("spot")
    assert cache.active() == {"spot:m5.large:us-east-1a", "spot:*:*"}
    clock.now += 180
    assert cache.active() == frozenset()


def _fleet_error(code: str, name: str = "", zone: str = "") -> dict[str, object]:
    overrides = {"InstanceType": name, "AvailabilityZone": zone} if name else {}
    return {"ErrorCode": code, "LaunchTemplateAndOverrides": {"Overrides": overrides}}


def test_create_fleet_errors_mark_the_offerings_they_name() -> None:
    cache = UnavailableOfferings(clock=Clock())
    all_capacity = cache.record_fleet_errors(
        [
            _fleet_error("InsufficientInstanceCapacity", "m5.large", "us-east-1a"),
            _fleet_error("UnfulfillableCapacity", "c5.large", "us-east-1b"),
        ],
        "on-demand",
    )
    assert all_capacity
    assert cache.active() == {"on-demand:m5.large:us-east-1a", "on-demand:c5.large:us-east-1b"}
    assert not cache.record_fleet_errors(
        [_fleet_error("InvalidParameterValue", "r5.large", "us-east-1a")], "spot"
    )
    assert not cache.is_unavailable("spot", "r5.large", "us-east-1a")
    assert cache.record_fleet_errors(
        [_fleet_error("AuthFailure.ServiceLinkedRoleCreationNotPermitted")], "spot"
    )
    assert cache.is_unavailable("spot", "anything", "us-east-1c")
