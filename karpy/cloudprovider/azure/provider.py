"""The Azure `CloudProvider`: picks a SKU and offering for a NodeClaim from its AKSNodeClass's
instance types, launches the VM through `AzureInstances`, and reads, lists and deletes VMs.

A refused launch (SkuNotAvailable, AllocationFailed, quota, ...) is recorded in the
unavailable-offerings cache before the `InsufficientCapacityError` goes up, so the retried
NodeClaim's instance types no longer offer what was refused and no request is repeated.

The AKSNodeClass must not be `Ready=False`. Its resolved `status.images` entry for the instance
type is used; a class with no status yet launches with the settings' subnet and the community
gallery's latest node image of what its `imageFamily` means at the Kubernetes version
(`imagefamily`). Either way the image is the first one whose architecture and Hyper-V generation
the instance type allows (`karpenter.azure.com/sku-hyperv-generation`: a size that boots only
generation 1 gets the generation 1 image). Instance types none of the resolved images boots
(arm64 with Azure Linux 3, a SKU that lists no Hyper-V generation) are not offered for the
class; before the images are resolved, such a launch fails with `ImageNotFound`, as upstream's
"no compatible images found" does.
"""

from __future__ import annotations

import builtins
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any, Final

import structlog

from karpy.apis.azure.v1beta1 import AKSNodeClass
from karpy.apis.azure.v1beta1 import labels as azure
from karpy.apis.azure.v1beta1.aksnodeclass import KIND
from karpy.apis.v1 import NodeClaim, NodePool, conditions
from karpy.apis.v1.common import NodeClassReference
from karpy.apis.v1.labels import (
    CAPACITY_TYPE_ON_DEMAND,
    CAPACITY_TYPE_SPOT,
    LABEL_CAPACITY_TYPE,
    LABEL_INSTANCE_TYPE,
    LABEL_NODEPOOL,
    LABEL_TOPOLOGY_ZONE,
)
from karpy.cloudprovider.azure.bootstrap import (
    CLUSTER_DNS_DEFAULT,
    HASH_VERSION,
    NodeBootstrap,
    custom_data,
    nodeclass_hash,
)
from karpy.cloudprovider.azure.catalog import AzureInstanceTypes, installs_gpu_drivers
from karpy.cloudprovider.azure.gpu import driver_for
from karpy.cloudprovider.azure.imagefamily import image_definitions, image_id
from karpy.cloudprovider.azure.instances import (
    AzureInstances,
    CapacityError,
    LaunchRequest,
    VirtualMachine,
)
from karpy.cloudprovider.azure.skus import EVICTION_MEMORY_AVAILABLE_MIB, kube_reserved
from karpy.cloudprovider.azure.unavailable import LaunchFailure, classify
from karpy.cloudprovider.kubedns import KubeDNS
from karpy.cloudprovider.kwok.instances import plan
from karpy.cloudprovider.types import (
    CreateError,
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    NodeClassNotReadyError,
    RepairPolicy,
)
from karpy.scheduling.instancetypes import InstanceType
from karpy.scheduling.requirements import Requirements
from karpy.scheduling.resources import format_resources, parse_resources

__all__ = [
    "IMAGE_VERSION_DRIFT",
    "K8S_VERSION_DRIFT",
    "REPAIR_POLICIES",
    "SUBNET_DRIFT",
    "AzureCloudProvider",
    "LaunchSettings",
    "NodeClassLookup",
]

log = structlog.get_logger("karpy.cloudprovider.azure")

K8S_VERSION_DRIFT: Final = "K8sVersionDrift"
IMAGE_VERSION_DRIFT: Final = "ImageVersionDrift"
SUBNET_DRIFT: Final = "SubnetDrift"

NodeClassLookup = Callable[[str], Awaitable[AKSNodeClass | None]]
"""The AKSNodeClass of a name, or None when there is none."""
NodeLookup = Callable[[str], Mapping[str, Any] | None]
"""The Node of a name (from the informer cache), or None."""

REPAIR_POLICIES: Final = (
    RepairPolicy("Ready", "False", timedelta(minutes=10)),
    RepairPolicy("Ready", "Unknown", timedelta(minutes=10)),
)
"""A kubelet that has not been Ready for 10 minutes (the upstream Azure provider's policy)."""


