"""The AKSNodeClass status: what `AKSNodeClassResolver` finds for a class, and the controller that
writes it (`AKSNodeClassController`, registered by the plugin).

- `ImagesReady`: the newest version of the AKS node image of the class's `imageFamily` in the
  community galleries, per architecture (`status.images`, each with its `kubernetes.io/arch`
  requirement). Windows families are not served yet: False, `ImageFamilyNotSupported`.
- `KubernetesVersionReady`: the apiserver's version (`status.kubernetesVersion`, `1.33.1`).
- `SubnetsReady`: the class's `vnetSubnetID` (else `VNET_SUBNET_ID`) exists: False,
  `SubnetNotFound`, when ARM answers 404; a malformed ID is `SubnetIDInvalid`.
- `Ready`: over the three, as operatorpkg computes a root condition.

Conditions keep their transition time while their status holds and carry the generation they
describe. The class carries the finalizer `karpenter.azure.com/termination`: once deleted, it
waits while NodeClaims still use it (a NodeClaim's deletion wakes it), then lets it go. Not yet:
`ValidationSucceeded`.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any, Final

import structlog
from azure.core.exceptions import ResourceNotFoundError

from karpy.apis.azure.v1beta1 import labels as azure
from karpy.apis.conditions import Conditions
from karpy.apis.descriptors import AKSNODECLASSES
from karpy.apis.v1.labels import LABEL_ARCH
from karpy.kube import Client, Clock, Informer, NotFoundError, RealClock, Result
from karpy.kube.builder import Builder
from karpy.kube.client import PatchType

__all__ = [
    "DEPENDENTS",
    "IMAGE_DEFINITIONS",
    "AKSNodeClassController",
    "AKSNodeClassResolver",
    "image_id",
]

JSON = dict[str, Any]
log = structlog.get_logger("karpy.cloudprovider.azure.nodeclass")

NOT_READY_REQUEUE: Final = 60.0
READY_REQUEUE: Final = 300.0
IN_USE_REQUEUE: Final = 600.0
DEPENDENTS: Final = (
    azure.CONDITION_IMAGES_READY,
    azure.CONDITION_KUBERNETES_VERSION_READY,
    azure.CONDITION_SUBNETS_READY,
)

_UBUNTU: Final = "AKSUbuntu-38d80f77-467a-481f-a8d4-09b6d4220bd2"
_AZURE_LINUX: Final = "AKSAzureLinux-f7c7cda5-1c9a-4bdc-a222-9614c968580b"
IMAGE_DEFINITIONS: Final[dict[str, dict[str, tuple[str, str]]]] = {
    "Ubuntu": {
        "amd64": (_UBUNTU, "2204gen2containerd"),
        "arm64": (_UBUNTU, "2204gen2arm64containerd"),
    },
    "Ubuntu2204": {
        "amd64": (_UBUNTU, "2204gen2containerd"),
        "arm64": (_UBUNTU, "2204gen2arm64containerd"),
    },
    "Ubuntu2404": {
        "amd64": (_UBUNTU, "2404gen2containerd"),
        "arm64": (_UBUNTU, "2404gen2arm64containerd"),
    },
    "AzureLinux": {
        "amd64": (_AZURE_LINUX, "V2gen2"),
        "arm64": (_AZURE_LINUX, "V2gen2arm64"),
    },
}
"""Image family -> architecture -> (community gallery, image definition) of the AKS node images,
as the upstream provider names them."""

_SUBNET: Final = re.compile(
    r"/subscriptions/(?P<sub>[^/]+)/resourceGroups/(?P<rg>[^/]+)/providers/"
    r"Microsoft\.Network/virtualNetworks/(?P<vnet>[^/]+)/subnets/(?P<subnet>[^/]+)",
    re.IGNORECASE,
)


def image_id(gallery: str, definition: str, version: str) -> str:
    return f"/CommunityGalleries/{gallery}/images/{definition}/versions/{version}"


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else -1 for p in version.split("."))


class AKSNodeClassResolver:
    """Resolves an AKSNodeClass's images, Kubernetes version and subnet against ARM."""

    def __init__(
        self,
        *,
        compute: Any,
        network: Any,
        location: str,
        default_subnet_id: str,
        kubernetes_version: Callable[[], Awaitable[str]],
    ) -> None:
        self._compute = compute
        self._network = network
        self.location = location
        self.default_subnet_id = default_subnet_id
        self._kubernetes_version = kubernetes_version

    async def _latest(self, gallery: str, definition: str) -> str | None:
        try:
            pages = self._compute.community_gallery_image_versions.list(
                self.location, gallery, definition
            )
            names = [str(v.name) async for v in pages]
        except ResourceNotFoundError:
            return None
        return max(names, key=_version_key) if names else None

    async def images(self, family: str) -> tuple[list[JSON], str, str]:
        """(`status.images`, reason, message); no images with the reason they are missing."""
        definitions = IMAGE_DEFINITIONS.get(family)
        if definitions is None:
            return [], "ImageFamilyNotSupported", f"imageFamily {family} is not supported yet"
        images: list[JSON] = []
        missing: list[str] = []
        for arch, (gallery, definition) in definitions.items():
            version = await self._latest(gallery, definition)
            if version is None:
                missing.append(f"{gallery}/{definition}")
                continue
            images.append(
                {
                    "id": image_id(gallery, definition, version),
                    "requirements": [{"key": LABEL_ARCH, "operator": "In", "values": [arch]}],
                }
            )
        if not images:
            return [], "ImagesNotFound", f"no versions of {', '.join(missing)}"
        return images, "", ""

    async def subnet(self, subnet_id: str) -> tuple[bool, str, str]:
        """(exists, reason, message) of a subnet resource ID."""
        m = _SUBNET.fullmatch(subnet_id)
        if m is None:
            return False, "SubnetIDInvalid", f"{subnet_id!r} is not a subnet resource ID"
        try:
            await self._network.subnets.get(m["rg"], m["vnet"], m["subnet"])
        except ResourceNotFoundError:
            return False, "SubnetNotFound", f"subnet {subnet_id} not found"
        return True, "", ""

    async def resolve(self, obj: Mapping[str, Any], *, now: datetime) -> JSON:
        """The class's new status (conditions updated from its current ones)."""
        spec = obj.get("spec") or {}
        status: JSON = dict(obj.get("status") or {})
        conditions = Conditions.of(obj, now=now, dependents=DEPENDENTS)
        images, reason, message = await self.images(str(spec.get("imageFamily") or "Ubuntu"))
        if images:
            status["images"] = images
            conditions.set_true(azure.CONDITION_IMAGES_READY)
        else:
            status.pop("images", None)
            conditions.set_false(azure.CONDITION_IMAGES_READY, reason=reason, message=message)
        version = (await self._kubernetes_version()).lstrip("v").split("+")[0]
        if version:
            status["kubernetesVersion"] = version
            conditions.set_true(azure.CONDITION_KUBERNETES_VERSION_READY)
        else:
            conditions.set_false(
                azure.CONDITION_KUBERNETES_VERSION_READY,
                reason="KubernetesVersionUnknown",
                message="the apiserver reported no version",
            )
        subnet_id = str(spec.get("vnetSubnetID") or self.default_subnet_id)
        ok, reason, message = await self.subnet(subnet_id)
        if ok:
            conditions.set_true(azure.CONDITION_SUBNETS_READY)
        else:
            conditions.set_false(azure.CONDITION_SUBNETS_READY, reason=reason, message=message)
        conditions.compute_root()
        status["conditions"] = conditions.items
        return status


