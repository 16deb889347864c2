"""Reading interruption-queue bodies: each documented EventBridge shape becomes its kind and
instances; other events are no-ops; unreadable bodies raise an error that names the cause."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from karpy.cloudprovider.aws.interruption.messages import (
    MAX_BODY_BYTES,
    Kind,
    MalformedMessageError,
    parse_message,
)
from tests.kit.interruption import (
    body,
    envelope,
    rebalance_recommendation,
    scheduled_change,
    spot_interruption,
    state_change,
)


@pytest.mark.parametrize(
    ("message", "kind", "instances"),
    [
        (spot_interruption("i-0abc"), Kind.SPOT_INTERRUPTED, ("i-0abc",)),
        (spot_interruption("i-0abc", "hibernate"), Kind.SPOT_INTERRUPTED, ("i-0abc",)),
        (rebalance_recommendation("i-0abc"), Kind.REBALANCE_RECOMMENDATION, ("i-0abc",)),
        (state_change("i-0abc", "stopping"), Kind.INSTANCE_STOPPED, ("i-0abc",)),
        (state_change("i-0abc", "stopped"), Kind.INSTANCE_STOPPED, ("i-0abc",)),
        (state_change("i-0abc", "shutting-down"), Kind.INSTANCE_TERMINATED, ("i-0abc",)),
        (state_change("i-0abc", "terminated"), Kind.INSTANCE_TERMINATED, ("i-0abc",)),
        (state_change("i-0abc", "running"), Kind.NO_OP, ()),
        (state_change("i-0abc", "pending"), Kind.NO_OP, ()),
        (scheduled_change("i-0abc", "i-0def"), Kind.SCHEDULED_CHANGE, ("i-0abc", "i-0def")),
        (scheduled_change("i-0abc", service="RDS"), Kind.NO_OP, ()),
        (
            envelope(
                "aws.ec2",
                "EC2 Capacity Reservation Instance Interruption Warning",
                {"instance-id": "i-0abc", "instance-action": "terminate"},
            ),
            Kind.CAPACITY_RESERVATION_INTERRUPTED,
            ("i-0abc",),
        ),
        (envelope("aws.ec2", "AWS API Call via CloudTrail", {"x": 1}), Kind.NO_OP, ()),
        (envelope("my.app", "EC2 Spot Instance Interruption Warning", {}), Kind.NO_OP, ()),
        ({**spot_interruption("i-0abc"), "version": "1"}, Kind.NO_OP, ()),
    ],
)
def test_documented_shapes_parse_to_their_kind_and_instances(
    message: dict[str, Any], kind: Kind, instances: tuple[str, ...]
) -> None:
    parsed = parse_message(body(message))
    assert parsed.kind is kind
    assert parsed.instance_ids == instances
    assert parsed.id == message["id"]


def test_the_event_time_and_state_are_kept() -> None:
    parsed = parse_message(body(state_change("i-0abc", "shutting-down")))
    assert parsed.time == datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
    assert parsed.state == "shutting-down"


def test_a_health_event_that_is_not_a_scheduled_change_is_a_no_op() -> None:
    message = scheduled_change("i-0abc")
    message["detail"]["eventTypeCategory"] = "issue"
    assert parse_message(body(message)).kind is Kind.NO_OP


@pytest.mark.parametrize(
    ("raw", "cause"),
    [
        ("not json at all", "not JSON"),
        ("", "not JSON"),
        (b"\xff\xfe", "not JSON"),
        ("[1, 2]", "JSON list, not an object"),
        ('"text"', "JSON str, not an object"),
        (json.dumps({"hello": "world"}), "envelope.version"),
        (json.dumps({"version": "0", "source": "aws.ec2"}), "envelope.detail-type"),
        (
            json.dumps({**spot_interruption("i-0abc"), "detail": {}}),
            "detail.instance-id",
        ),
        (
            json.dumps({**spot_interruption("i-0abc"), "detail": {"instance-id": "vol-1"}}),
            "detail.instance-id",
        ),
        (json.dumps({**state_change("i-0abc", "x"), "detail": {"instance-id": "i-1"}}), "state"),
        (
            json.dumps({**scheduled_change("i-0abc"), "detail": {"service": "EC2"}}),
            "eventTypeCategory",
        ),
        (json.dumps({**spot_interruption("i-0abc"), "time": "yesterday"}), "envelope.time"),
        ("x" * (MAX_BODY_BYTES + 1), "exceeds"),
    ],
)
def test_unreadable_bodies_raise_naming_the_cause(raw: str | bytes, cause: str) -> None:
    with pytest.raises(MalformedMessageError, match=cause):
        parse_message(raw)
