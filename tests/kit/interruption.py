"""EventBridge bodies as they arrive on an interruption queue (the shapes AWS documents and
Karpenter's tests use), for the interruption tests at every level."""

from __future__ import annotations

import json
import uuid
from typing import Any

ACCOUNT = "123456789012"
REGION = "us-east-1"
TIME = "2026-12-01T10:00:00Z"
RETIREMENT = "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED"


def envelope(source: str, detail_type: str, detail: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": detail_type,
        "source": source,
        "account": ACCOUNT,
        "time": TIME,
        "region": REGION,
        "resources": [],
        "detail": detail,
        **extra,
    }


def spot_interruption(instance_id: str, action: str = "terminate") -> dict[str, Any]:
    return envelope(
        "aws.ec2",
        "EC2 Spot Instance Interruption Warning",
        {"instance-id": instance_id, "instance-action": action},
        resources=[f"arn:aws:ec2:{REGION}a:instance/{instance_id}"],
    )


def reservation_interruption(instance_id: str, action: str = "terminate") -> dict[str, Any]:
    """An interruptible capacity reservation taking its instance back (EventBridge schema
    aws.ec2@EC2CapacityReservationInstanceInterruptionWarning)."""
    return envelope(
        "aws.ec2",
        "EC2 Capacity Reservation Instance Interruption Warning",
        {"instance-id": instance_id, "instance-action": action},
    )


def rebalance_recommendation(instance_id: str) -> dict[str, Any]:
    return envelope(
        "aws.ec2", "EC2 Instance Rebalance Recommendation", {"instance-id": instance_id}
    )


def state_change(instance_id: str, state: str) -> dict[str, Any]:
    return envelope(
        "aws.ec2",
        "EC2 Instance State-change Notification",
        {"instance-id": instance_id, "state": state},
    )


def scheduled_change(*instance_ids: str, service: str = "EC2") -> dict[str, Any]:
    return envelope(
        "aws.health",
        "AWS Health Event",
        {
            "eventArn": f"arn:aws:health:{REGION}::event/EC2/{RETIREMENT}/1",
            "service": service,
            "eventTypeCode": RETIREMENT,
            "eventTypeCategory": "scheduledChange",
            "startTime": "Sat, 05 Dec 2026 10:00:00 GMT",
            "endTime": "Sat, 05 Dec 2026 12:00:00 GMT",
            "eventDescription": [
                {
                    "language": "en_US",
                    "latestDescription": "The instance is scheduled for retirement.",
                }
            ],
            "affectedEntities": [{"entityValue": i} for i in instance_ids],
        },
    )


def body(message: dict[str, Any]) -> str:
    return json.dumps(message)
