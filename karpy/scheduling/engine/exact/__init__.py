"""Exact planning for small batches: prove the heuristic's plan optimal, or replace it.

`improve(input, heuristic)` builds a MILP of the batch (see `milp.py`) when every constraint
the batch uses is modelled (`problem.py`), prunes dominated purchase options (`prune.py`) and
solves it with HiGHS under deterministic work limits and a time budget (counted from the start
of the heuristic, so the two together stay within it), cut off at the heuristic plan's cost.
The cheaper plan wins (on equal cost, the one with fewer nodes); the result says whether it is
proven optimal and carries the solver's best bound. Pods the heuristic could not place stay
unschedulable (with its reasons); optimality is over plans for the others. Out-of-reach batches
return the heuristic's plan with the reason in `exact`.

Batches it cannot take whole (more than `MAX_PODS` pods, or pods it does not model) get
`repack` instead: the plan's most wasteful new nodes are re-planned exactly in small groups,
replaced only where that is cheaper (`repacking.py`).
"""

from karpy.scheduling.engine.exact.improve import MAX_PODS, TIME_BUDGET, improve
from karpy.scheduling.engine.exact.milp import Budget
from karpy.scheduling.engine.exact.repacking import repack

__all__ = ["MAX_PODS", "TIME_BUDGET", "Budget", "improve", "repack"]
