"""What a kwok "instance" is: a Node object, chosen and shaped from a NodeClaim.

`plan` picks the instance type whose cheapest available compatible offering is cheapest (ties by
name, so the choice is deterministic: a repeated launch of the same NodeClaim makes the same
node), and `node_for` builds the Node the provider creates: named after the NodeClaim,
providerID `kwok://<name>`, labelled with the type's and the offering's labels, tainted
`karpenter.sh/unregistered:NoExecute`, with capacity and allocatable.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from karpy.apis.v1 import labels
from karpy.cloudprovider.types import InsufficientCapacityError
from karpy.scheduling.instancetypes import InstanceType, Offering
from karpy.scheduling.requirements import Requirements
from karpy.scheduling.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MEMORY,
    fits,
    format_resources,
    parse_resources,
)

__all__ = [
    "ANNOTATION_KWOK_NODE",
    "ANNOTATION_NODECLAIM_UID",
    "KWOK_NODE_FAKE",
    "PROVIDER_ID_PREFIX",
    "Plan",
    "fake_ip",
    "node_conditions",
    "node_for",
    "node_name_of",
    "plan",
    "provider_id_of",
]

PROVIDER_ID_PREFIX: Final = "kwok://"
ANNOTATION_NODECLAIM_UID: Final = "karpenter.kwok.sh/nodeclaim-uid"
# kwok's own convention, as Karpenter's kwok provider writes it: a kwok controller started with
# `--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake` plays these Nodes' kubelets.
ANNOTATION_KWOK_NODE: Final = "kwok.x-k8s.io/node"
KWOK_NODE_FAKE: Final = "fake"
"""The UID of the NodeClaim a kwok node was launched for (its idempotency key)."""
KWOK_KUBELET_VERSION: Final = "v1.37.2-kwok"


def provider_id_of(node_name: str) -> str:
    return f"{PROVIDER_ID_PREFIX}{node_name}"


def node_name_of(provider_id: str) -> str | None:
    """The node name of a kwok providerID; None for other providers' IDs."""
    if not provider_id.startswith(PROVIDER_ID_PREFIX):
        return None
    return provider_id[len(PROVIDER_ID_PREFIX) :] or None


def fake_ip(seed: str, *, first: int = 10, second_base: int = 0, spread: int = 64) -> str:
    """A stable made-up IPv4 address for `seed` (a node or pod identity)."""
    digest = hashlib.sha1(seed.encode()).digest()
    return f"{first}.{second_base + digest[0] % spread}.{digest[1]}.{1 + digest[2] % 254}"


@dataclass(frozen=True, slots=True)
class Plan:
    """The instance type and offering a NodeClaim launches as."""

    instance_type: InstanceType
    offering: Offering

    def labels(self, requirements: Requirements) -> dict[str, str]:
        """Labels the instance gets: the NodeClaim's single-valued requirements, the type's
        labels, and the offering's zone and capacity type."""
        out = requirements.labels()
        out.update(self.instance_type.requirements.labels())
        out[labels.LABEL_TOPOLOGY_ZONE] = self.offering.zone
        out[labels.LABEL_CAPACITY_TYPE] = self.offering.capacity_type
        out[labels.LABEL_INSTANCE_TYPE] = self.instance_type.name
        return out


def plan(
    requirements: Requirements,
    requests: Mapping[str, int],
    instance_types: Sequence[InstanceType],
) -> Plan:
    """The cheapest launchable choice, or `InsufficientCapacityError` when none fits."""
    allowed = requirements.get(labels.LABEL_INSTANCE_TYPE)
    best: tuple[float, str, InstanceType, Offering] | None = None
    for it in instance_types:
        if allowed is not None and not allowed.has(it.name):
            continue
        if it.requirements.intersects(requirements) is not None:
            continue
        if not fits(requests, it.allocatable):
            continue
        offering = it.cheapest_offering(requirements)
        if offering is None:
            continue
        candidate = (offering.price, it.name, it, offering)
        if best is None or candidate[:2] < best[:2]:
            best = candidate
    if best is None:
        raise InsufficientCapacityError(
            "all requested instance types were unavailable during launch"
        )
    return Plan(instance_type=best[2], offering=best[3])


def _quantities(resources: Mapping[str, int]) -> dict[str, str]:
    return format_resources(resources)


def node_conditions(now: str) -> list[dict[str, str]]:
    """A healthy kubelet's node conditions."""

    def condition(type_: str, status: str, reason: str, message: str) -> dict[str, str]:
        return {
            "type": type_,
            "status": status,
            "reason": reason,
            "message": message,
            "lastHeartbeatTime": now,
            "lastTransitionTime": now,
        }

    return [
        condition("MemoryPressure", "False", "KubeletHasSufficientMemory", "kwok"),
        condition("DiskPressure", "False", "KubeletHasNoDiskPressure", "kwok"),
        condition("PIDPressure", "False", "KubeletHasSufficientPID", "kwok"),
        condition("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
    ]


def node_for(
    *,
    name: str,
    claim_uid: str,
    node_labels: Mapping[str, str],
    capacity: Mapping[str, int],
    allocatable: Mapping[str, int],
    now: str,
    annotations: Mapping[str, str] | None = None,
    provider_id: str | None = None,
) -> dict[str, Any]:
    """The Node object of a simulated instance (kwok's unless `provider_id` says otherwise), as
    a booted kubelet registers it: Ready, still tainted `karpenter.sh/unregistered` until karpy
    registers it."""
    all_labels = dict(node_labels)
    all_labels[labels.LABEL_HOSTNAME] = name
    arch = all_labels.get(labels.LABEL_ARCH, labels.ARCH_AMD64)
    os_name = all_labels.get(labels.LABEL_OS, "linux")
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": all_labels,
            "annotations": {**(annotations or {}), ANNOTATION_NODECLAIM_UID: claim_uid},
        },
        "spec": {
            "providerID": provider_id or provider_id_of(name),
            "taints": [
                {
                    "key": labels.TAINT_UNREGISTERED_KEY,
                    "effect": labels.TAINT_EFFECT_NO_EXECUTE,
                }
            ],
        },
        "status": {
            "capacity": _quantities(capacity),
            "allocatable": _quantities(allocatable),
            "phase": "Running",
            "conditions": node_conditions(now),
            "addresses": [
                {"type": "InternalIP", "address": fake_ip(name)},
                {"type": "Hostname", "address": name},
            ],
            "nodeInfo": {
                "architecture": arch,
                "operatingSystem": os_name,
                "kubeletVersion": KWOK_KUBELET_VERSION,
                "containerRuntimeVersion": "kwok://fake",
                "kernelVersion": "kwok",
                "osImage": "kwok",
                "bootID": "",
                "machineID": "",
                "systemUUID": "",
                "kubeProxyVersion": "",
            },
        },
    }


def resources_of(raw: Mapping[str, Any] | None) -> dict[str, int]:
    return parse_resources(raw)


BASIC_RESOURCES: Final = (CPU, MEMORY, EPHEMERAL_STORAGE)
