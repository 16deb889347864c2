"""The AKSNodeClass status: what `AKSNodeClassResolver` finds for a class, and the controller that
writes it (`AKSNodeClassController`, registered by the plugin), with the upstream Azure provider's
conditions, reasons and order.

- `KubernetesVersionReady`: the apiserver's version (`status.kubernetesVersion`, `1.33.1`). It is
  resolved first, because the images depend on it.
- `ImagesReady`: the newest version of each AKS node image the class's `imageFamily` means at
  that Kubernetes version (`imagefamily`: `Ubuntu` is 22.04 before 1.34 and 24.04 from it,
  `AzureLinux` is Azure Linux 2 before 1.32 and 3 from it), per architecture and Hyper-V
  generation, in upstream's order of preference (`status.images`, each with its
  `kubernetes.io/arch` and `karpenter.azure.com/sku-hyperv-generation` requirements; a launch
  takes the first entry its instance type meets), so `status.images` moves to the new OS when
  the cluster's version crosses a boundary. False with `ImagesNotFound` when the gallery has no
  version, `SIGRequiredForFIPS` with `fipsMode: FIPS` (FIPS images are not in the community
  galleries), `ImageFamilyNotSupported` for the Windows families (the message says why and what
  to use instead), `KubernetesVersionNotReady` while the version is unknown.
- `SubnetsReady`: the class's `vnetSubnetID` (else `VNET_SUBNET_ID`) exists: False,
  `SubnetNotFound`, when ARM answers 404; a malformed ID is `SubnetIDInvalid`.
- `ValidationSucceeded`: the class can be launched with in this provision mode (`validate`).
  Upstream v1.7.x's runtime validation passes every admitted class; its later releases fail it as
  `IncompatibleProvisionMode` for image families the provision mode cannot launch, as karpy does
  for the Windows families in "aksscriptless".
- `Ready`: over the four, as operatorpkg computes a root condition (`UnhealthyDependents`, the
  message naming the False ones); a class not Ready is not launched with.

Conditions keep their transition time while their status holds and carry the generation they
describe. The class carries the finalizer `karpenter.azure.com/termination`: once deleted, it
waits while NodeClaims still use it (a NodeClaim's deletion wakes it), then lets it go.
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
from karpy.cloudprovider.azure.imagefamily import (
    WINDOWS_FAMILIES,
    image_definitions,
    image_id,
    windows_unsupported,
)
from karpy.kube import Client, Clock, Informer, NotFoundError, RealClock, Result
from karpy.kube.builder import Builder
from karpy.kube.client import PatchType

__all__ = [
    "DEPENDENTS",
    "AKSNodeClassController",
    "AKSNodeClassResolver",
    "validate",
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
    azure.CONDITION_VALIDATION_SUCCEEDED,
)
FIPS_UNSUPPORTED: Final = (
    "fipsMode FIPS needs FIPS node images, which AKS publishes only to its shared image "
    "galleries (upstream reads them only with UseSIG, in AKS-managed node auto-provisioning); "
    "karpy reads the community galleries: leave fipsMode out or set it to Disabled"
)

_SUBNET: Final = re.compile(
    r"/subscriptions/(?P<sub>[^/]+)/resourceGroups/(?P<rg>[^/]+)/providers/"
    r"Microsoft\.Network/virtualNetworks/(?P<vnet>[^/]+)/subnets/(?P<subnet>[^/]+)",
    re.IGNORECASE,
)


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

    async def images(
        self, family: str, kubernetes_version: str, *, fips: bool = False
    ) -> tuple[list[JSON], str, str]:
        """(`status.images`, reason, message) of a family at a Kubernetes version: the newest
        version of each of its image definitions, in preference order; no images with the reason
        they are missing."""
        if fips:
            return [], "SIGRequiredForFIPS", FIPS_UNSUPPORTED
        if family in WINDOWS_FAMILIES:
            return [], "ImageFamilyNotSupported", windows_unsupported(family)
        definitions = image_definitions(family, kubernetes_version)
        if not definitions:
            return [], "ImageFamilyNotSupported", f"imageFamily {family} is not known"
        images: list[JSON] = []
        missing: list[str] = []
        for found in definitions:
            version = await self._latest(found.gallery, found.definition)
            if version is None:
                missing.append(f"{found.gallery}/{found.definition}")
                continue
            images.append(
                {
                    "id": image_id(found.gallery, found.definition, version),
                    "requirements": found.requirements(),
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
        """The class's new status (conditions updated from its current ones). The Kubernetes
        version is resolved first: the images are chosen for it."""
        spec = obj.get("spec") or {}
        status: JSON = dict(obj.get("status") or {})
        conditions = Conditions.of(obj, now=now, dependents=DEPENDENTS)
        family = str(spec.get("imageFamily") or "Ubuntu")
        version = (await self._kubernetes_version()).lstrip("v").split("+")[0]
        if version:
            status["kubernetesVersion"] = version
            conditions.set_true(azure.CONDITION_KUBERNETES_VERSION_READY)
            images, reason, message = await self.images(
                family, version, fips=spec.get("fipsMode") == "FIPS"
            )
        else:
            conditions.set_false(
                azure.CONDITION_KUBERNETES_VERSION_READY,
                reason="KubernetesVersionUnknown",
                message="the apiserver reported no version",
            )
            images, reason, message = (
                [],
                "KubernetesVersionNotReady",
                "images are chosen for the cluster's Kubernetes version, which is not known yet",
            )
        if images:
            status["images"] = images
            conditions.set_true(azure.CONDITION_IMAGES_READY)
        else:
            status.pop("images", None)
            conditions.set_false(azure.CONDITION_IMAGES_READY, reason=reason, message=message)
        subnet_id = str(spec.get("vnetSubnetID") or self.default_subnet_id)
        ok, reason, message = await self.subnet(subnet_id)
        if ok:
            conditions.set_true(azure.CONDITION_SUBNETS_READY)
        else:
            conditions.set_false(azure.CONDITION_SUBNETS_READY, reason=reason, message=message)
        reason, message = validate(spec)
        if reason:
            conditions.set_false(
                azure.CONDITION_VALIDATION_SUCCEEDED, reason=reason, message=message
            )
        else:
            conditions.set_true(azure.CONDITION_VALIDATION_SUCCEEDED)
        conditions.compute_root()
        status["conditions"] = conditions.items
        return status


def validate(spec: Mapping[str, Any]) -> tuple[str, str]:
    """(reason, message) of why a class cannot be launched with in this provision mode; empty
    when it can. Upstream v1.7.x's runtime validation passes every class (its CRD rules reject
    the rest at admission); later releases fail it, as `IncompatibleProvisionMode`, for an image
    family the provision mode cannot launch, which here are the Windows families."""
    family = str(spec.get("imageFamily") or "")
    if family in WINDOWS_FAMILIES:
        return (
            "IncompatibleProvisionMode",
            f"imageFamily {family} is not supported with provision mode aksscriptless: "
            "upstream launches Windows nodes only with PROVISION_MODE=aksmachineapi",
        )
    return "", ""


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
