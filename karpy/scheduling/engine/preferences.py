"""Preferences treated as required, and relaxed one at a time in Karpenter's order.

Karpenter first tries to honour every preference (preferred affinities, ScheduleAnyway spreads,
preferred node terms, PreferNoSchedule taints) as if it were required, and drops them one by one
only for pods that cannot be placed. `Preferences` is what is left to drop for one class;
`Constraints` is what a placement must respect at the current step.
"""

from __future__ import annotations

from dataclasses import dataclass

from karpy.apis.v1.labels import TAINT_EFFECT_PREFER_NO_SCHEDULE
from karpy.scheduling.engine.existing import Admission
from karpy.scheduling.pods import DO_NOT_SCHEDULE, AffinityTerm, PodView, SpreadConstraint
from karpy.scheduling.requirements import Requirements
from karpy.scheduling.taints import Toleration

__all__ = ["Constraints", "Preferences"]

_PNS = Toleration(operator="Exists", effect=TAINT_EFFECT_PREFER_NO_SCHEDULE)


@dataclass(eq=False)
class Constraints:
    """A class's constraints at one relaxation step (preferences count as required).

    Compared and hashed by identity: caches key on the step, not on its contents."""

    alternatives: list[Requirements]
    tolerations: tuple[Toleration, ...]
    spreads: tuple[SpreadConstraint, ...]
    affinity: tuple[AffinityTerm, ...]
    anti: tuple[AffinityTerm, ...]
    required_anti: tuple[AffinityTerm, ...]

    @property
    def admission(self) -> Admission:
        """What decides whether an existing node's labels and taints admit the class."""
        return Admission(tuple(self.alternatives), self.tolerations)


class Preferences:
    """What is left to relax for a class, in Karpenter's order."""

    def __init__(self, pod: PodView, *, ignore: bool) -> None:
        self.pod = pod
        self.term_offset = 0
        self.pref_affinity = [] if ignore else list(pod.preferred_affinity)
        self.pref_anti = [] if ignore else list(pod.preferred_anti_affinity)
        self.pref_node = [] if ignore else [r for _, r in pod.preferred_node_terms]
        self.anyway = (
            [] if ignore else [s for s in pod.spread if s.when_unsatisfiable != DO_NOT_SCHEDULE]
        )
        self.tolerate_pns = ignore

    def effective(self) -> Constraints:
        """The constraints of the current step: the first required node term left, the first
        preferred node term, and every preference not relaxed yet."""
        pod = self.pod
        terms = list(pod.required_terms[self.term_offset :]) or [Requirements()]
        base = pod.node_selector.union(terms[0])
        if self.pref_node:
            base = base.union(self.pref_node[0])
        vols = list(pod.volume_terms) or [Requirements()]
        alternatives = [base.union(v) for v in vols]
        tolerations = pod.tolerations + ((_PNS,) if self.tolerate_pns else ())
        spreads = tuple(s for s in pod.spread if s.when_unsatisfiable == DO_NOT_SCHEDULE) + tuple(
            self.anyway
        )
        return Constraints(
            alternatives=alternatives,
            tolerations=tolerations,
            spreads=spreads,
            affinity=pod.affinity + tuple(self.pref_affinity),
            anti=pod.anti_affinity + tuple(self.pref_anti),
            required_anti=pod.anti_affinity,
        )

    def relax(self, *, prefer_no_schedule_pools: bool) -> bool:
        """Drop the next preference (the next required node term counts as one); False when
        nothing is left to drop. PreferNoSchedule taints are tolerated last, and only when some
        pool has one."""
        if len(self.pod.required_terms) - self.term_offset > 1:
            self.term_offset += 1
            return True
        if self.pref_affinity:
            self.pref_affinity.pop(0)
            return True
        if self.pref_anti:
            self.pref_anti.pop(0)
            return True
        if self.pref_node:
            self.pref_node.pop(0)
            return True
        if self.anyway:
            self.anyway.pop(0)
            return True
        if prefer_no_schedule_pools and not self.tolerate_pns:
            self.tolerate_pns = True
            return True
        return False
