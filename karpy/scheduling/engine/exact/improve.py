"""The exact planner's entry point: prove a heuristic plan optimal, or replace it."""

from __future__ import annotations

import dataclasses
import time

from karpy.scheduling.engine.exact.existing_first import existing_first
from karpy.scheduling.engine.exact.milp import (
    NODE_EPSILON,
    WORK_LIMITS,
    Budget,
    Limits,
    slot_count,
    solve,
)
from karpy.scheduling.engine.exact.milp import clock as time_clock
from karpy.scheduling.engine.exact.patterns import solve_patterns
from karpy.scheduling.engine.exact.plan import to_result
from karpy.scheduling.engine.exact.problem import build
from karpy.scheduling.engine.exact.prune import prune
from karpy.scheduling.engine.model import SchedulingInput, SchedulingResult

__all__ = ["MAX_PODS", "MIN_SECONDS", "TIME_BUDGET", "improve"]

# Batches up to this many pending pods are planned exactly; larger ones keep the heuristic.
MAX_PODS = 64
# CPU seconds (see `milp.clock`) for the heuristic and the exact planner together.
TIME_BUDGET = 0.2


def _mark(result: SchedulingResult, **changes: object) -> SchedulingResult:
    return dataclasses.replace(result, **changes)  # type: ignore[arg-type]


# CPU seconds the exact planner gets however long the heuristic took: whether it runs, and
# so the plan, never depends on the heuristic's time (the work limits end most searches first).
MIN_SECONDS = 0.05


def improve(
    inp: SchedulingInput,
    heuristic: SchedulingResult,
    *,
    budget: float = TIME_BUDGET,
    started: Budget | None = None,
    limits: Limits = WORK_LIMITS,
) -> SchedulingResult:
    """The cheaper of the heuristic's plan and the exact one, with optimality and bound.
    `started` (a budget started before the heuristic ran) overrides `budget`, CPU seconds
    from now; `limits` are the search's deterministic work limits."""
    start = time.perf_counter()
    clock = started if started is not None else Budget.start(budget)
    floor = time_clock() + MIN_SECONDS
    if clock.deadline < floor:
        clock = dataclasses.replace(clock, deadline=floor)
    if not inp.pods:
        return _mark(heuristic, optimal=True, best_bound=0.0, exact="no pods")
    if len(inp.pods) > MAX_PODS:
        return _mark(heuristic, exact=f"batch larger than {MAX_PODS} pods")
    if heuristic.cost <= 0:
        return _mark(heuristic, optimal=True, best_bound=0.0, exact="no new nodes")
    problem = build(inp, heuristic)
    if isinstance(problem, str):
        return _mark(heuristic, exact=f"not modelled: {problem}")
    zonal = frozenset(ci for ci, c in enumerate(problem.classes) if c.zonal is not None)
    options = prune(problem.options, problem.pool_left, zonal)
    nodes = len(heuristic.node_claims)
    cutoff = heuristic.cost + NODE_EPSILON * nodes + 1e-9
    by_patterns = solve_patterns(problem, options, cutoff, clock, limits)
    if not isinstance(by_patterns, str):
        sol, slots = by_patterns, sum(len(c.pods) for c in problem.classes)
    elif any(c.clash or c.zonal for c in problem.classes):
        return _mark(
            heuristic,
            exact="not modelled: anti-affinity between classes or zonal spread, listing"
            f" stopped ({by_patterns})",
        )
    else:
        sol = solve(problem, options, cutoff, clock, limits)
        slots = slot_count(problem, options, cutoff)
    sol = existing_first(problem, sol)
    bound = max(0.0, sol.bound - NODE_EPSILON * slots)
    elapsed = time.perf_counter() - start
    found = to_result(inp, problem, sol, heuristic) if sol.nodes or sol.existing else None
    best = heuristic
    if found is not None and (
        found.cost + NODE_EPSILON * len(found.node_claims) < heuristic.cost + NODE_EPSILON * nodes
    ):
        best = found
    optimal = sol.optimal and (found is not None or not (sol.nodes or sol.existing))
    # Proven optimal: the bound is the cost (what is left is the per-node epsilon).
    bound = best.cost if optimal else min(bound, best.cost)
    return _mark(
        best,
        optimal=optimal,
        best_bound=bound,
        lower_bound=max(heuristic.lower_bound, bound),
        seconds=heuristic.seconds + elapsed,
        exact=sol.status,
    )
