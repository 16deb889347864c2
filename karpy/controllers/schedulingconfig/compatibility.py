"""`nodepool.schedulingconfig`: does a NodePool still have nodes to offer under the
SchedulingConfigs that apply to it (`SchedulingConfigCompatible`)?

False names each config and key that leaves no value (the provisioner leaves such a NodePool
out of its plans, as `karpy simulate` does). The condition exists only while some config
applies, so a cluster without configs sees no change to its NodePools.
"""

from __future__ import annotations

from typing import Final

from karpy.apis.conditions import Conditions
from karpy.apis.descriptors import NODEPOOLS
from karpy.apis.v1 import conditions as cond
from karpy.controllers.common.status import write_conditions
from karpy.kube import Client, Clock, Informer, RealClock, Result
from karpy.kube.builder import Builder
from karpy.scheduling.engine.model import NodePoolTemplate
from karpy.state.inputs import conflicts, guardrails, nodepool_nodeclass

__all__ = ["NAME", "NodePoolSchedulingConfigController"]

NAME = "nodepool.schedulingconfig"


class NodePoolSchedulingConfigController:
    """Sets or clears `SchedulingConfigCompatible` when a NodePool or a config changes."""

    name: Final = NAME

    def __init__(
        self,
        *,
        client: Client,
        nodepools: Informer,
        configs: Informer,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.nodepools = nodepools
        self.configs = configs
        self.clock = clock or RealClock()

    def setup(self, builder: Builder[str]) -> None:
        builder.watches(self.nodepools).workers(2).log_kind("NodePool")
        builder.watches(self.configs, mapper=lambda _config: self._all())

    def _all(self) -> list[str]:
        return [str((p.get("metadata") or {}).get("name") or "") for p in self.nodepools.list()]

    async def reconcile(self, name: str) -> Result | None:
        pool = self.nodepools.get(name)
        if pool is None:
            return None
        conditions = Conditions.of(pool, now=self.clock.wall())
        nodeclass = nodepool_nodeclass(pool)
        try:
            rails = [r for r in guardrails(self.configs.list()) if r.applies_to(nodeclass)]
            requirements = NodePoolTemplate.from_nodepool(pool, ()).node_requirements
        except ValueError:
            return None  # unreadable: the validation controllers report it
        type_ = cond.NODEPOOL_SCHEDULING_CONFIG_COMPATIBLE
        if not rails:
            conditions.remove(type_)
        else:
            found = conflicts(requirements, nodeclass, rails)
            if found:
                conditions.set_false(
                    type_,
                    reason=cond.REASON_SCHEDULING_CONFIG_CONFLICT,
                    message="; ".join(c.message() for c in found),
                )
            else:
                names = ", ".join(r.name for r in rails)
                conditions.set_true(type_, message=f"SchedulingConfigs applied: {names}")
        return await write_conditions(
            self.client, resource=NODEPOOLS, obj=pool, conditions=conditions
        )
