"""The NodeOverlays a provider applies at launch, so it buys what the scheduler planned.

The scheduler chose a NodeClaim's instance types at the overlays' prices and capacities; a
provider that launched from the plain catalogue would pick the cheapest type at list price, not
the one the overlay made cheaper. Every provider reads the overlays here (the NodeOverlay
controller's verdict included), and none repeats the overlay arithmetic.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from karpy.apis.objects import JSON
from karpy.apis.v1 import NodeClaim, conditions, labels
from karpy.scheduling.instancetypes import InstanceType
from karpy.scheduling.overlays import Pool, apply_overlays, overlays_of

__all__ = ["MAX_REMEMBERED", "LaunchOverlays", "OverlaySource", "overlay_rejected"]

MAX_REMEMBERED: Final = 32

OverlaySource = Callable[[], Sequence[JSON]]
"""The NodeOverlay objects in the cluster (in `karpy run`, an informer's `list`)."""

_Key = tuple[int, str, frozenset[tuple[str, str]], tuple[tuple[str, str], ...]]


def overlay_rejected(overlay: Mapping[str, Any]) -> bool:
    """The NodeOverlay controller reported the overlay invalid or conflicting."""
    for c in (overlay.get("status") or {}).get("conditions") or ():
        if c.get("type") == conditions.NODEOVERLAY_VALIDATION_SUCCEEDED:
            return bool(c.get("status") == "False")
    return False


class LaunchOverlays:
    """A claim's instance types through the NodeOverlays in effect (none without a source,
    that is without the NodeOverlay feature gate). The same types, claim labels and overlay
    versions give the same list object, so callers that cache by list identity keep hitting."""

    def __init__(self, source: OverlaySource | None) -> None:
        self.source = source
        self._seen: OrderedDict[_Key, tuple[Sequence[InstanceType], list[InstanceType]]] = (
            OrderedDict()
        )

    def apply(self, claim: NodeClaim, types: Sequence[InstanceType]) -> Sequence[InstanceType]:
        objs = self.source() if self.source is not None else []
        objs = [o for o in objs if not overlay_rejected(o)]
        if not objs:
            return types
        claim_labels = dict(claim.metadata.labels or {})
        pool = claim_labels.get(labels.LABEL_NODEPOOL, "")
        versions = tuple(
            sorted(
                (str(meta.get("name")), str(meta.get("resourceVersion")))
                for meta in ((o.get("metadata") or {}) for o in objs)
            )
        )
        key: _Key = (id(types), pool, frozenset(claim_labels.items()), versions)
        entry = self._seen.get(key)
        # The entry keeps its input list alive, so a matching id is the same list.
        if entry is not None and entry[0] is types:
            self._seen.move_to_end(key)
            return entry[1]
        readable, _ = overlays_of(objs)
        result = apply_overlays([Pool(pool, claim_labels, types)], readable)
        overlaid = result.types.get(pool, list(types))
        self._seen[key] = (types, overlaid)
        while len(self._seen) > MAX_REMEMBERED:
            self._seen.popitem(last=False)
        return overlaid