def default_image_id(image_family: str, it: InstanceType, kubernetes_version: str) -> str | None:
    """The community gallery's latest AKS node image of a family at a Kubernetes version for an
    instance type (before the status controller has resolved a version): the first of the
    family's definitions whose architecture and Hyper-V generation the type allows, as a
    resolved class's `status.images` are chosen; None when none does (Azure Linux 3 on arm64, the
    Windows families, a SKU whose record lists no `HyperVGenerations`)."""
    latest = [
        (
            image_id(found.gallery, found.definition, "latest"),
            Requirements.from_node_selector_terms(found.requirements()),
        )
        for found in image_definitions(image_family, kubernetes_version)
    ]
    return _first_booting(latest, it)


@dataclass(frozen=True, slots=True)
class LaunchSettings:
    """What every launch needs from the settings."""

    cluster_endpoint: str = ""
    bootstrap_token: str = ""
    ssh_public_key: str = ""
    vnet_subnet_id: str = ""
    node_identities: tuple[str, ...] = ()
    ca_bundle: str = ""
    """The cluster CA nodes trust, base64 PEM."""
    kubelet_identity_client_id: str = ""
    admin_username: str = "azureuser"
    subscription_id: str = ""
    location: str = ""
    node_resource_group: str = ""
    tenant_id: str = ""
    network_plugin: str = "azure"
    network_plugin_mode: str = "overlay"
    network_dataplane: str = "cilium"
    network_policy: str = ""
    dns_service_ip: str = ""
    """`DNS_SERVICE_IP`: the nodes' cluster DNS, over the kube-dns Service's ClusterIP."""
    additional_tags: Mapping[str, str] = field(default_factory=dict)
    """`ADDITIONAL_TAGS`: on every VM and NIC, under the AKSNodeClass's `tags`."""


def _vm_zone(zone_label: str) -> str | None:
    """ARM's zone (`2`) of an offering zone (`westus2-2`); None for a regional offering."""
    return zone_label.rsplit("-", 1)[-1] if zone_label else None


