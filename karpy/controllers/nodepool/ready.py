"""A NodePool's `Ready`: set one of the conditions it derives from, derive it again, write both."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from karpy.apis.conditions import Conditions
from karpy.apis.descriptors import NODEPOOLS
from karpy.apis.v1 import conditions as cond
from karpy.controllers.common.status import write_conditions
from karpy.kube import Client, Result

__all__ = ["write_ready_dependent"]


async def write_ready_dependent(
    client: Client,
    pool: Mapping[str, Any],
    *,
    type_: str,
    status: str,
    now: datetime,
    reason: str | None = None,
    message: str = "",
) -> Result | None:
    """Set `type_` (validation or NodeClass readiness), derive `Ready` again, and write them if
    they changed (see `write_conditions`)."""
    conditions = Conditions.of(pool, now=now, dependents=cond.NODEPOOL_READY_DEPENDENTS)
    conditions.set(type_, status, reason=reason, message=message)
    conditions.compute_root()
    return await write_conditions(client, resource=NODEPOOLS, obj=pool, conditions=conditions)
