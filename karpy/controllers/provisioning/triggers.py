"""What starts a provisioning batch: pods kube-scheduler gave up on, and nodes being drained.

`provisioner.trigger.pod` watches pods; a provisionable one triggers the batcher and is looked
at again every 10 s while it stays provisionable (so a pod that could not be placed is retried).
A pod whose capacity is already on its way (planned onto a NodeClaim or a node that has not
registered yet) does not trigger: kube-scheduler tries such pods again and again while the new
nodes come up, and each try would hold the next batch open until `BATCH_MAX_DURATION`.
`provisioner.trigger.node` does the same for nodes tainted `karpenter.sh/disrupted:NoSchedule`,
so the pods of draining nodes get new capacity ahead of their eviction.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from karpy.apis.v1 import labels
from karpy.controllers.provisioning.batcher import Batcher
from karpy.kube.clock import Clock
from karpy.kube.controller import Controller, Result
from karpy.kube.informer import Informer
from karpy.state import pods as podutil

__all__ = ["RETRIGGER_SECONDS", "is_disrupted", "node_trigger", "pod_trigger"]

RETRIGGER_SECONDS = 10.0


def is_disrupted(node: Mapping[str, Any]) -> bool:
    return any(
        t.get("key") == labels.TAINT_DISRUPTED_KEY
        and t.get("effect") == labels.TAINT_EFFECT_NO_SCHEDULE
        for t in (node.get("spec") or {}).get("taints") or ()
    )


def pod_trigger(
    *,
    pods: Informer,
    batcher: Batcher,
    clock: Clock,
    capacity_coming: Callable[[str], bool] = lambda _key: False,
    workers: int = 10,
) -> Controller[str]:
    async def reconcile(key: str) -> Result | None:
        pod = pods.get(key)
        if pod is None or not podutil.is_provisionable(pod):
            return None
        if not capacity_coming(key):
            batcher.trigger(podutil.pod_uid(pod) or key)
        return Result(requeue_after=RETRIGGER_SECONDS)

    controller = Controller[str](
        name="provisioner.trigger.pod",
        reconcile=reconcile,
        workers=workers,
        clock=clock,
        log_kind="Pod",
    )
    controller.watch(pods, predicate=podutil.is_provisionable)
    return controller


def node_trigger(*, nodes: Informer, batcher: Batcher, clock: Clock) -> Controller[str]:
    async def reconcile(key: str) -> Result | None:
        node = nodes.get(key)
        if node is None or not is_disrupted(node):
            return None
        batcher.trigger(str((node.get("metadata") or {}).get("uid") or key))
        return Result(requeue_after=RETRIGGER_SECONDS)

    controller = Controller[str](
        name="provisioner.trigger.node",
        reconcile=reconcile,
        workers=2,
        clock=clock,
        log_kind="Node",
    )
    controller.watch(nodes, predicate=is_disrupted)
    return controller
