"""`nodepool.validation`: the rules the CRD cannot express, reported as `ValidationSucceeded`.

A NodePool that fails them stays in the API but is not Ready, so the provisioner skips it; the
condition's message lists every problem with its field path.
"""

from __future__ import annotations

from typing import Final

import pydantic
import structlog

from karpy.apis.v1 import NodePool, runtime_validate
from karpy.apis.v1 import conditions as cond
from karpy.controllers.nodepool.ready import write_ready_dependent
from karpy.kube import Client, Clock, Informer, RealClock, Result
from karpy.kube.builder import Builder

__all__ = ["NAME", "NodePoolValidationController", "validation_errors"]

NAME = "nodepool.validation"
log = structlog.get_logger("karpy.controllers.nodepool.validation")


def validation_errors(obj: dict[str, object]) -> list[str]:
    """Every runtime-validation problem of a raw NodePool; empty when it is valid."""
    try:
        pool = NodePool.model_validate(obj)
    except pydantic.ValidationError as exc:
        return [
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
            for e in exc.errors(include_url=False)
        ]
    return runtime_validate(pool)


class NodePoolValidationController:
    """Sets `ValidationSucceeded` (and re-derives `Ready`) on every NodePool change."""

    name: Final = NAME

    def __init__(self, *, client: Client, nodepools: Informer, clock: Clock | None = None) -> None:
        self.client = client
        self.nodepools = nodepools
        self.clock = clock or RealClock()

    def setup(self, builder: Builder[str]) -> None:
        builder.watches(self.nodepools).workers(10).log_kind("NodePool")

    async def reconcile(self, name: str) -> Result | None:
        pool = self.nodepools.get(name)
        if pool is None:
            return None
        errors = validation_errors(pool)
        return await write_ready_dependent(
            self.client,
            pool,
            type_=cond.NODEPOOL_VALIDATION_SUCCEEDED,
            status=cond.STATUS_FALSE if errors else cond.STATUS_TRUE,
            now=self.clock.wall(),
            reason=cond.REASON_NODEPOOL_VALIDATION_FAILED if errors else None,
            message="; ".join(errors),
        )
