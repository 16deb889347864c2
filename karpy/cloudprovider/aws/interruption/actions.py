"""What each message kind does to the NodeClaim of an affected instance, and the events it
records (Karpenter's reasons and messages)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from karpy.cloudprovider.aws.interruption.messages import Kind
from karpy.kube.events import NORMAL, WARNING

__all__ = ["ACTIONS", "TERMINATING_ON_INTERRUPTION", "Action", "Notice"]


class Action(StrEnum):
    """The `action_type` label of `karpenter_interruption_actions_performed_total`."""

    CORDON_AND_DRAIN = "CordonAndDrain"
    NO_ACTION = "NoAction"


@dataclass(frozen=True, slots=True)
class Notice:
    """An event recorded on the NodeClaim and its Node."""

    type: str
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class KindAction:
    action: Action
    notice: Notice
    mark_spot_unavailable: bool = False
    mark_reservation_unavailable: bool = False


ACTIONS: Final[dict[Kind, KindAction]] = {
    Kind.SPOT_INTERRUPTED: KindAction(
        Action.CORDON_AND_DRAIN,
        Notice(WARNING, "SpotInterrupted", "Spot interruption warning was triggered"),
        mark_spot_unavailable=True,
    ),
    Kind.REBALANCE_RECOMMENDATION: KindAction(
        Action.NO_ACTION,
        Notice(
            NORMAL, "SpotRebalanceRecommendation", "Spot rebalance recommendation was triggered"
        ),
    ),
    Kind.SCHEDULED_CHANGE: KindAction(
        Action.CORDON_AND_DRAIN,
        Notice(WARNING, "InstanceUnhealthy", "An unhealthy warning was triggered for the instance"),
    ),
    Kind.INSTANCE_STOPPED: KindAction(
        Action.CORDON_AND_DRAIN, Notice(WARNING, "InstanceStopping", "Instance is stopping")
    ),
    Kind.INSTANCE_TERMINATED: KindAction(
        Action.CORDON_AND_DRAIN, Notice(WARNING, "InstanceTerminating", "Instance is terminating")
    ),
    # EC2 takes the instance back from an interruptible capacity reservation: drain it, and
    # launch nothing more into that reservation until EC2 next says it has room.
    Kind.CAPACITY_RESERVATION_INTERRUPTED: KindAction(
        Action.CORDON_AND_DRAIN,
        Notice(
            WARNING,
            "CapacityReservationInstanceInterrupted",
            "Capacity reservation instance interruption warning was triggered",
        ),
        mark_reservation_unavailable=True,
    ),
}
"""Every kind but `no_op`, which touches nothing."""

TERMINATING_ON_INTERRUPTION: Final = "TerminatingOnInterruption"
"""The event recorded once the NodeClaim's deletion was accepted."""
