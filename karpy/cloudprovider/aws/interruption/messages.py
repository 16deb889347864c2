"""The EventBridge messages the interruption queue carries, and how a body becomes one.

Dispatch is on the envelope's (`version`, `source`, `detail-type`) as Karpenter does: spot
interruption warnings, rebalance recommendations, AWS Health scheduled changes for EC2,
instance state changes and capacity-reservation interruption warnings. Any other event is a
`NoOp` (deleted, counted); a body that is not an envelope of a known event at all raises
`MalformedMessageError` naming the cause.
"""

from __future__ import annotations

import json
from datetime import datetime
from enum import StrEnum
from typing import Any, Final, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = [
    "MAX_BODY_BYTES",
    "Envelope",
    "Kind",
    "MalformedMessageError",
    "Message",
    "parse_message",
]

MAX_BODY_BYTES: Final = 256 * 1024
"""SQS's own limit on a message body; anything larger did not come from EventBridge."""

VERSION: Final = "0"
SOURCE_EC2: Final = "aws.ec2"
SOURCE_HEALTH: Final = "aws.health"
SPOT_INTERRUPTION: Final = "EC2 Spot Instance Interruption Warning"
REBALANCE_RECOMMENDATION: Final = "EC2 Instance Rebalance Recommendation"
STATE_CHANGE: Final = "EC2 Instance State-change Notification"
HEALTH_EVENT: Final = "AWS Health Event"
RESERVATION_INTERRUPTION: Final = "EC2 Capacity Reservation Instance Interruption Warning"

STOPPING_STATES: Final = frozenset({"stopping", "stopped"})
TERMINATING_STATES: Final = frozenset({"shutting-down", "terminated"})


class Kind(StrEnum):
    """Karpenter's message kinds: the `message_type` label and the disruption reason."""

    SPOT_INTERRUPTED = "spot_interrupted"
    REBALANCE_RECOMMENDATION = "rebalance_recommendation"
    SCHEDULED_CHANGE = "scheduled_change"
    INSTANCE_STOPPED = "instance_stopped"
    INSTANCE_TERMINATED = "instance_terminated"
    CAPACITY_RESERVATION_INTERRUPTED = "capacity_reservation_interrupted"
    NO_OP = "no_op"


class MalformedMessageError(ValueError):
    """The body is not a message karpy can read; the text says why."""


_T = TypeVar("_T", bound=BaseModel)


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)


class Envelope(_Model):
    """The EventBridge envelope every message arrives in."""

    version: str
    id: str = ""
    detail_type: str = Field(alias="detail-type")
    source: str
    account: str = ""
    time: datetime | None = None
    region: str = ""
    resources: tuple[str, ...] = ()
    detail: dict[str, Any] = Field(default_factory=dict)


class InstanceDetail(_Model):
    """`detail` of the EC2 events about one instance."""

    instance_id: str = Field(alias="instance-id", pattern=r"^i-[0-9a-zA-Z]+$")


class SpotInterruptionDetail(InstanceDetail):
    instance_action: str = Field(default="", alias="instance-action")


class StateChangeDetail(InstanceDetail):
    state: str


class AffectedEntity(_Model):
    entity_value: str = Field(alias="entityValue")


class EventDescription(_Model):
    language: str = ""
    latest_description: str = Field(default="", alias="latestDescription")


class ScheduledChangeDetail(_Model):
    """`detail` of an AWS Health event (only EC2 scheduled changes are acted on)."""

    service: str
    event_type_category: str = Field(alias="eventTypeCategory")
    event_arn: str = Field(default="", alias="eventArn")
    event_type_code: str = Field(default="", alias="eventTypeCode")
    start_time: str = Field(default="", alias="startTime")
    end_time: str = Field(default="", alias="endTime")
    event_description: tuple[EventDescription, ...] = Field(default=(), alias="eventDescription")
    affected_entities: tuple[AffectedEntity, ...] = Field(default=(), alias="affectedEntities")


class Message(_Model):
    """What the reconciler acts on: the kind, the instances, and when the event happened."""

    kind: Kind
    instance_ids: tuple[str, ...] = ()
    time: datetime | None = None
    id: str = ""
    detail_type: str = ""
    state: Literal["", "stopping", "stopped", "shutting-down", "terminated"] = ""
    """For state changes: the state the instance entered."""


def _loads(body: str | bytes) -> Any:
    size = len(body.encode() if isinstance(body, str) else body)
    if size > MAX_BODY_BYTES:
        raise MalformedMessageError(f"body of {size} bytes exceeds {MAX_BODY_BYTES}")
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MalformedMessageError(f"body is not JSON: {exc}") from None


def _validate(model: type[_T], data: Any, where: str) -> _T:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "(root)"
        raise MalformedMessageError(
            f"{where}.{field}: {first['msg']}" if field != "(root)" else f"{where}: {first['msg']}"
        ) from None


def parse_message(body: str | bytes) -> Message:
    """The message in an SQS body; `MalformedMessageError` when it cannot be read."""
    data = _loads(body)
    if not isinstance(data, dict):
        raise MalformedMessageError(f"body is a JSON {type(data).__name__}, not an object")
    envelope = _validate(Envelope, data, "envelope")
    common = {"time": envelope.time, "id": envelope.id, "detail_type": envelope.detail_type}
    key = (envelope.version, envelope.source, envelope.detail_type)
    if key == (VERSION, SOURCE_EC2, SPOT_INTERRUPTION):
        spot = _validate(SpotInterruptionDetail, envelope.detail, "detail")
        return Message(kind=Kind.SPOT_INTERRUPTED, instance_ids=(spot.instance_id,), **common)
    if key == (VERSION, SOURCE_EC2, RESERVATION_INTERRUPTION):
        warned = _validate(SpotInterruptionDetail, envelope.detail, "detail")
        return Message(
            kind=Kind.CAPACITY_RESERVATION_INTERRUPTED, instance_ids=(warned.instance_id,), **common
        )
    if key == (VERSION, SOURCE_EC2, REBALANCE_RECOMMENDATION):
        one = _validate(InstanceDetail, envelope.detail, "detail")
        return Message(
            kind=Kind.REBALANCE_RECOMMENDATION, instance_ids=(one.instance_id,), **common
        )
    if key == (VERSION, SOURCE_EC2, STATE_CHANGE):
        change = _validate(StateChangeDetail, envelope.detail, "detail")
        if change.state in STOPPING_STATES:
            kind = Kind.INSTANCE_STOPPED
        elif change.state in TERMINATING_STATES:
            kind = Kind.INSTANCE_TERMINATED
        else:  # pending, running: nothing to do
            return Message(kind=Kind.NO_OP, **common)
        return Message(kind=kind, instance_ids=(change.instance_id,), state=change.state, **common)
    if key == (VERSION, SOURCE_HEALTH, HEALTH_EVENT):
        health = _validate(ScheduledChangeDetail, envelope.detail, "detail")
        if health.service != "EC2" or health.event_type_category != "scheduledChange":
            return Message(kind=Kind.NO_OP, **common)
        ids = tuple(e.entity_value for e in health.affected_entities)
        return Message(kind=Kind.SCHEDULED_CHANGE, instance_ids=ids, **common)
    return Message(kind=Kind.NO_OP, **common)
