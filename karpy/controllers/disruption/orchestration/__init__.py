"""The orchestration queue: runs disruption commands (mark, launch replacements, wait, delete),
rolls them back on failure, and finishes or rolls back those a previous leader left behind."""

from karpy.controllers.disruption.orchestration.queue import (
    COMMAND_TIMEOUT,
    QUEUE_NAME,
    OrchestrationQueue,
    QueueController,
    Revalidate,
    command_timeout,
)

__all__ = [
    "COMMAND_TIMEOUT",
    "QUEUE_NAME",
    "OrchestrationQueue",
    "QueueController",
    "Revalidate",
    "command_timeout",
]
