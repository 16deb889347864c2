"""Questions about raw pod objects that every controller asks the same way.

The answers follow Karpenter's `pkg/utils/pod`: what makes a pod provisionable, terminal,
terminating, owned by a DaemonSet or by a node (static pods), and so on. They read the raw dicts
the informers hold (never mutated), so they are cheap enough for event handlers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from karpy.apis.v1.labels import ANNOTATION_DO_NOT_DISRUPT

__all__ = [
    "has_do_not_disrupt",
    "is_active",
    "is_owned_by_daemonset",
    "is_owned_by_node",
    "is_provisionable",
    "is_reschedulable",
    "is_terminal",
    "is_terminating",
    "is_unschedulable",
    "node_name",
    "pod_key",
    "pod_uid",
]

JSON = Mapping[str, Any]


def pod_key(pod: JSON) -> str:
    meta = pod.get("metadata") or {}
    return f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"


def pod_uid(pod: JSON) -> str:
    return str((pod.get("metadata") or {}).get("uid") or "")


def node_name(pod: JSON) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def _owners(pod: JSON) -> list[Mapping[str, Any]]:
    return list((pod.get("metadata") or {}).get("ownerReferences") or ())


def is_owned_by_daemonset(pod: JSON) -> bool:
    return any(o.get("kind") == "DaemonSet" for o in _owners(pod))


def is_owned_by_node(pod: JSON) -> bool:
    """Static (mirror) pods are owned by their Node."""
    return any(o.get("kind") == "Node" for o in _owners(pod))


def is_terminal(pod: JSON) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def is_terminating(pod: JSON) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def is_active(pod: JSON) -> bool:
    """Neither finished nor on its way out."""
    return not is_terminal(pod) and not is_terminating(pod)


def is_unschedulable(pod: JSON) -> bool:
    """kube-scheduler's last attempt found no node for it (PodScheduled=False, Unschedulable)."""
    return _unschedulable(pod)


def _unschedulable(pod: JSON) -> bool:
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "PodScheduled":
            return bool(
                condition.get("status") == "False" and condition.get("reason") == "Unschedulable"
            )
    return False


def is_provisionable(pod: JSON) -> bool:
    """kube-scheduler gave up on it (PodScheduled=False, Unschedulable), it is not bound and not
    preempting (no nominatedNodeName), and it is neither a DaemonSet pod nor a static pod."""
    return (
        _unschedulable(pod)
        and not node_name(pod)
        and not (pod.get("status") or {}).get("nominatedNodeName")
        and not is_owned_by_daemonset(pod)
        and not is_owned_by_node(pod)
        and not is_terminal(pod)
        and not is_terminating(pod)
    )


def has_do_not_disrupt(pod: JSON) -> bool:
    """The pod asks not to be evicted (`karpenter.sh/do-not-disrupt`: "true" or a duration)."""
    value = ((pod.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_DO_NOT_DISRUPT)
    return bool(value) and value != "false"


def is_reschedulable(pod: JSON) -> bool:
    """A pod on a node being deleted that will need a place elsewhere once it is evicted (pods
    that ask not to be disrupted are waited for, never evicted, so they need no new place)."""
    return (
        is_active(pod)
        and not has_do_not_disrupt(pod)
        and not is_owned_by_daemonset(pod)
        and not is_owned_by_node(pod)
        and (pod.get("spec") or {}).get("schedulerName", "default-scheduler") == "default-scheduler"
    )
