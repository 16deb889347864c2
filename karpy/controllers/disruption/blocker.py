"""The bounded taxonomy of what keeps a node from being disrupted (issue 33, upstream RFC #3255).

Every reason the disruption loop leaves a node alone that a person can act on is one of ten
words; each `Blocker` names the object that blocks (a pod, a PDB, a NodePool or the node
itself) and a detail in Karpenter's words. The words label the metric
`karpy_disruption_blocked_nodes{nodepool,method,reason}`, start the messages of the
`DisruptionBlocked`/`Unconsolidatable` events, and are what `karpy explain node` prints, so the
three say the same thing. Reasons outside the taxonomy (a node that is not managed, is being
deleted, or whose NodePool is gone) are not blockers: nothing is waiting to be unblocked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, get_args

__all__ = [
    "DO_NOT_DISRUPT",
    "REASONS",
    "Blocker",
    "BlockerReason",
]

BlockerReason = Literal[
    "do-not-disrupt",
    "pdb",
    "budget",
    "consolidate-after",
    "not-initialized",
    "nominated",
    "no-cheaper-replacement",
    "spot-to-spot",
    "min-values",
    "static-nodepool",
]
REASONS: Final[tuple[str, ...]] = get_args(BlockerReason)
"""Every reason word, in the order people read them (the metric's label values)."""

DO_NOT_DISRUPT: Final = "do-not-disrupt"
PDB: Final = "pdb"
BUDGET: Final = "budget"
CONSOLIDATE_AFTER: Final = "consolidate-after"
NOT_INITIALIZED: Final = "not-initialized"
NOMINATED: Final = "nominated"
NO_CHEAPER_REPLACEMENT: Final = "no-cheaper-replacement"
SPOT_TO_SPOT: Final = "spot-to-spot"
MIN_VALUES: Final = "min-values"
STATIC_NODEPOOL: Final = "static-nodepool"


@dataclass(frozen=True, slots=True)
class Blocker:
    """Why one node may not be disrupted by one method now.

    `reason` is the taxonomy word, `kind`/`name` the object that blocks (`Pod` `ns/name`,
    `PodDisruptionBudget` `ns/name`, `NodePool` `name`, `Node` `name`), `detail` the message
    (Karpenter's where it has one)."""

    reason: BlockerReason
    kind: str
    name: str
    detail: str

    @property
    def object(self) -> str:
        """`Kind/name`, as kubectl names objects."""
        return f"{self.kind}/{self.name}"

    def message(self) -> str:
        """The event message: the reason word first, then the detail."""
        return f"{self.reason}: {self.detail}"

    def to_dict(self) -> dict[str, str]:
        return {"reason": self.reason, "object": self.object, "detail": self.detail}
