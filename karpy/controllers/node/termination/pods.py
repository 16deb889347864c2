"""Which pods a drain waits for, which it may evict, and in what order.

The rules are Karpenter's (`pkg/utils/pod`), applied to the trimmed pod dicts of the shared
informer:

- *drainable*: the drain waits for it — it does not tolerate `karpenter.sh/disrupted:NoSchedule`
  (such pods would only land on the node again), is not a mirror pod (the kubelet owns it), and
  is not stuck terminating (more than a minute past its deletionTimestamp: its kubelet is gone);
- *waiting eviction*: drainable and not terminal (Succeeded/Failed pods hold nothing);
- *evictable*: waiting eviction, not already terminating, and without an active
  `karpenter.sh/do-not-disrupt` (those are waited for but never evicted by karpy).

Pods are drained in four tiers, so that node agents and critical pods outlive the workloads
that rely on them: non-critical non-DaemonSet, non-critical DaemonSet, critical non-DaemonSet,
critical DaemonSet (critical = priority class `system-cluster-critical` or
`system-node-critical`). A tier is evicted only once every pod of the tiers before it is gone
from the node: a pod that is terminating still holds the next tier back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, Final

from karpy.apis.duration import DurationError, parse_duration
from karpy.apis.objects import is_deleting, meta, parse_time
from karpy.apis.v1 import labels
from karpy.scheduling.taints import Taint, TaintError, Toleration

__all__ = [
    "STUCK_TERMINATING_AFTER",
    "current_wave",
    "drain_tiers",
    "has_do_not_disrupt",
    "is_critical",
    "is_drainable",
    "is_evictable",
    "is_owned_by_daemonset",
    "is_owned_by_node",
    "is_terminal",
    "is_terminating",
    "is_waiting_eviction",
    "needs_force_delete",
    "pod_grace_seconds",
    "tolerates_disrupted_taint",
]

JSON = dict[str, Any]
Pod = Mapping[str, Any]

STUCK_TERMINATING_AFTER: Final = timedelta(minutes=1)
DISRUPTED_TAINT: Final = Taint(
    key=labels.TAINT_DISRUPTED_KEY, effect=labels.TAINT_EFFECT_NO_SCHEDULE
)
DEFAULT_POD_GRACE_SECONDS: Final = 30


def is_terminal(pod: Pod) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def is_terminating(pod: Pod) -> bool:
    return is_deleting(pod)


def is_stuck_terminating(pod: Pod, now: datetime) -> bool:
    deleted_at = parse_time(meta(pod).get("deletionTimestamp"))
    return deleted_at is not None and now - deleted_at > STUCK_TERMINATING_AFTER


def _owned_by(pod: Pod, api_version: str, kind: str) -> bool:
    return any(
        isinstance(ref, Mapping)
        and ref.get("apiVersion") == api_version
        and ref.get("kind") == kind
        for ref in meta(pod).get("ownerReferences") or ()
    )


def is_owned_by_node(pod: Pod) -> bool:
    """A mirror (static) pod: the kubelet owns it and the API cannot evict it."""
    return _owned_by(pod, "v1", "Node")


def is_owned_by_daemonset(pod: Pod) -> bool:
    return _owned_by(pod, "apps/v1", "DaemonSet")


def is_critical(pod: Pod) -> bool:
    return (pod.get("spec") or {}).get("priorityClassName") in labels.CRITICAL_PRIORITY_CLASSES


def tolerates_disrupted_taint(pod: Pod) -> bool:
    """The pod tolerates `karpenter.sh/disrupted:NoSchedule` (malformed tolerations do not)."""
    tolerations: list[Toleration] = []
    for raw in (pod.get("spec") or {}).get("tolerations") or ():
        if not isinstance(raw, Mapping):
            continue
        try:
            tolerations.append(Toleration.from_dict(raw))
        except TaintError:
            continue
    return any(t.tolerates(DISRUPTED_TAINT) for t in tolerations)


def has_do_not_disrupt(pod: Pod, now: datetime) -> bool:
    """`karpenter.sh/do-not-disrupt` is active: `"true"`, or a positive duration not yet passed
    since the pod started (`status.startTime`; its creation while the kubelet has not said)."""
    value = (meta(pod).get("annotations") or {}).get(labels.ANNOTATION_DO_NOT_DISRUPT)
    if value is None:
        return False
    if value == "true":
        return True
    try:
        window = parse_duration(value)
    except DurationError:
        return False
    started = parse_time((pod.get("status") or {}).get("startTime")) or parse_time(
        meta(pod).get("creationTimestamp")
    )
    if window <= timedelta(0) or started is None:
        return False
    return now < started + window


def is_drainable(pod: Pod, now: datetime) -> bool:
    return (
        not tolerates_disrupted_taint(pod)
        and not is_stuck_terminating(pod, now)
        and not is_owned_by_node(pod)
    )


def is_waiting_eviction(pod: Pod, now: datetime) -> bool:
    return not is_terminal(pod) and is_drainable(pod, now)


def is_evictable(pod: Pod, now: datetime) -> bool:
    return (
        is_waiting_eviction(pod, now)
        and not is_terminating(pod)
        and not has_do_not_disrupt(pod, now)
    )


def pod_grace_seconds(pod: Pod) -> int:
    """`spec.terminationGracePeriodSeconds` (the apiserver defaults it to 30)."""
    value = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
    return int(value) if isinstance(value, int) and value >= 0 else DEFAULT_POD_GRACE_SECONDS


def drain_tiers(pods: Iterable[Pod]) -> Sequence[list[Pod]]:
    """Split pods into Karpenter's four drain tiers, in drain order."""
    tiers: tuple[list[Pod], list[Pod], list[Pod], list[Pod]] = ([], [], [], [])
    for pod in pods:
        tiers[2 * is_critical(pod) + is_owned_by_daemonset(pod)].append(pod)
    return tiers


def current_wave(waiting: Iterable[Pod]) -> list[Pod]:
    """The pods of the first drain tier that still has a pod waiting eviction (terminating ones
    included): the wave the drain works on; later tiers wait until it is gone."""
    return next((tier for tier in drain_tiers(waiting) if tier), [])


def needs_force_delete(pod: Pod, deadline: datetime | None, now: datetime) -> bool:
    """The node's terminationGracePeriod leaves this pod no more than its own grace period:
    delete it now (bypassing PDBs and do-not-disrupt) so it still gets as much of it as possible.

    A pod already terminating is deleted again only if it would outlive the deadline.
    """
    if deadline is None:
        return False
    if is_terminating(pod):
        ends = parse_time(meta(pod).get("deletionTimestamp"))
        return ends is not None and ends - deadline > timedelta(seconds=1)
    return now > deadline - timedelta(seconds=pod_grace_seconds(pod))
