"""Several independent consolidation commands from one pass.

One command per pass costs a validation delay (15 s) and a whole new search per command; on a
cluster where a replacement may absorb only a few nodes (a NodePool capped under a size), the
rounds add up to many minutes. So one pass looks for more: after each command it finds, the
search goes on over the cluster *as that command leaves it* (`apply`: its candidates gone, the
pods it moves onto other nodes placed there), with the budgets it spent taken off, and neither
its candidates nor the nodes it moves pods onto offered as candidates again. So no command
deletes a node another one counts on, and no two commands count on the same room.

Validation re-simulates the commands in order on today's cluster with every command's candidates
tainted as the queue will taint them (`reserve`), each on the cluster the earlier ones that still
hold leave (`apply` again): a command is dropped alone when it no longer holds, or when an
earlier one now moves pods onto its nodes.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Final

from karpy.apis.v1.labels import TAINT_DISRUPTED_KEY
from karpy.controllers.disruption.consolidation.candidates import ConsolidationCandidate
from karpy.controllers.disruption.consolidation.search import SearchStats, multi_node, single_node
from karpy.controllers.disruption.consolidation.simulation import REPLACEMENT, Decision
from karpy.controllers.disruption.consolidation.snapshot import Snapshot
from karpy.scheduling.engine import ExistingNode
from karpy.scheduling.pods import PodView
from karpy.scheduling.resources import CPU, ResourceMap
from karpy.scheduling.taints import Taint

__all__ = [
    "MAX_COMMANDS_PER_PASS",
    "Search",
    "apply",
    "destinations",
    "independent",
    "multi_node_search",
    "reserve",
    "single_node_search",
]

MAX_COMMANDS_PER_PASS: Final = 16
"""How many commands one pass may find: each costs a search of its own, and a pass holds the
loop until it is validated."""

DISRUPTED: Final = Taint(key=TAINT_DISRUPTED_KEY, effect="NoSchedule")

Search = Callable[
    [Snapshot, Sequence[ConsolidationCandidate], Mapping[str, int], float],
    tuple[Decision | None, SearchStats],
]
"""(snapshot, candidates, budgets, seconds left) -> the best command and what the search did."""


def multi_node_search(
    snapshot: Snapshot,
    candidates: Sequence[ConsolidationCandidate],
    budgets: Mapping[str, int],
    timeout: float,
) -> tuple[Decision | None, SearchStats]:
    """Multi-node consolidation's `Search`: the best command taking two or more nodes."""
    return multi_node(snapshot, candidates, budgets=budgets, timeout=timeout)


def single_node_search(
    snapshot: Snapshot,
    candidates: Sequence[ConsolidationCandidate],
    budgets: Mapping[str, int],
    timeout: float,
) -> tuple[Decision | None, SearchStats]:
    """Single-node consolidation's `Search`: the first candidate that consolidates alone."""
    found, stats = single_node(snapshot, candidates, budgets=budgets, timeout=timeout)
    return (found[0] if found else None), stats


def destinations(decision: Decision) -> frozenset[str]:
    """The existing nodes (by name) the command moves pods onto."""
    return frozenset(node for node in decision.moves.values() if node != REPLACEMENT)


def _free(e: ExistingNode) -> ResourceMap:
    used: ResourceMap = {}
    for p in e.pods:
        for k, v in p.requests.items():
            used[k] = used.get(k, 0) + v
    return {k: max(0, v - used.get(k, 0)) for k, v in e.allocatable.items()}


def _rebuilt(
    snapshot: Snapshot,
    existing: list[ExistingNode],
    *,
    closed: Iterable[str] = (),
    changed: Iterable[str] = (),
) -> Snapshot:
    """`snapshot` on these existing nodes, its free-room index following: nodes in `closed`
    take no pods and leave the index, nodes in `changed` have their room counted again."""
    shut = set(closed)
    by_name = {e.name: e for e in existing}
    free = {
        name: room for name, room in snapshot.free.items() if name in by_name and name not in shut
    }
    for name in set(changed) & set(free):
        free[name] = _free(by_name[name])
    return dataclasses.replace(
        snapshot,
        base=dataclasses.replace(snapshot.base, existing_nodes=existing),
        existing=by_name,
        free=free,
        roomiest=tuple(sorted(free, key=lambda n: (-free[n].get(CPU, 0), n))),
    )


def apply(snapshot: Snapshot, decision: Decision) -> Snapshot:
    """The cluster as `decision` leaves it: its candidates gone, the pods it moves onto existing
    nodes placed there (they take that room and count in those nodes' topology). Pods going to
    the replacement leave the picture: the replacement is not offered to other commands."""
    gone = {c.name for c in decision.candidates}
    views: dict[str, PodView] = {}
    for c in decision.candidates:
        for v in snapshot.moving_views(c.pods):
            views[v.key] = v
    arriving: dict[str, list[PodView]] = {}
    for key, node in decision.moves.items():
        if node != REPLACEMENT and key in views:
            arriving.setdefault(node, []).append(views[key])
    existing = [
        dataclasses.replace(e, pods=[*e.pods, *arriving[e.name]]) if e.name in arriving else e
        for e in snapshot.base.existing_nodes
        if e.name not in gone
    ]
    return _rebuilt(snapshot, existing, changed=arriving)


def reserve(snapshot: Snapshot, names: Iterable[str]) -> Snapshot:
    """`snapshot` with these nodes tainted `karpenter.sh/disrupted:NoSchedule`, as the queue
    taints a command's candidates: other commands' pods may not land there."""
    marked = set(names)
    existing = [
        dataclasses.replace(e, taints=(*e.taints, DISRUPTED))
        if e.name in marked and DISRUPTED not in e.taints
        else e
        for e in snapshot.base.existing_nodes
    ]
    return _rebuilt(snapshot, existing, closed=marked)


def _merge(total: SearchStats, part: SearchStats) -> None:
    total.simulations += part.simulations
    total.pruned += part.pruned
    total.considered = max(total.considered, part.considered)
    total.timed_out = total.timed_out or part.timed_out
    for key, why in part.unconsolidatable.items():
        total.unconsolidatable.setdefault(key, why)
    for key, word in part.blockers.items():
        total.blockers.setdefault(key, word)


def independent(
    snapshot: Snapshot,
    candidates: Sequence[ConsolidationCandidate],
    budgets: Mapping[str, int],
    search: Search,
    *,
    timeout: float,
    limit: int = MAX_COMMANDS_PER_PASS,
    clock: Callable[[], float] = time.perf_counter,
) -> tuple[list[Decision], SearchStats]:
    """Commands with disjoint candidates and destinations, found one after the other by
    `search`, each on the cluster the earlier ones leave, within `budgets` all together and
    `timeout` seconds all together. A candidate a search found unconsolidatable on its own is
    not offered again (less room never makes it consolidatable)."""
    stats = SearchStats()
    start = clock()
    left = dict(budgets)
    closed: set[str] = set()
    found: list[Decision] = []
    snap = snapshot
    while len(found) < limit:
        remaining = timeout - (clock() - start)
        if remaining <= 0:
            stats.timed_out = True
            break
        pool = [c for c in candidates if c.name not in closed and c.key not in closed]
        decision, part = search(snap, pool, left, remaining)
        _merge(stats, part)
        closed.update(part.unconsolidatable)
        if decision is None:
            break
        found.append(decision)
        for c in decision.candidates:
            left[c.nodepool] = left.get(c.nodepool, 0) - 1
            closed.update((c.name, c.key))
        closed.update(destinations(decision))
        if part.timed_out:
            break
        snap = apply(snap, decision)
    stats.seconds = clock() - start
    return found, stats
