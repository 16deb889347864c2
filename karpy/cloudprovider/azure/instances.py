"""Azure VMs for NodeClaims: launch (one NIC, then one VM), get, list and delete, through the async
Azure SDK clients.

Idempotency: a NodeClaim maps to one VM name, `aks-<nodeclaim name>` (the NIC has the same
name), so a launch retried after a crash between the VM's creation and the NodeClaim's status
write finds the VM and adopts it instead of making a second one. ARM's PUT is itself idempotent
per name, so a retried create with the same body is harmless too.

Throttling (429 with `Retry-After`) is ridden by the SDK clients' retry policy, which waits as
ARM asks; a call still throttled after its retries fails the launch, which the NodeClaim's
controller retries with backoff, and a NIC already made is kept for that retry (VM and NIC PUTs
are idempotent by name, so no retry makes a second of either).

Errors map onto the cloud-provider contract: SkuNotAvailable, AllocationFailed,
ZonalAllocationFailed, OverconstrainedAllocationRequest and quota errors become
`InsufficientCapacityError` carrying the offering to mark unavailable; a missing VM on get or
delete is `NodeClaimNotFoundError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from azure.core.exceptions import HttpResponseError, ResourceNotFoundError
from azure.mgmt.resourcegraph.models import QueryRequest

from karpy.apis.azure.v1beta1 import labels as azure
from karpy.cloudprovider.types import CreateError, InsufficientCapacityError, NodeClaimNotFoundError

__all__ = [
    "CAPACITY_ERROR_CODES",
    "AzureInstances",
    "CapacityError",
    "LaunchRequest",
    "VirtualMachine",
    "provider_id",
    "vm_name",
]

VM_TYPE: Final = "Microsoft.Compute/virtualMachines"
CAPACITY_ERROR_CODES: Final = frozenset(
    {
        "SkuNotAvailable",
        "AllocationFailed",
        "ZonalAllocationFailed",
        "OverconstrainedAllocationRequest",
        "OverconstrainedZonalAllocationRequest",
    }
)
"""ARM error codes that mean "no capacity for this offering now"."""
_QUOTA_MARKERS: Final = ("quota", "QuotaExceeded")
_THROTTLED: Final = 429


def vm_name(nodeclaim_name: str) -> str:
    """The VM (and NIC) name of a NodeClaim: one name per NodeClaim, so launches are idempotent."""
    return f"aks-{nodeclaim_name}"


def provider_id(resource_id: str) -> str:
    """The Node's providerID of a VM, as the Azure cloud provider writes it."""
    return f"azure://{resource_id}"


class CapacityError(InsufficientCapacityError):
    """No capacity for (sku, zone, capacity type): the offering to mark unavailable."""

    def __init__(self, message: str, *, code: str, sku: str, zone: str, capacity_type: str) -> None:
        super().__init__(message)
        self.code = code
        self.sku = sku
        self.zone = zone
        self.capacity_type = capacity_type

    @property
    def quota(self) -> bool:
        """A quota limit (for the family or the region) rather than a shortage of machines."""
        return self.code not in CAPACITY_ERROR_CODES


class _Poller(Protocol):
    async def result(self) -> Any: ...


@dataclass(frozen=True, slots=True)
class LaunchRequest:
    """What one VM is launched with."""

    nodeclaim: str
    nodepool: str
    nodeclass: str
    sku: str
    zone: str | None
    spot: bool
    subnet_id: str
    image_id: str
    os_disk_size_gb: int
    custom_data: str
    """Base64 custom data (the bootstrapping script)."""
    admin_username: str = "azureuser"
    ssh_public_key: str = ""
    tags: Mapping[str, str] = field(default_factory=dict)
    identities: Sequence[str] = ()

    @property
    def capacity_type(self) -> str:
        return "spot" if self.spot else "on-demand"


@dataclass(frozen=True, slots=True)
class VirtualMachine:
    """The facts of a VM karpy reads back."""

    id: str
    name: str
    sku: str
    zone: str | None
    spot: bool
    tags: Mapping[str, str]
    provisioning_state: str
    image_id: str = ""
    """The image the VM was created from (a gallery image version's ID)."""

    @property
    def provider_id(self) -> str:
        return provider_id(self.id)