class AzureCloudProvider:
    """Azure VMs for NodeClaims whose nodeClassRef is an AKSNodeClass."""

    def __init__(
        self,
        *,
        nodeclass_of: NodeClassLookup,
        instance_types: AzureInstanceTypes,
        instances: AzureInstances,
        launch: LaunchSettings,
        close: Callable[[], Awaitable[None]] | None = None,
        node_of: NodeLookup | None = None,
        cluster_version: Callable[[], Awaitable[str]] | None = None,
        kube_dns: KubeDNS | None = None,
    ) -> None:
        self.nodeclass_of = nodeclass_of
        self.kube_dns = kube_dns
        """The kube-dns Service's ClusterIP, the nodes' cluster DNS without `DNS_SERVICE_IP`."""
        self.cluster_version = cluster_version
        """The apiserver's Kubernetes version, for nodes of a class not resolved yet."""
        self.node_of = node_of
        self.instance_types = instance_types
        self.instances = instances
        self.unavailable = instance_types.unavailable
        self.launch = launch
        self._close = close
        self.resolver: Any = None
        """The AKSNodeClass status resolver (`nodeclassstatus`); the plugin sets it and adds
        the status controller with it."""

    @property
    def name(self) -> str:
        return "azure"

    async def _nodeclass(self, ref: NodeClassReference) -> AKSNodeClass:
        if ref.group_name() != azure.GROUP or ref.kind != KIND:
            raise NodeClassNotReadyError(
                f"nodeClassRef {ref.group_name()}/{ref.kind} is not served by the azure provider"
            )
        nodeclass = await self.nodeclass_of(ref.name)
        if nodeclass is None:
            raise InsufficientCapacityError(f'AKSNodeClass "{ref.name}" not found')
        if nodeclass.metadata.deletion_timestamp is not None:
            raise NodeClassNotReadyError(f'AKSNodeClass "{ref.name}" is terminating')
        return nodeclass

    # -- create ----------------------------------------------------------------------------------

    async def create(self, claim: NodeClaim) -> NodeClaim:
        nodeclass = await self._nodeclass(claim.spec.node_class_ref)
        _require_not_failed(nodeclass)
        types = await self.instance_types.for_nodeclass(nodeclass)
        try:
            existing: VirtualMachine | None = await self.instances.get(claim.name)
        except NodeClaimNotFoundError:
            existing = None
        if existing is not None and existing.provisioning_state != "Failed":
            log.info("adopted VM", NodeClaim={"name": claim.name}, vm=existing.name)
            return self._launched(claim, existing, types, nodeclass)
        reqs = Requirements.from_node_selector_terms(r.to_dict() for r in claim.spec.requirements)
        requests = parse_resources(
            claim.spec.resources.requests if claim.spec.resources else None,
            field="spec.resources.requests",
        )
        choice = plan(reqs, requests, _with_image(nodeclass, types))
        it, offering = choice.instance_type, choice.offering
        node_labels = choice.labels(reqs)
        node_labels.update(claim.metadata.labels or {})
        boot = await self._bootstrap(claim, nodeclass, it, node_labels)
        image = self._image(nodeclass, it, boot.arch, boot.kubernetes_version)
        request = self._request(claim, nodeclass, it, offering.zone, offering.capacity_type, image)
        request = replace(request, custom_data=custom_data(boot))
        try:
            vm = await self.instances.launch(request)
        except CapacityError as err:
            self._record(err, it)
            raise
        log.info(
            "launched VM",
            NodeClaim={"name": claim.name},
            vm=vm.name,
            **{
                "instance-type": it.name,
                "zone": offering.zone,
                "capacity-type": offering.capacity_type,
            },
        )
        return self._launched(claim, vm, types, nodeclass)

    async def _kubernetes_version(self, nodeclass: AKSNodeClass) -> str:
        """The class's resolved Kubernetes version, else the apiserver's."""
        version = nodeclass.status.kubernetes_version if nodeclass.status else None
        if not version and self.cluster_version is not None:
            version = (await self.cluster_version()).lstrip("v").split("+")[0].split("-")[0]
        if not version:
            raise NodeClassNotReadyError(
                f'AKSNodeClass "{nodeclass.metadata.name}" has no Kubernetes version resolved yet'
            )
        return version

    async def _cluster_dns(self) -> str:
        """`DNS_SERVICE_IP` (upstream's setting) when set, else the kube-dns Service's
        ClusterIP (right for any service CIDR, as Karpenter's AWS provider reads it), else
        AKS's default, 10.0.0.10."""
        if self.launch.dns_service_ip:
            return self.launch.dns_service_ip
        found = await self.kube_dns.ip() if self.kube_dns is not None else None
        return found or CLUSTER_DNS_DEFAULT

    async def _bootstrap(
        self,
        claim: NodeClaim,
        nodeclass: AKSNodeClass,
        it: InstanceType,
        labels: Mapping[str, str],
    ) -> NodeBootstrap:
        """The node's bootstrapping: labels, taints, kubelet settings and the cluster's, and the
        NVIDIA driver of a GPU size unless the class manages drivers elsewhere."""
        sku = self.instance_types.sku(it.name)
        cpu_milli, memory = kube_reserved(sku.vcpus, sku.memory_gib) if sku else (0, 0)
        reserved = {"cpu": f"{cpu_milli}m", "memory": f"{memory // (1024 * 1024)}Mi"} if sku else {}
        s = self.launch
        return NodeBootstrap(
            cluster_endpoint=s.cluster_endpoint,
            bootstrap_token=s.bootstrap_token,
            ca_bundle=s.ca_bundle,
            kubernetes_version=await self._kubernetes_version(nodeclass),
            arch=sku.architecture if sku is not None else "amd64",
            subscription_id=s.subscription_id,
            location=s.location,
            node_resource_group=s.node_resource_group,
            subnet_id=nodeclass.spec.vnet_subnet_id or s.vnet_subnet_id,
            max_pods=self.instance_types.pods(nodeclass),
            labels=labels,
            taints=[
                _taint(t) for t in [*(claim.spec.taints or ()), *(claim.spec.startup_taints or ())]
            ],
            kube_reserved=reserved,
            eviction_memory=f"{EVICTION_MEMORY_AVAILABLE_MIB}Mi",
            kubelet=nodeclass.spec.kubelet,
            cluster_dns=await self._cluster_dns(),
            network_plugin=s.network_plugin,
            network_plugin_mode=s.network_plugin_mode,
            network_dataplane=s.network_dataplane,
            network_policy=s.network_policy,
            tenant_id=s.tenant_id,
            kubelet_identity_client_id=s.kubelet_identity_client_id,
            admin_username=s.admin_username,
            gpu=driver_for(it.name) if installs_gpu_drivers(nodeclass) else None,
        )

    def _request(
        self,
        claim: NodeClaim,
        nodeclass: AKSNodeClass,
        it: InstanceType,
        zone: str,
        capacity_type: str,
        image_id: str,
    ) -> LaunchRequest:
        tags = {**self.launch.additional_tags, **(nodeclass.spec.tags or {})}
        tags[azure.TAG_NODECLASS] = nodeclass.metadata.name or ""
        return LaunchRequest(
            nodeclaim=claim.name,
            nodepool=claim.nodepool_name or "",
            nodeclass=nodeclass.metadata.name or "",
            sku=it.name,
            zone=_vm_zone(zone),
            spot=capacity_type == CAPACITY_TYPE_SPOT,
            subnet_id=nodeclass.spec.vnet_subnet_id or self.launch.vnet_subnet_id,
            image_id=image_id,
            os_disk_size_gb=nodeclass.spec.os_disk_size_gb,
            custom_data="",
            ssh_public_key=self.launch.ssh_public_key,
            admin_username=self.launch.admin_username,
            tags=tags,
            identities=self.launch.node_identities,
        )

    @staticmethod
    def _image(
        nodeclass: AKSNodeClass, it: InstanceType, arch: str, kubernetes_version: str
    ) -> str:
        """The class's resolved image for the instance type, else the family's latest at the
        Kubernetes version; a clear error when neither exists for its architecture."""
        resolved = nodeclass.status.images if nodeclass.status else None
        found = _resolved_image(nodeclass, it)
        if found is None and not resolved:
            found = default_image_id(nodeclass.spec.image_family, it, kubernetes_version)
        if found is None:
            generations = it.requirements.get(azure.LABEL_SKU_HYPERV_GENERATION)
            listed = (
                sorted(generations.values) if generations and not generations.complement else []
            )
            boots = (
                f"Hyper-V generation {' or '.join(listed)}"
                if listed
                else "a Hyper-V generation (its SKU lists no HyperVGenerations)"
            )
            raise CreateError(
                f'AKSNodeClass "{nodeclass.metadata.name}" has no {arch} image of imageFamily '
                f"{nodeclass.spec.image_family} at Kubernetes {kubernetes_version} for "
                f"instance type {it.name}, which boots {boots}",
                reason="ImageNotFound",
            )
        return found

    def _record(self, err: CapacityError, it: InstanceType) -> None:
        kind = classify(err.code, str(err))
        sku = self.instance_types.sku(it.name)
        if kind is None or sku is None:
            return
        zone = next(
            (o.zone for o in it.offerings if _vm_zone(o.zone) == (err.zone or None)),
            "",
        )
        self.unavailable.record(
            kind,
            LaunchFailure(
                sku=sku.name,
                family=sku.family,
                vcpus=sku.vcpus,
                zone=zone,
                capacity_type=err.capacity_type,
                zones=self.instance_types.zones_of(sku),
            ),
            message=str(err),
        )
        log.info(
            "offerings marked unavailable",
            reason=kind,
            **{"instance-type": sku.name, "zone": zone, "capacity-type": err.capacity_type},
        )

    def _launched(
        self,
        claim: NodeClaim,
        vm: VirtualMachine,
        types: builtins.list[InstanceType],
        nodeclass: AKSNodeClass,
    ) -> NodeClaim:
        found = self.claim_of(vm, types)
        out = claim.model_copy(deep=True)
        node_labels = dict(found.metadata.labels or {})
        reqs = Requirements.from_node_selector_terms(r.to_dict() for r in claim.spec.requirements)
        labels = reqs.labels()
        labels.update(node_labels)
        labels.update(claim.metadata.labels or {})
        out.metadata.labels = labels
        annotations = dict(claim.metadata.annotations or {})
        annotations[azure.ANNOTATION_AKSNODECLASS_HASH] = nodeclass_hash(nodeclass)
        annotations[azure.ANNOTATION_AKSNODECLASS_HASH_VERSION] = HASH_VERSION
        out.metadata.annotations = annotations
        status = claim.status.to_dict() if claim.status else {}
        status.update(found.status.to_dict() if found.status else {})
        out.status = type(found.status).model_validate(status) if found.status else None
        return out

    # -- read ------------------------------------------------------------------------------------

    def claim_of(self, vm: VirtualMachine, types: builtins.list[InstanceType]) -> NodeClaim:
        """A NodeClaim describing a VM: its SKU's labels, zone, capacity type and resources."""
        it = next((t for t in types if t.name == vm.sku), None)
        labels: dict[str, str] = dict(it.requirements.labels()) if it is not None else {}
        zone = next(
            (o.zone for o in (it.offerings if it else ()) if _vm_zone(o.zone) == vm.zone),
            "",
        )
        labels[LABEL_INSTANCE_TYPE] = vm.sku
        labels[LABEL_TOPOLOGY_ZONE] = zone
        labels[LABEL_CAPACITY_TYPE] = CAPACITY_TYPE_SPOT if vm.spot else CAPACITY_TYPE_ON_DEMAND
        labels[azure.AKS_LABEL_CLUSTER] = self.instances.resource_group
        if vm.tags.get(azure.TAG_NODEPOOL):
            labels[LABEL_NODEPOOL] = vm.tags[azure.TAG_NODEPOOL]
        status: dict[str, Any] = {"providerID": vm.provider_id}
        if it is not None:
            status["capacity"] = format_resources(it.capacity)
            status["allocatable"] = format_resources(it.allocatable)
        return NodeClaim.model_validate(
            {
                "metadata": {
                    "name": vm.tags.get(azure.TAG_NODECLAIM) or vm.name.removeprefix("aks-"),
                    "labels": labels,
                },
                "spec": {
                    "requirements": [],
                    "nodeClassRef": {
                        "group": azure.GROUP,
                        "kind": KIND,
                        "name": vm.tags.get(azure.TAG_NODECLASS, "unknown"),
                    },
                },
                "status": status,
            }
        )

    async def _types(self) -> builtins.list[InstanceType]:
        return await self.instance_types.every_size()

    async def get(self, provider_id: str) -> NodeClaim:
        name = _vm_name_of(provider_id)
        if name is None:
            raise NodeClaimNotFoundError(f"not an Azure VM providerID: {provider_id!r}")
        vm = await self.instances.get(name.removeprefix("aks-"))
        return self.claim_of(vm, await self._types())

    async def list(self) -> builtins.list[NodeClaim]:
        types = await self._types()
        return [self.claim_of(vm, types) for vm in await self.instances.list()]

    async def delete(self, claim: NodeClaim) -> None:
        """Delete the VM and its NIC; `NodeClaimNotFoundError` once neither is left."""
        provider_id = claim.status.provider_id if claim.status else None
        name = _vm_name_of(provider_id or "") if provider_id else None
        await self.instances.delete((name or f"aks-{claim.name}").removeprefix("aks-"))

    async def get_instance_types(self, nodepool: NodePool) -> builtins.list[InstanceType]:
        """The types of the NodePool's AKSNodeClass; none while it is missing or not served."""
        try:
            nodeclass = await self._nodeclass(nodepool.spec.template.spec.node_class_ref)
        except (InsufficientCapacityError, NodeClassNotReadyError):
            return []
        return _with_image(nodeclass, await self.instance_types.for_nodeclass(nodeclass))

    async def is_drifted(self, claim: NodeClaim) -> str | None:
        """`NodeClassDrift` when the AKSNodeClass spec's hash differs from the one stamped on
        the NodeClaim at launch (same hash version; another version is not compared), else
        image or subnet drift of its VM."""
        try:
            nodeclass = await self._nodeclass(claim.spec.node_class_ref)
        except (InsufficientCapacityError, NodeClassNotReadyError):
            return None
        theirs = claim.metadata.annotations or {}
        stamped = theirs.get(azure.ANNOTATION_AKSNODECLASS_HASH)
        if (
            theirs.get(azure.ANNOTATION_AKSNODECLASS_HASH_VERSION) == HASH_VERSION
            and stamped
            and nodeclass_hash(nodeclass) != stamped
        ):
            return conditions.REASON_NODECLASS_DRIFT
        return await self._instance_drift(claim, nodeclass)

    async def _instance_drift(self, claim: NodeClaim, nodeclass: AKSNodeClass) -> str | None:
        """`K8sVersionDrift` when the Node's kubelet is not the class's resolved Kubernetes
        version; `ImageVersionDrift` when the VM's image is none of the class's resolved images;
        `SubnetDrift` when its NIC is in another subnet than the class's (upstream's checks, in
        its order). Nothing to compare (no Node yet, a pre-release kubelet, nothing resolved, no
        VM, no NIC) is no drift."""
        status = nodeclass.status
        node_name = claim.status.node_name if claim.status else None
        node = self.node_of(node_name) if node_name and self.node_of is not None else None
        kubelet = str(
            ((node or {}).get("status") or {}).get("nodeInfo", {}).get("kubeletVersion") or ""
        )
        kubelet = kubelet.lstrip("v").split("+")[0]
        wanted = status.kubernetes_version if status else None
        # A pre-release kubelet (`1.37.2-kwok`: a simulated one) is not compared.
        if kubelet and "-" not in kubelet and wanted and kubelet != wanted:
            return K8S_VERSION_DRIFT
        provider_id = claim.status.provider_id if claim.status else None
        name = _vm_name_of(provider_id or "")
        if name is None:
            return None
        try:
            vm = await self.instances.get(name.removeprefix("aks-"))
        except NodeClaimNotFoundError:
            return None
        images = {
            i.id.lower() for i in (nodeclass.status.images if nodeclass.status else None) or ()
        }
        if images and vm.image_id and vm.image_id.lower() not in images:
            return IMAGE_VERSION_DRIFT
        expected = nodeclass.spec.vnet_subnet_id or self.launch.vnet_subnet_id
        subnet = await self.instances.nic_subnet(name.removeprefix("aks-"))
        if subnet is not None and expected and subnet.lower() != expected.lower():
            return SUBNET_DRIFT
        return None

    def repair_policies(self) -> builtins.list[RepairPolicy]:
        return list(REPAIR_POLICIES)

    async def close(self) -> None:
        if self._close is not None:
            await self._close()


