"""The protocol every disruption method implements, and the command a method hands the queue.

The disruption loop (`controller.py`) tries its methods in Karpenter's order (emptiness, drift,
multi-node consolidation, single-node consolidation) and stops at the first that yields a
command. For each method it:

1. builds the candidates (`candidates.candidate`) and keeps those `should_disrupt` accepts;
2. computes the budgets for the method's `reason` (`Budgets`: what each NodePool may still
   start disrupting);
3. awaits `compute(candidates, budgets)` (`compute_many` for a `ManyCommands` method: several
   independent commands); no command moves on to the next method;
4. when `needs_validation`, waits the validation delay (15 s) once, rebuilds candidates and
   budgets the same way and awaits `validate(command, candidates, budgets)` (`validate_many`):
   what still holds (the same, a still-valid subset, or nothing when the cluster changed);
5. hands the commands to the orchestration queue, which taints, marks, launches the
   replacements, waits for them to initialize and deletes the candidates; the loop goes on to
   its next pass at once, the queue's candidates excluded, while the queue works.

A method holds whatever it needs (cluster state, cloud provider, events) from its constructor;
the loop passes only candidates and budgets, so a method can be tested on constructed states.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final, Literal, Protocol, runtime_checkable

from karpy.controllers.disruption.candidates import Candidate
from karpy.scheduling.engine.model import NewNodeClaim

__all__ = [
    "DECISION_DELETE",
    "DECISION_REPLACE",
    "Budgets",
    "Command",
    "Decision",
    "ManyCommands",
    "Method",
    "within_budgets",
]

DECISION_DELETE: Final = "delete"
DECISION_REPLACE: Final = "replace"
Decision = Literal["delete", "replace"]

Budgets = Mapping[str, int]
"""NodePool name -> how many more of its nodes the method's reason may start disrupting now."""


@dataclass(frozen=True, slots=True)
class Command:
    """What a method decided: delete `candidates`, after launching `replacements` (if any) and
    waiting for them to initialize.

    `reason` is the budget reason (`Empty`, `Drifted`, `Underutilized`), `consolidation_type`
    the method's metric label. `savings` is the hourly price of the candidates minus that of the
    replacements when the method knows prices (None otherwise); `pods` how many pods move. Both
    are for logs and `karpy simulate`; the queue acts on candidates and replacements only.
    """

    candidates: tuple[Candidate, ...] = ()
    replacements: tuple[NewNodeClaim, ...] = ()
    reason: str = ""
    consolidation_type: str = ""
    savings: float | None = None
    pods: int = 0
    note: str = field(default="", compare=False)

    @property
    def decision(self) -> Decision:
        return DECISION_REPLACE if self.replacements else DECISION_DELETE

    @property
    def is_noop(self) -> bool:
        return not self.candidates

    def keys(self) -> frozenset[str]:
        """The candidates' node keys."""
        return frozenset(c.key for c in self.candidates)


NOOP: Final = Command()


@runtime_checkable
class Method(Protocol):
    """One way of disrupting nodes voluntarily.

    - `reason`: the budget reason it spends (`Empty`, `Drifted`, `Underutilized`).
    - `consolidation_type`: its label in metrics (`empty`, `multi`, `single`; `""` for drift).
    - `needs_validation`: whether the loop waits the validation delay and calls `validate`
      before acting (emptiness and consolidation: yes; drift: no).
    - `graceful`: True for methods that always respect do-not-disrupt pods and PDBs (emptiness,
      consolidation); False for eventual ones (drift), whose candidates may include nodes with
      `terminationGracePeriod` despite pods that block eviction.
    """

    @property
    def reason(self) -> str: ...

    @property
    def consolidation_type(self) -> str: ...

    @property
    def needs_validation(self) -> bool: ...

    @property
    def graceful(self) -> bool: ...

    def should_disrupt(self, candidate: Candidate) -> bool:
        """Whether this method considers `candidate` at all (cheap; may publish an event
        saying why not)."""
        ...

    async def compute(self, candidates: Sequence[Candidate], budgets: Budgets) -> Command:
        """The command to run, or a no-op `Command()`. `candidates` passed `should_disrupt`;
        a command must take no more of a NodePool's nodes than `budgets` allows."""
        ...

    async def validate(
        self, command: Command, candidates: Sequence[Candidate], budgets: Budgets
    ) -> Command:
        """After the validation delay, with fresh candidates and budgets: the part of `command`
        that still holds (a no-op when the cluster changed under it)."""
        ...


@runtime_checkable
class ManyCommands(Protocol):
    """A method that may find several independent commands in one pass (consolidation): they
    share no candidate, none moves pods onto another's candidates or counts on room another
    one takes, and together they stay within the budgets. The loop validates them together
    after one validation delay and starts them all, so a cluster that needs many small moves
    does not pay a delay and a search per move."""

    async def compute_many(
        self, candidates: Sequence[Candidate], budgets: Budgets
    ) -> list[Command]:
        """The commands to run (none: an empty list), as `Method.compute` each."""
        ...

    async def validate_many(
        self, commands: Sequence[Command], candidates: Sequence[Candidate], budgets: Budgets
    ) -> list[Command]:
        """The commands that still hold after the validation delay; each one dropped alone."""
        ...


def within_budgets(candidates: Sequence[Candidate], budgets: Budgets) -> list[Candidate]:
    """`candidates` in their order, each taken only while its NodePool's budget lasts."""
    remaining = dict(budgets)
    out: list[Candidate] = []
    for c in candidates:
        if remaining.get(c.nodepool_name, 0) <= 0:
            continue
        remaining[c.nodepool_name] -= 1
        out.append(c)
    return out
