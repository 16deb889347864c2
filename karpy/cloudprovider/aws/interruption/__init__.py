"""Spot interruptions and instance events from the SQS queue named by `INTERRUPTION_QUEUE`:
`messages` reads them, `handler` acts on the cluster, `controller` polls the queue on the
leader, `queue` wraps SQS."""

from __future__ import annotations

from karpy.cloudprovider.aws.interruption.controller import InterruptionController
from karpy.cloudprovider.aws.interruption.handler import MessageHandler
from karpy.cloudprovider.aws.interruption.messages import (
    Kind,
    MalformedMessageError,
    Message,
    parse_message,
)

__all__ = [
    "InterruptionController",
    "Kind",
    "MalformedMessageError",
    "Message",
    "MessageHandler",
    "parse_message",
]
