"""Prices and the plan lower bound for `karpy top`, both CPU work kept off the UI's loop.

Prices come from karpy's catalogues: the kwok catalogue (small, always read) and the shipped
EC2 snapshots of the nodes' regions, read only when a node's instance type is not a kwok one.
The lower bound is the one `karpy simulate --disruption --from-cluster` reports for a fresh
placement of the pods, computed by the same replay on the same objects, here for the pods
running now (bound to a node and active; pending pods are left out)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from karpy.scheduling import CatalogError
from karpy.simulation.catalogchoice import choose_catalog, load_catalog
from karpy.simulation.disruption import Replay
from karpy.simulation.live import KINDS, nodeclass_kinds, objects_from_cluster
from karpy.state import pods as podutil
from karpy.top.model import PriceBook

__all__ = ["WATCHED", "lower_bound", "price_book"]

JSON = dict[str, Any]

WATCHED = tuple(k.plural for k in KINDS)
"""Kind plurals `karpy top` watches: those the lower bound's replay reads."""


_REGION = re.compile(r"^([a-z]{2}(?:-gov)?-[a-z]+-\d+)[a-z]$")
"""An AWS availability zone name (`us-west-2b`) and its region."""


def price_book(instance_types: Iterable[str], zones: Iterable[str] = ()) -> PriceBook:
    """A price book that knows every named instance type karpy has a price for: the kwok
    catalogue, and when a type is not a kwok one the EC2 snapshots of the regions the zones
    are in (us-east-1's when none of them has a shipped snapshot)."""
    book = PriceBook(load_catalog(None, aws=False))
    if all(not name or book.knows(name) for name in instance_types):
        return book
    from karpy.cloudprovider.aws.snapshot import (
        DEFAULT_SNAPSHOT_REGION,
        load_snapshot,
        snapshot_regions,
    )

    shipped = set(snapshot_regions())
    regions = {m[1] for z in zones if (m := _REGION.match(z)) and m[1] in shipped}
    for region in sorted(regions or {DEFAULT_SNAPSHOT_REGION}):
        book.add(load_snapshot(region))
    return book


def lower_bound(listed: Mapping[str, list[JSON]]) -> tuple[float | None, str | None]:
    """(hourly lower bound of any placement of the running pods, None) or (None, why not)."""
    full = {k: list(listed.get(k, ())) for k in WATCHED}
    try:
        types = choose_catalog(None, nodeclass_kinds(full))
    except CatalogError as err:
        return None, str(err)
    warnings: list[str] = []
    objects = objects_from_cluster(full, instance_types=types, warnings=warnings)
    if not objects.templates:
        return None, "no NodePool karpy can plan with"
    running = [p for p in objects.pods if podutil.node_name(p)]
    replay = Replay(
        nodepools=objects.nodepools,
        templates=objects.templates,
        nodes=(),
        nodeclaims=(),
        pods=running,
        daemonsets=objects.daemonsets,
        namespaces=objects.namespaces,
        configs=objects.configs,
        nodeclasses=objects.nodeclasses,
        overlays=objects.overlays,
        buffers=objects.buffers,
        pod_templates=objects.pod_templates,
        limit_ranges=objects.limit_ranges,
    )
    _, bound = replay.fresh()
    return bound, None
