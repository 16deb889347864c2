"""Which instance types an AMI family can run, and the Windows build its nodes report.

Karpenter's AWS provider keeps every type in the catalogue but marks the offerings of a type
the NodeClass cannot boot unavailable, so the scheduler never picks it: AL2023 has no image for
the first-generation Graviton `a1` types, and the EKS-optimized Windows images exist only for
x86_64. Windows nodes also carry `node.kubernetes.io/windows-build`, which the kubelet sets
from the OS and pods select on to match their container image's Windows version.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from karpy.apis.aws.v1.ec2nodeclass import AMIStatus
from karpy.cloudprovider.aws.labels import architecture
from karpy.scheduling.requirements import Requirements

__all__ = [
    "WINDOWS_BUILDS",
    "ami_requirements",
    "compatible",
    "fits_interfaces",
    "image_for",
    "windows_build",
]

WINDOWS_BUILDS: Final = {
    "Windows2019": "10.0.17763",
    "Windows2022": "10.0.20348",
    "Windows2025": "10.0.26100",
}
"""The `node.kubernetes.io/windows-build` value of each Windows AMI family."""


def windows_build(ami_family: str) -> str | None:
    """The Windows build of `ami_family`'s nodes (None for Linux families and Custom)."""
    return WINDOWS_BUILDS.get(ami_family)


def compatible(
    info: Mapping[str, Any],
    ami_family: str,
    *,
    network_interfaces: Sequence[tuple[int, int, str]] | None = None,
    connection_tracking: bool = False,
) -> bool:
    """Whether `ami_family`'s images boot the type `info` describes (DescribeInstanceTypes),
    and the type can take the class's interfaces: connection tracking needs a Nitro type, and
    an explicit `networkInterfaces` layout needs each card it names, room for its interfaces
    on each card, and EFA support for its EFA-only interfaces."""
    name = str(info.get("InstanceType") or "")
    if ami_family == "AL2023" and name.split(".", 1)[0] == "a1":
        return False
    if ami_family in WINDOWS_BUILDS and architecture(info) != "amd64":
        return False
    if connection_tracking and info.get("Hypervisor") != "nitro":
        return False
    return network_interfaces is None or fits_interfaces(info, network_interfaces)


def fits_interfaces(info: Mapping[str, Any], layout: Sequence[tuple[int, int, str]]) -> bool:
    """Whether the type has the cards, interfaces per card and EFA interfaces `layout` uses."""
    network = info.get("NetworkInfo") or {}
    room = {
        int(card.get("NetworkCardIndex", 0)): int(card.get("MaximumNetworkInterfaces") or 0)
        for card in network.get("NetworkCards") or ()
    }
    if not room:  # an older answer without cards: one card of the type's interfaces
        room = {0: int(network.get("MaximumNetworkInterfaces") or 0)}
    used: dict[int, int] = {}
    for card, _, _ in layout:
        used[card] = used.get(card, 0) + 1
    if any(card not in room or count > room[card] for card, count in used.items()):
        return False
    efa_only = sum(1 for _, _, kind in layout if kind == "efa-only")
    if efa_only == 0:
        return True
    efa = network.get("EfaInfo") or {}
    return bool(network.get("EfaSupported")) and efa_only <= int(
        efa.get("MaximumEfaInterfaces") or 0
    )


def ami_requirements(amis: Iterable[AMIStatus]) -> list[tuple[str, Requirements]]:
    """Each resolved AMI (status order: newest first) with the requirements a type must meet."""
    return [
        (ami.id, Requirements.from_node_selector_terms(r.to_dict() for r in ami.requirements))
        for ami in amis
    ]


def image_for(type_reqs: Requirements, amis: Iterable[tuple[str, Requirements]]) -> str | None:
    """The first AMI whose requirements a type with `type_reqs` meets (None: no image boots
    it, so it is left out of the launch)."""
    return next((image for image, reqs in amis if type_reqs.intersects(reqs) is None), None)