class AKSNodeClassController:
    """Writes each AKSNodeClass's resolved status; a class not Ready is looked at again after a
    minute, a Ready one after five (new node image versions show up without an edit)."""

    name: Final = "aksnodeclass.status"

    def __init__(
        self,
        *,
        client: Client,
        nodeclasses: Informer,
        nodeclaims: Informer,
        resolver: AKSNodeClassResolver,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.nodeclasses = nodeclasses
        self.nodeclaims = nodeclaims
        self.resolver = resolver
        self.clock = clock or RealClock()

    def setup(self, builder: Builder[str]) -> None:
        builder.watches(self.nodeclasses).watches_changes(
            self.nodeclaims,
            lambda old, new: _nodeclass_of_claim(old) if new is None and old else None,
        ).workers(4).log_kind("AKSNodeClass")

    async def reconcile(self, name: str) -> Result | None:
        obj = self.nodeclasses.get(name)
        if obj is None:
            return None
        meta = obj.get("metadata") or {}
        finalizers = list(meta.get("finalizers") or ())
        try:
            if meta.get("deletionTimestamp"):
                return await self._finalize(name, finalizers)
            if azure.FINALIZER_TERMINATION not in finalizers:
                await self.client.patch(
                    AKSNODECLASSES,
                    name,
                    [
                        {
                            "op": "add",
                            "path": "/metadata/finalizers/-",
                            "value": azure.FINALIZER_TERMINATION,
                        }
                        if finalizers
                        else {
                            "op": "add",
                            "path": "/metadata/finalizers",
                            "value": [azure.FINALIZER_TERMINATION],
                        }
                    ],
                    patch_type=PatchType.JSON,
                )
        except NotFoundError:
            return None
        status = await self.resolver.resolve(obj, now=self.clock.wall())
        if status != (obj.get("status") or {}):
            cleared = {k: None for k in obj.get("status") or {} if k not in status}
            try:
                await self.client.patch_status(AKSNODECLASSES, name, {"status": status | cleared})
            except NotFoundError:
                return None
        ready = Conditions(status["conditions"], now=self.clock.wall()).is_true("Ready")
        return Result(requeue_after=READY_REQUEUE if ready else NOT_READY_REQUEUE)

    async def _finalize(self, name: str, finalizers: list[str]) -> Result | None:
        if azure.FINALIZER_TERMINATION not in finalizers:
            return None
        users = sorted(
            str((c.get("metadata") or {}).get("name") or "")
            for c in self.nodeclaims.list()
            if _nodeclass_of_claim(c) == name
        )
        if users:
            log.info(
                "waiting on nodeclaims to terminate",
                AKSNodeClass={"name": name},
                nodeclaims=users[:10],
            )
            return Result(requeue_after=IN_USE_REQUEUE)
        index = finalizers.index(azure.FINALIZER_TERMINATION)
        await self.client.patch(
            AKSNODECLASSES,
            name,
            [
                {
                    "op": "test",
                    "path": f"/metadata/finalizers/{index}",
                    "value": azure.FINALIZER_TERMINATION,
                },
                {"op": "remove", "path": f"/metadata/finalizers/{index}"},
            ],
            patch_type=PatchType.JSON,
        )
        return None


def _nodeclass_of_claim(claim: Mapping[str, Any]) -> str | None:
    """The AKSNodeClass a NodeClaim's nodeClassRef names, or None for another kind."""
    ref = (claim.get("spec") or {}).get("nodeClassRef") or {}
    group = ref.get("group") or str(ref.get("apiVersion") or "").split("/", 1)[0]
    if group != azure.GROUP or ref.get("kind") != "AKSNodeClass":
        return None
    name = ref.get("name")
    return str(name) if name else None