def _vm_of(raw: Mapping[str, Any]) -> VirtualMachine:
    props = raw.get("properties") or {}
    zones = raw.get("zones") or []
    image = (props.get("storageProfile") or {}).get("imageReference") or {}
    return VirtualMachine(
        id=str(raw["id"]),
        name=str(raw["name"]),
        sku=str((props.get("hardwareProfile") or {}).get("vmSize", "")),
        zone=str(zones[0]) if zones else None,
        spot=props.get("priority") == "Spot",
        tags=dict(raw.get("tags") or {}),
        provisioning_state=str(props.get("provisioningState", "")),
        image_id=str(image.get("id") or image.get("communityGalleryImageId") or ""),
    )


class AzureInstances:
    """VMs and NICs in the cluster's node resource group, with the cluster's tag."""

    def __init__(
        self,
        *,
        compute: Any,
        network: Any,
        graph: Any,
        subscription_id: str,
        resource_group: str,
        location: str,
        cluster_name: str,
    ) -> None:
        self._compute = compute
        self._network = network
        self._graph = graph
        self.subscription_id = subscription_id
        self.resource_group = resource_group
        self.location = location
        self.cluster_name = cluster_name

    @property
    def compute(self) -> Any:
        """The Compute SDK client (shared with the garbage collector)."""
        return self._compute

    @property
    def network(self) -> Any:
        """The Network SDK client (shared with the garbage collector)."""
        return self._network

    def _tags(self, request: LaunchRequest) -> dict[str, str]:
        tags = dict(request.tags)
        tags.update(
            {
                azure.TAG_CLUSTER: self.cluster_name,
                azure.TAG_NODEPOOL: request.nodepool,
                azure.TAG_NODECLAIM: request.nodeclaim,
                azure.TAG_BILLING: azure.TAG_BILLING_LINUX,
            }
        )
        return tags

    async def launch(self, request: LaunchRequest) -> VirtualMachine:
        """The NodeClaim's VM: adopted when it already exists, else its NIC then itself."""
        name = vm_name(request.nodeclaim)
        try:
            existing = await self._get_raw(name)
        except NodeClaimNotFoundError:
            existing = None
        if existing is not None and existing.provisioning_state != "Failed":
            return existing
        tags = self._tags(request)
        nic_poller: _Poller = await self._network.network_interfaces.begin_create_or_update(
            self.resource_group,
            name,
            {
                "location": self.location,
                "tags": tags,
                "properties": {
                    "ipConfigurations": [
                        {
                            "name": "ipconfig1",
                            "properties": {
                                "primary": True,
                                "subnet": {"id": request.subnet_id},
                                "privateIPAllocationMethod": "Dynamic",
                            },
                        }
                    ],
                },
            },
        )
        nic = await nic_poller.result()
        try:
            vm_poller: _Poller = await self._compute.virtual_machines.begin_create_or_update(
                self.resource_group, name, self._vm_body(request, nic_id=str(nic.id), tags=tags)
            )
            raw = await vm_poller.result()
        except HttpResponseError as exc:
            if exc.status_code == _THROTTLED:
                # ARM refused the PUT before doing anything: the NIC stays for the retry (its
                # PUT is idempotent), rather than being deleted and made again each time.
                raise
            # Leave nothing behind: a failed VM and its NIC would leak (and be billed for).
            await self._remove(name)
            raise self._launch_error(exc, request) from exc
        return _vm_of(_wire(raw))

    def _vm_body(
        self, request: LaunchRequest, *, nic_id: str, tags: Mapping[str, str]
    ) -> dict[str, Any]:
        properties: dict[str, Any] = {
            "hardwareProfile": {"vmSize": request.sku},
            "storageProfile": {
                "imageReference": {"id": request.image_id},
                "osDisk": {
                    "name": vm_name(request.nodeclaim),
                    "createOption": "FromImage",
                    "deleteOption": "Delete",
                    "diskSizeGB": request.os_disk_size_gb,
                    "managedDisk": {"storageAccountType": "Premium_LRS"},
                },
            },
            "osProfile": {
                "computerName": vm_name(request.nodeclaim),
                "adminUsername": request.admin_username,
                "customData": request.custom_data,
                "linuxConfiguration": {
                    "disablePasswordAuthentication": True,
                    "ssh": {
                        "publicKeys": [
                            {
                                "path": f"/home/{request.admin_username}/.ssh/authorized_keys",
                                "keyData": request.ssh_public_key,
                            }
                        ]
                    },
                },
            },
            "networkProfile": {
                "networkInterfaces": [
                    {"id": nic_id, "properties": {"primary": True, "deleteOption": "Delete"}}
                ]
            },
            "priority": "Spot" if request.spot else "Regular",
        }
        if request.spot:
            properties["evictionPolicy"] = "Delete"
            properties["billingProfile"] = {"maxPrice": -1}
        body: dict[str, Any] = {
            "location": self.location,
            "tags": dict(tags),
            "properties": properties,
        }
        if request.zone:
            body["zones"] = [request.zone]
        if request.identities:
            body["identity"] = {
                "type": "UserAssigned",
                "userAssignedIdentities": {identity: {} for identity in request.identities},
            }
        return body

    def _launch_error(self, exc: HttpResponseError, request: LaunchRequest) -> Exception:
        code = exc.error.code if exc.error is not None and exc.error.code else ""
        message = str(exc.message or exc)
        quota = code == "OperationNotAllowed" and any(
            m.lower() in message.lower() for m in _QUOTA_MARKERS
        )
        if code in CAPACITY_ERROR_CODES or quota or code == "QuotaExceeded":
            return CapacityError(
                f"{code}: {message}",
                code=code,
                sku=request.sku,
                zone=request.zone or "",
                capacity_type=request.capacity_type,
            )
        return CreateError(f"creating VM {vm_name(request.nodeclaim)}: {code}: {message}")

    async def _get_raw(self, name: str) -> VirtualMachine:
        try:
            vm = await self._compute.virtual_machines.get(self.resource_group, name)
        except ResourceNotFoundError as exc:
            raise NodeClaimNotFoundError(f"VM {name} not found") from exc
        return _vm_of(_wire(vm))

    async def get(self, nodeclaim_name: str) -> VirtualMachine:
        """The NodeClaim's VM; `NodeClaimNotFoundError` once it is gone."""
        return await self._get_raw(vm_name(nodeclaim_name))

    async def list(self) -> list[VirtualMachine]:
        """Every VM with this cluster's tag, through Resource Graph (one query, no GET per VM)."""
        query = (
            f"Resources | where type =~ '{VM_TYPE}' "
            f"| where tags['{azure.TAG_CLUSTER}'] == '{self.cluster_name}'"
        )
        result = await self._graph.resources(
            QueryRequest(subscriptions=[self.subscription_id], query=query)
        )
        return [_vm_of(row) for row in result.data or ()]

    async def nic_subnet(self, nodeclaim_name: str) -> str | None:
        """The subnet of the NodeClaim's NIC's primary IP configuration; None without a NIC."""
        try:
            nic = await self._network.network_interfaces.get(
                self.resource_group, vm_name(nodeclaim_name)
            )
        except ResourceNotFoundError:
            return None
        configs = (_wire(nic).get("properties") or {}).get("ipConfigurations") or []
        for config in configs:
            props = config.get("properties") or {}
            if props.get("primary", len(configs) == 1):
                return str((props.get("subnet") or {}).get("id") or "") or None
        return None

    async def delete(self, nodeclaim_name: str) -> None:
        """Delete the VM, then its NIC; `NodeClaimNotFoundError` when neither is left."""
        name = vm_name(nodeclaim_name)
        if not await self._remove(name):
            raise NodeClaimNotFoundError(f"VM {name} not found")

    async def _remove(self, name: str) -> bool:
        """Delete the VM, then the NIC, of that name; whether there was anything to delete."""
        found = False
        for operations in (self._compute.virtual_machines, self._network.network_interfaces):
            try:
                await operations.get(self.resource_group, name)
            except ResourceNotFoundError:
                continue
            found = True
            poller: _Poller = await operations.begin_delete(self.resource_group, name)
            await poller.result()
        return found


def _wire(model: Any) -> Mapping[str, Any]:
    """A SDK model in ARM's wire form (camelCase, `properties` nested)."""
    if isinstance(model, Mapping):
        return model
    serialize = getattr(model, "serialize", None)
    if callable(serialize):
        out: Mapping[str, Any] = serialize(keep_readonly=True)
        return out
    return dict(model)