def _taint(taint: Any) -> str:
    value = f"={taint.value}" if taint.value else ""
    return f"{taint.key}{value}:{taint.effect}"


def _vm_name_of(provider_id: str) -> str | None:
    prefix = "azure://"
    if not provider_id.startswith(prefix):
        return None
    parts = provider_id[len(prefix) :].rstrip("/").split("/")
    if len(parts) < 2 or parts[-2].lower() != "virtualmachines":
        return None
    return parts[-1]


def _resolved_images(nodeclass: AKSNodeClass) -> list[tuple[str, Requirements]]:
    """The class's `status.images`, each id with its requirements (architecture and Hyper-V
    generation) parsed once, in upstream's order of preference."""
    images = (nodeclass.status.images if nodeclass.status else None) or ()
    return [
        (image.id, Requirements.from_node_selector_terms(r.to_dict() for r in image.requirements))
        for image in images
    ]


def _first_booting(images: list[tuple[str, Requirements]], it: InstanceType) -> str | None:
    """The first image whose requirements the instance type meets: a size that boots both
    generations gets the generation 2 image and a generation 1 only size the generation 1
    image."""
    return next((id_ for id_, reqs in images if it.requirements.intersects(reqs) is None), None)


def _resolved_image(nodeclass: AKSNodeClass, it: InstanceType) -> str | None:
    """The first `status.images` entry the instance type boots."""
    return _first_booting(_resolved_images(nodeclass), it)


def _with_image(nodeclass: AKSNodeClass, types: list[InstanceType]) -> list[InstanceType]:
    """The instance types one of the class's resolved images boots (all of them before the
    images are resolved): an architecture or Hyper-V generation the image family has no image
    for (arm64 with Azure Linux 3, a SKU that lists no generation) is not offered, so pods that
    need it stay pending instead of failing launches. The images' requirements are parsed once
    for all the types."""
    images = _resolved_images(nodeclass)
    if not images:
        return types
    return [it for it in types if _first_booting(images, it) is not None]


def _require_not_failed(nodeclass: AKSNodeClass) -> None:
    """A class whose `Ready` is False (a bad subnet, an unknown image) is not launched with."""
    found = nodeclass.status.conditions if nodeclass.status else None
    ready = next((c for c in found or () if c.type == "Ready"), None)
    if ready is not None and ready.status == "False":
        detail = f": {ready.message}" if ready.message else ""
        raise NodeClassNotReadyError(
            f'AKSNodeClass "{nodeclass.metadata.name}" is not ready{detail}'
        )
