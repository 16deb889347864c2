"""`schedulingconfig.status`: which NodePools a SchedulingConfig applies to, and whether it is
valid (`ValidationSucceeded`, rolled up into `Ready`), with the generation it was computed from.

A config that matches no NodePool is not an error: its `nodePools` is empty and it stays Ready.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import pydantic

from karpy.apis.conditions import Conditions
from karpy.apis.descriptors import SCHEDULINGCONFIGS
from karpy.apis.objects import is_deleting
from karpy.apis.v1 import SchedulingConfig, runtime_validate_config
from karpy.apis.v1 import conditions as cond
from karpy.controllers.common.status import generation_of, write_conditions
from karpy.kube import Client, Clock, Informer, RealClock, Result
from karpy.kube.builder import Builder
from karpy.state.inputs import guardrails, nodepool_nodeclass

__all__ = ["NAME", "SchedulingConfigStatusController", "config_errors", "nodepools_of"]

NAME = "schedulingconfig.status"
JSON = dict[str, Any]


def config_errors(obj: Mapping[str, Any]) -> list[str]:
    """Every problem of a raw SchedulingConfig the CRD does not catch; empty when valid."""
    try:
        config = SchedulingConfig.model_validate(obj)
    except pydantic.ValidationError as exc:
        return [
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
            for e in exc.errors(include_url=False)
        ]
    return runtime_validate_config(config)


def nodepools_of(config: Mapping[str, Any], nodepools: Informer) -> list[str]:
    """The names of the (live) NodePools `config` applies to, sorted."""
    (rail,) = guardrails([config])
    return sorted(
        str((p.get("metadata") or {}).get("name") or "")
        for p in nodepools.list()
        if not is_deleting(p) and rail.applies_to(nodepool_nodeclass(p))
    )


class SchedulingConfigStatusController:
    """Writes a SchedulingConfig's status when it or any NodePool changes."""

    name: Final = NAME

    def __init__(
        self,
        *,
        client: Client,
        configs: Informer,
        nodepools: Informer,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.configs = configs
        self.nodepools = nodepools
        self.clock = clock or RealClock()

    def setup(self, builder: Builder[str]) -> None:
        builder.watches(self.configs).workers(2).log_kind("SchedulingConfig")
        builder.watches(self.nodepools, mapper=lambda _pool: self._all())

    def _all(self) -> list[str]:
        return [str((c.get("metadata") or {}).get("name") or "") for c in self.configs.list()]

    async def reconcile(self, name: str) -> Result | None:
        config = self.configs.get(name)
        if config is None:
            return None
        errors = config_errors(config)
        try:
            pools = nodepools_of(config, self.nodepools)
        except ValueError as err:
            errors.append(str(err))
            pools = []
        conditions = Conditions.of(
            config, now=self.clock.wall(), dependents=cond.SCHEDULINGCONFIG_READY_DEPENDENTS
        )
        if errors:
            conditions.set_false(
                cond.SCHEDULINGCONFIG_VALIDATION_SUCCEEDED,
                reason=cond.REASON_SCHEDULINGCONFIG_VALIDATION_FAILED,
                message="; ".join(errors),
            )
        else:
            conditions.set_true(cond.SCHEDULINGCONFIG_VALIDATION_SUCCEEDED)
        conditions.compute_root()
        extra: JSON = {"nodePools": pools}
        generation = generation_of(config)
        if generation is not None:
            extra["observedGeneration"] = generation
        return await write_conditions(
            self.client, resource=SCHEDULINGCONFIGS, obj=config, conditions=conditions, extra=extra
        )
