"""The steps of a node's termination that look at the node itself: taint, drain, volumes.

All reads come from the shared informers (pods by node name, PVCs, VolumeAttachments); the
drain itself only hands pods to the eviction queue, so one pass is cheap and the node loop can
run it every second until the node is empty.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import structlog

from karpy.apis.objects import meta
from karpy.apis.v1 import labels
from karpy.controllers.node.termination.eviction import EvictionQueue
from karpy.controllers.node.termination.pods import (
    current_wave,
    is_drainable,
    is_terminating,
    is_waiting_eviction,
    needs_force_delete,
)
from karpy.kube import INDEX_NODE_NAME, NODES, Client, Informer

__all__ = ["drain", "pending_volume_attachments", "taint_node"]

JSON = dict[str, Any]
log = structlog.get_logger("karpy.controllers.node.termination")

EXCLUDE_LB_VALUE = "karpenter"


def _is_disrupted_taint(taint: Mapping[str, Any]) -> bool:
    return (
        taint.get("key") == labels.TAINT_DISRUPTED_KEY
        and taint.get("effect") == labels.TAINT_EFFECT_NO_SCHEDULE
        and not taint.get("value")
    )


async def taint_node(client: Client, node: Mapping[str, Any]) -> bool:
    """Taint the node `karpenter.sh/disrupted:NoSchedule` and label it out of external load
    balancers (so traffic leaves before the pods do). False if both were already there.

    The taint list is replaced whole, so the patch carries the node's resourceVersion: a stale
    view fails with a conflict instead of dropping a taint someone else added.
    """
    m = meta(node)
    taints = list((node.get("spec") or {}).get("taints") or ())
    tainted = any(_is_disrupted_taint(t) for t in taints)
    labelled = (m.get("labels") or {}).get(labels.LABEL_EXCLUDE_FROM_EXTERNAL_LB) == (
        EXCLUDE_LB_VALUE
    )
    if tainted and labelled:
        return False
    patch: JSON = {
        "metadata": {
            "resourceVersion": m.get("resourceVersion"),
            "labels": {labels.LABEL_EXCLUDE_FROM_EXTERNAL_LB: EXCLUDE_LB_VALUE},
        }
    }
    if not tainted:
        kept = [t for t in taints if t.get("key") != labels.TAINT_DISRUPTED_KEY]
        disrupted = {"key": labels.TAINT_DISRUPTED_KEY, "effect": labels.TAINT_EFFECT_NO_SCHEDULE}
        patch["spec"] = {"taints": [*kept, disrupted]}
    await client.patch(NODES, str(m.get("name")), patch)
    log.info(
        "tainted node",
        **{
            "taint.Key": labels.TAINT_DISRUPTED_KEY,
            "taint.Effect": labels.TAINT_EFFECT_NO_SCHEDULE,
            "taint.Value": "",
        },
    )
    return True


def drain(
    node_name: str,
    *,
    pods: Informer,
    queue: EvictionQueue,
    deadline: datetime | None,
    reason: str,
    now: datetime,
) -> int:
    """One drain pass: queue what may go now and return how many pods the drain still waits for.

    Pods whose grace period no longer fits before `deadline` are queued whatever their tier
    (the queue deletes them). Of the rest, only the first tier that still has a pod on the node
    is queued: a tier's pods already terminating keep the next tier waiting until they are gone
    (not merely evicted), so DaemonSet and critical pods outlive the workloads before them.
    """
    waiting = [p for p in pods.by_index(INDEX_NODE_NAME, node_name) if is_waiting_eviction(p, now)]
    if deadline is not None:
        expiring = [p for p in waiting if needs_force_delete(p, deadline, now)]
        if expiring:
            queue.add(expiring, deadline=deadline, reason=reason)
    wave = current_wave(waiting)
    queue.add([p for p in wave if not is_terminating(p)], deadline=deadline, reason=reason)
    return len(waiting)


def _claim_names(pod: Mapping[str, Any]) -> list[str]:
    """PVC names a pod mounts: its persistentVolumeClaim volumes and generic ephemeral volumes
    (whose claim is named `<pod>-<volume>`)."""
    names: list[str] = []
    pod_name = meta(pod).get("name", "")
    for volume in (pod.get("spec") or {}).get("volumes") or ():
        if not isinstance(volume, Mapping):
            continue
        claim = volume.get("persistentVolumeClaim")
        if isinstance(claim, Mapping) and claim.get("claimName"):
            names.append(str(claim["claimName"]))
        elif volume.get("ephemeral") is not None and volume.get("name"):
            names.append(f"{pod_name}-{volume['name']}")
    return names


def pending_volume_attachments(
    node_name: str,
    *,
    pods: Informer,
    claims: Informer,
    attachments: Informer,
    now: datetime,
) -> list[str]:
    """Names of the node's VolumeAttachments termination must wait for: those of persistent
    volumes, except volumes of pods the drain does not wait for (they would never detach)."""
    found = [va for va in attachments.list() if (va.get("spec") or {}).get("nodeName") == node_name]
    if not found:
        return []
    kept_volumes: set[str] = set()
    for pod in pods.by_index(INDEX_NODE_NAME, node_name):
        if is_drainable(pod, now):
            continue
        namespace = meta(pod).get("namespace", "")
        for claim_name in _claim_names(pod):
            claim = claims.get(f"{namespace}/{claim_name}")
            volume = ((claim or {}).get("spec") or {}).get("volumeName")
            if volume:
                kept_volumes.add(str(volume))
    pending: list[str] = []
    for va in found:
        volume = ((va.get("spec") or {}).get("source") or {}).get("persistentVolumeName")
        if volume and volume not in kept_volumes:
            pending.append(str(meta(va).get("name", "")))
    return sorted(pending)
