"""Launch templates (reference §3.1): one per distinct (AMI, NodeClass, bootstrap settings),
named `karpenter.k8s.aws/<hash of its contents>` so the same inputs always find the same template
and a changed NodeClass gets a new one.

`LaunchTemplates.ensure` looks the name up (`DescribeLaunchTemplates`) and creates it when EC2
says it does not exist; names it has seen are remembered for a minute, so a burst of launches
costs one lookup (concurrent launches of one template wait for the first lookup).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Final

from karpy.apis.aws.v1.ec2nodeclass import (
    BlockDeviceMapping,
    CapacityReservationStatus,
    EC2NodeClass,
    NetworkInterface,
)
from karpy.cloudprovider.aws.clients import AWSClients
from karpy.cloudprovider.aws.errors import ClientError, error_code
from karpy.cloudprovider.aws.userdata import BootstrapOptions, user_data
from karpy.scheduling.quantity import value

__all__ = [
    "LAUNCH_TEMPLATE_CACHE_TTL",
    "LAUNCH_TEMPLATE_PREFIX",
    "LaunchTemplate",
    "LaunchTemplates",
    "block_device_mappings",
    "launch_template_data",
    "launch_template_name",
]

LAUNCH_TEMPLATE_PREFIX: Final = "karpenter.k8s.aws/"
LAUNCH_TEMPLATE_CACHE_TTL: Final = timedelta(minutes=1)
GIB: Final = 1024**3
NOT_FOUND: Final = "InvalidLaunchTemplateName.NotFoundException"
ALREADY_EXISTS: Final = "InvalidLaunchTemplateName.AlreadyExistsException"


def _gib(size: str) -> int:
    """A volume size (`20Gi`, `100G`, `1Ti`) in whole GiB, rounded up."""
    return max(1, math.ceil(value(size) / GIB))


def _default_mappings(family: str) -> list[dict[str, Any]]:
    ebs = {"Encrypted": True, "VolumeType": "gp3"}
    if family == "Bottlerocket":
        return [
            {"DeviceName": "/dev/xvda", "Ebs": {**ebs, "VolumeSize": 4}},
            {"DeviceName": "/dev/xvdb", "Ebs": {**ebs, "VolumeSize": 20}},
        ]
    if family.startswith("Windows"):
        return [{"DeviceName": "/dev/sda1", "Ebs": {**ebs, "VolumeSize": 50}}]
    if family == "Custom":
        return []
    return [{"DeviceName": "/dev/xvda", "Ebs": {**ebs, "VolumeSize": 20}}]


def block_device_mappings(
    mappings: Sequence[BlockDeviceMapping] | None, family: str
) -> list[dict[str, Any]]:
    """The NodeClass's block devices for a launch template, or the AMI family's defaults."""
    if not mappings:
        return _default_mappings(family)
    out = []
    for m in mappings:
        entry: dict[str, Any] = {"DeviceName": m.device_name}
        if m.ebs is not None:
            ebs: dict[str, Any] = {}
            for key, raw in (
                ("DeleteOnTermination", m.ebs.delete_on_termination),
                ("Encrypted", m.ebs.encrypted),
                ("Iops", m.ebs.iops),
                ("KmsKeyId", m.ebs.kms_key_id),
                ("SnapshotId", m.ebs.snapshot_id),
                ("Throughput", m.ebs.throughput),
                ("VolumeType", m.ebs.volume_type),
                ("VolumeInitializationRate", m.ebs.volume_initialization_rate),
            ):
                if raw is not None:
                    ebs[key] = raw
            if m.ebs.volume_size:
                ebs["VolumeSize"] = _gib(m.ebs.volume_size)
            entry["Ebs"] = ebs
        out.append(entry)
    return out


def _tag_list(tags: Mapping[str, str]) -> list[dict[str, str]]:
    return [{"Key": k, "Value": v} for k, v in sorted(tags.items())]


def launch_template_data(
    nodeclass: EC2NodeClass,
    *,
    image_id: str,
    bootstrap: BootstrapOptions,
    tags: Mapping[str, str],
    ip_family: str | None = None,
    efa_interfaces: int = 0,
    reserved_capacity: bool = False,
    capacity_reservation: CapacityReservationStatus | None = None,
    placement_group_id: str | None = None,
    placement_partition: int | None = None,
) -> dict[str, Any]:
    """`LaunchTemplateData` for one AMI and bootstrap: user data, instance profile, block
    devices, metadata options, monitoring, security groups on the primary interface, and the
    launch tags on the network interfaces. On an IPv6 cluster (`ip_family="ipv6"`) the
    primary interface gets a primary IPv6 address, which the node registers with, as
    Karpenter asks for it. With `efa_interfaces` (a NodeClaim asking for
    `vpc.amazonaws.com/efa`) there is one EFA interface per network card instead, the first
    the primary (device index 0), as Karpenter requests them. An explicit
    `spec.networkInterfaces` lays the interfaces out instead (one per entry, EFA-only ones as
    `efa-only`), and `spec.connectionTracking` sets the timeouts of every interface that
    carries IP traffic.

    With the `ReservedCapacity` gate on (`reserved_capacity`), a template for a
    `capacity_reservation` launches only into it (`capacity-reservations-only`, targeted; a
    capacity block or an interruptible reservation also sets the market type), and every other
    template keeps its instances out of open reservations (`none`), so the reservations karpy
    counts are used only by the launches that target them. `placement_group_id` launches into
    that placement group (into partition `placement_partition` when given). The NodeClass must
    be resolved (status set)."""
    spec, status = nodeclass.spec, nodeclass.status
    if status is None or not status.security_groups or not status.instance_profile:
        raise ValueError(
            f"EC2NodeClass {nodeclass.name!r} is not resolved: status.securityGroups and "
            "status.instanceProfile are required to build a launch template"
        )
    family = spec.resolved_ami_family()
    meta = spec.metadata_options
    interface: dict[str, Any] = {
        "DeviceIndex": 0,
        "Groups": [g.id for g in status.security_groups],
    }
    if spec.associate_public_ip_address is not None:
        interface["AssociatePublicIpAddress"] = spec.associate_public_ip_address
    if spec.ip_prefix_count is not None:
        interface["Ipv4PrefixCount"] = spec.ip_prefix_count
    if ip_family == "ipv6":
        interface["PrimaryIpv6"] = True
        interface["Ipv6AddressCount"] = 1
    tracking = spec.connection_tracking
    if tracking is not None:
        interface["ConnectionTrackingSpecification"] = {
            key: seconds
            for key, seconds in (
                ("TcpEstablishedTimeout", tracking.tcp_established_timeout),
                ("UdpStreamTimeout", tracking.udp_stream_timeout),
                ("UdpTimeout", tracking.udp_timeout),
            )
            if seconds is not None
        }
    interfaces = [interface]
    if spec.network_interfaces:
        interfaces = [_listed_interface(n, interface) for n in spec.network_interfaces]
    elif efa_interfaces > 0:
        interfaces = [
            {
                **interface,
                "NetworkCardIndex": card,
                "DeviceIndex": 0 if card == 0 else 1,
                "InterfaceType": "efa",
            }
            for card in range(efa_interfaces)
        ]
    data: dict[str, Any] = {
        "ImageId": image_id,
        "UserData": base64.b64encode(user_data(family, bootstrap).encode()).decode(),
        "IamInstanceProfile": {"Name": status.instance_profile},
        "BlockDeviceMappings": block_device_mappings(spec.block_device_mappings, family),
        "MetadataOptions": {
            "HttpEndpoint": meta.http_endpoint,
            "HttpProtocolIpv6": meta.http_protocol_ipv6,
            "HttpPutResponseHopLimit": meta.http_put_response_hop_limit,
            "HttpTokens": meta.http_tokens,
            "InstanceMetadataTags": "disabled",
        },
        "Monitoring": {"Enabled": bool(spec.detailed_monitoring)},
        "NetworkInterfaces": interfaces,
        "TagSpecifications": [{"ResourceType": "network-interface", "Tags": _tag_list(tags)}],
    }
    if reserved_capacity:
        if capacity_reservation is None:
            data["CapacityReservationSpecification"] = {"CapacityReservationPreference": "none"}
        else:
            data["CapacityReservationSpecification"] = {
                "CapacityReservationPreference": "capacity-reservations-only",
                "CapacityReservationTarget": {"CapacityReservationId": capacity_reservation.id},
            }
            if capacity_reservation.reservation_type == "capacity-block":
                data["InstanceMarketOptions"] = {"MarketType": "capacity-block"}
            elif capacity_reservation.interruptible:
                data["InstanceMarketOptions"] = {"MarketType": "interruptible-capacity-reservation"}
    if placement_group_id is not None:
        data["Placement"] = {"GroupId": placement_group_id}
        if placement_partition is not None:
            data["Placement"]["PartitionNumber"] = placement_partition
    if spec.cpu_options is not None and spec.cpu_options.nested_virtualization:
        data["CpuOptions"] = {"NestedVirtualization": spec.cpu_options.nested_virtualization}
    return data


def _listed_interface(listed: NetworkInterface, primary: Mapping[str, Any]) -> dict[str, Any]:
    """One interface of `spec.networkInterfaces`: the primary (card 0, device 0) as karpy
    builds it; the others on their card and device with the security groups, regular ones
    also with the prefixes, IPv6 and connection tracking, EFA-only ones without an IP."""
    card, device = listed.network_card_index, listed.device_index
    if card == 0 and device == 0:
        return {**primary, "NetworkCardIndex": 0}
    out: dict[str, Any] = {
        "NetworkCardIndex": card,
        "DeviceIndex": device,
        "Groups": primary["Groups"],
    }
    if listed.interface_type == "efa-only":
        out["InterfaceType"] = "efa-only"
        return out
    for key in (
        "Ipv4PrefixCount",
        "PrimaryIpv6",
        "Ipv6AddressCount",
        "ConnectionTrackingSpecification",
    ):
        if key in primary:
            out[key] = primary[key]
    return out


def launch_template_name(data: Mapping[str, Any]) -> str:
    """`karpenter.k8s.aws/<hash>`: equal data gives an equal name, any change a new one."""
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256(canonical.encode()).digest()
    return f"{LAUNCH_TEMPLATE_PREFIX}{int.from_bytes(digest[:8], 'big')}"


@dataclass(frozen=True)
class LaunchTemplate:
    name: str
    image_id: str


class LaunchTemplates:
    """Creates launch templates on first use and remembers the ones that exist."""

    def __init__(
        self,
        clients: AWSClients,
        *,
        ttl: timedelta = LAUNCH_TEMPLATE_CACHE_TTL,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clients = clients
        self._ttl = ttl.total_seconds()
        self._clock = clock
        self._seen: dict[str, float] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    def forget(self, name: str) -> None:
        """Drop a name EC2 no longer knows (CreateFleet said the template does not exist, or
        garbage collection deleted it)."""
        self._seen.pop(name, None)

    def used_within(self, name: str, period: timedelta) -> bool:
        """Whether a launch asked for template `name` in the last `period` (on this replica,
        since it started)."""
        seen = self._seen.get(name)
        return seen is not None and self._clock() - seen < period.total_seconds()

    async def ensure(self, data: Mapping[str, Any], tags: Mapping[str, str]) -> LaunchTemplate:
        """The template for `data`, created with `tags` if EC2 does not have it."""
        name = launch_template_name(data)
        # Launches of one template wait for the first to look it up (or make it), not race it.
        async with self._locks.setdefault(name, asyncio.Lock()):
            return await self._ensure(name, data, tags)

    async def _ensure(
        self, name: str, data: Mapping[str, Any], tags: Mapping[str, str]
    ) -> LaunchTemplate:
        now = self._clock()
        seen = self._seen.get(name)
        if seen is not None and now - seen < self._ttl:
            self._seen[name] = now
            return LaunchTemplate(name, str(data["ImageId"]))
        async with self._clients.client("ec2") as ec2:
            try:
                await ec2.describe_launch_templates(LaunchTemplateNames=[name])
            except ClientError as error:
                if error_code(error) != NOT_FOUND:
                    raise
                try:
                    await ec2.create_launch_template(
                        LaunchTemplateName=name,
                        LaunchTemplateData=dict(data),
                        TagSpecifications=[
                            {"ResourceType": "launch-template", "Tags": _tag_list(tags)}
                        ],
                    )
                except ClientError as create_error:
                    code = error_code(create_error)
                    if code != ALREADY_EXISTS:  # another launch made it first
                        raise
        self._seen[name] = now
        return LaunchTemplate(name, str(data["ImageId"]))
