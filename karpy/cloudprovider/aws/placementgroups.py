"""Placement groups (`spec.placementGroupSelector`, Karpenter v1.11): the one group a class
launches into, found by name or id with `DescribePlacementGroups` (state `available`).

Both the EC2NodeClass controller (its `PlacementGroupReady` condition) and the launch path (the
launch template's `Placement`, the node's `placement-group-id` label) ask the same provider, so
one answer serves them for a minute, as Karpenter's placement-group cache does. A group EC2 does
not know is an answer (`None`), not an error: the class is not Ready with
`PlacementGroupNotFound`, and nothing launches with it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final

from karpy.apis.aws.v1.ec2nodeclass import PlacementGroupSelector
from karpy.cloudprovider.aws.clients import AWSClients
from karpy.cloudprovider.aws.errors import ClientError, error_code

__all__ = [
    "NOT_FOUND_CODES",
    "PLACEMENT_GROUP_TTL",
    "PlacementGroup",
    "PlacementGroups",
    "selector_text",
]

PLACEMENT_GROUP_TTL: Final = timedelta(minutes=1)
NOT_FOUND_CODES: Final = frozenset(
    {
        "InvalidPlacementGroup.Unknown",
        "InvalidPlacementGroupId.NotFound",
        "InvalidPlacementGroupId.Malformed",
    }
)
"""What EC2 answers for a name or id it has no group of (a malformed id cannot exist)."""


@dataclass(frozen=True)
class PlacementGroup:
    """A resolved placement group."""

    id: str
    name: str
    strategy: str
    """`cluster`, `partition` or `spread`."""
    state: str
    partition_count: int | None = None


def selector_text(selector: PlacementGroupSelector) -> str:
    """How a condition message names the selector: `name "x"` or `id "pg-…"`."""
    return f'name "{selector.name}"' if selector.name else f'id "{selector.id}"'


def _group(raw: Mapping[str, Any]) -> PlacementGroup:
    count = raw.get("PartitionCount")
    return PlacementGroup(
        id=str(raw.get("GroupId") or ""),
        name=str(raw.get("GroupName") or ""),
        strategy=str(raw.get("Strategy") or ""),
        state=str(raw.get("State") or ""),
        partition_count=int(count) if count else None,
    )


class PlacementGroups:
    """Looks placement groups up by selector, each answer kept for `ttl`."""

    def __init__(
        self,
        clients: AWSClients,
        *,
        ttl: timedelta = PLACEMENT_GROUP_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clients = clients
        self._ttl = ttl.total_seconds()
        self._clock = clock
        self._cache: dict[tuple[str | None, str | None], tuple[float, PlacementGroup | None]] = {}
        self._lock = asyncio.Lock()

    async def get(self, selector: PlacementGroupSelector) -> PlacementGroup | None:
        """The group the selector names, or None when EC2 has no such group. Other API
        errors are raised (`ClientError`)."""
        key = (selector.id, selector.name)
        async with self._lock:
            cached = self._cache.get(key)
            if cached is not None and self._clock() - cached[0] < self._ttl:
                return cached[1]
            found = await self._describe(selector)
            self._cache[key] = (self._clock(), found)
            return found

    async def _describe(self, selector: PlacementGroupSelector) -> PlacementGroup | None:
        kwargs: dict[str, Any] = {}
        if selector.id:
            kwargs["GroupIds"] = [selector.id]
        else:
            kwargs["GroupNames"] = [selector.name]
        async with self._clients.client("ec2") as ec2:
            try:
                response = await ec2.describe_placement_groups(**kwargs)
            except ClientError as error:
                if error_code(error) in NOT_FOUND_CODES:
                    return None
                raise
        groups = [_group(g) for g in response.get("PlacementGroups") or ()]
        return groups[0] if groups else None
