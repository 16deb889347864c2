"""EC2NodeClass resolution (reference §1.3-1.6): selector terms become the subnets, security
groups, AMIs and instance profile the class launches with, plus Karpenter's status conditions.

`NodeClassResolver.resolve` returns a new status and never writes it: the controller that plugs
this in patches the object. A selector that matches nothing gives a False condition whose message
names the selector, so `kubectl describe` says what to fix. SSM alias lookups are cached for 24
hours (Karpenter's `SSMCacheTTL`; a NodeClass's own `ssmParameter` for 5 minutes) on an
injectable clock.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import structlog

from karpy.apis.aws.v1 import labels as aws
from karpy.apis.aws.v1.ec2nodeclass import (
    AMISelectorTerm,
    AMIStatus,
    CapacityReservationStatus,
    EC2NodeClass,
    EC2NodeClassSpec,
    EC2NodeClassStatus,
    SecurityGroupStatus,
    SubnetStatus,
)
from karpy.apis.v1.common import Condition, NodeSelectorRequirement
from karpy.apis.v1.labels import LABEL_ARCH, LABEL_WINDOWS_BUILD
from karpy.cloudprovider.aws.cleanup import instance_profile_path
from karpy.cloudprovider.aws.clients import AWSClients
from karpy.cloudprovider.aws.clusterfacts import ClusterCIDRError, ClusterFacts
from karpy.cloudprovider.aws.compatibility import windows_build
from karpy.cloudprovider.aws.errors import ClientError, error_code, error_message
from karpy.cloudprovider.aws.placementgroups import PlacementGroups, selector_text
from karpy.cloudprovider.aws.reservations import (
    CapacityReservations,
    requeue_after,
    reservation_status,
)
from karpy.cloudprovider.aws.validation import DryRunValidator

__all__ = [
    "CUSTOM_SSM_CACHE_TTL",
    "SSM_CACHE_TTL",
    "NodeClassResolution",
    "NodeClassResolver",
    "alias_parameters",
    "best_amis",
    "filters_for_tags",
]

log = structlog.get_logger("karpy.cloudprovider.aws.instanceprofile")

SSM_CACHE_TTL: Final = timedelta(hours=24)
CUSTOM_SSM_CACHE_TTL: Final = timedelta(minutes=5)
CONDITION_READY: Final = "Ready"
ARCHITECTURES: Final = {"x86_64": "amd64", "arm64": "arm64"}

# Alias variants: (arch label, parameter arch, variant) and the requirement each adds.
_STANDARD: Final = (
    NodeSelectorRequirement(key=aws.LABEL_INSTANCE_GPU_COUNT, operator="DoesNotExist"),
    NodeSelectorRequirement(key=aws.LABEL_INSTANCE_ACCELERATOR_COUNT, operator="DoesNotExist"),
)
_NVIDIA: Final = (NodeSelectorRequirement(key=aws.LABEL_INSTANCE_GPU_COUNT, operator="Exists"),)
_NEURON: Final = (
    NodeSelectorRequirement(key=aws.LABEL_INSTANCE_ACCELERATOR_COUNT, operator="Exists"),
)


@dataclass(frozen=True)
class AliasParameter:
    """One SSM parameter an alias reads, and the requirements of the AMI it names."""

    name: str
    arch: str
    variant: tuple[NodeSelectorRequirement, ...]


def alias_parameters(family: str, version: str, k8s_version: str) -> list[AliasParameter]:
    """The SSM public parameters of an `family@version` alias (reference §1.5 table)."""
    latest = version == "latest"
    out: list[AliasParameter] = []
    if family == "al2023":
        combos = [
            ("x86_64", "amd64", "standard", _STANDARD),
            ("x86_64", "amd64", "nvidia", _NVIDIA),
            ("x86_64", "amd64", "neuron", _NEURON),
            ("arm64", "arm64", "standard", _STANDARD),
            ("arm64", "arm64", "nvidia", _NVIDIA),
        ]
        for arch, label, variant, reqs in combos:
            ver = (
                "recommended"
                if latest
                else f"amazon-eks-node-al2023-{arch}-{variant}-{k8s_version}-{version}"
            )
            name = (
                f"/aws/service/eks/optimized-ami/{k8s_version}/amazon-linux-2023/"
                f"{arch}/{variant}/{ver}/image_id"
            )
            out.append(AliasParameter(name, label, reqs))
    elif family == "bottlerocket":
        ver = "latest" if latest else version.removeprefix("v")
        base = f"/aws/service/bottlerocket/aws-k8s-{k8s_version}"
        # The standard x86_64 image also carries the Neuron driver; no standard image carries
        # NVIDIA's, so GPU types must take the `-nvidia` image.
        out.append(AliasParameter(f"{base}/x86_64/{ver}/image_id", "amd64", _STANDARD))
        out.append(AliasParameter(f"{base}/x86_64/{ver}/image_id", "amd64", _NEURON))
        out.append(AliasParameter(f"{base}/arm64/{ver}/image_id", "arm64", _STANDARD))
        for arch, label in (("x86_64", "amd64"), ("arm64", "arm64")):
            out.append(AliasParameter(f"{base}-nvidia/{arch}/{ver}/image_id", label, _NVIDIA))
    elif family == "al2":
        base = f"/aws/service/eks/optimized-ami/{k8s_version}"

        def al2(image: str, release: str) -> str:
            ver = "recommended" if latest else f"amazon-eks-{release}-{k8s_version}-{version}"
            return f"{base}/{image}/{ver}/image_id"

        out.append(AliasParameter(al2("amazon-linux-2", "node"), "amd64", _STANDARD))
        out.append(AliasParameter(al2("amazon-linux-2-arm64", "arm64-node"), "arm64", _STANDARD))
        # The AL2 GPU image carries both the NVIDIA and the Neuron drivers.
        gpu = al2("amazon-linux-2-gpu", "gpu-node")
        out.append(AliasParameter(gpu, "amd64", _NVIDIA))
        out.append(AliasParameter(gpu, "amd64", _NEURON))
    elif family.startswith("windows"):
        year = family.removeprefix("windows")
        build = windows_build(f"Windows{year}")
        reqs = (
            (NodeSelectorRequirement(key=LABEL_WINDOWS_BUILD, operator="In", values=[build]),)
            if build
            else ()
        )
        name = (
            f"/aws/service/ami-windows-latest/Windows_Server-{year}-English-Core-"
            f"EKS_Optimized-{k8s_version}/image_id"
        )
        out.append(AliasParameter(name, "amd64", reqs))
    return out


def filters_for_tags(tags: Mapping[str, str]) -> list[dict[str, Any]]:
    """EC2 filters for a selector's tags; a `*` value only asks for the key."""
    out: list[dict[str, Any]] = []
    for key, value in sorted(tags.items()):
        if value == "*":
            out.append({"Name": "tag-key", "Values": [key]})
        else:
            out.append({"Name": f"tag:{key}", "Values": [value]})
    return out


def _deprecated(image: Mapping[str, Any], now: datetime) -> bool:
    raw = image.get("DeprecationTime")
    if not raw:
        return False
    moment = datetime.fromisoformat(str(raw).replace("Z", "+00:00"))
    return moment <= now


def _requirements_key(reqs: Sequence[NodeSelectorRequirement]) -> str:
    return json.dumps([r.to_dict() for r in reqs], sort_keys=True)


def best_amis(
    candidates: Iterable[tuple[Mapping[str, Any], Sequence[NodeSelectorRequirement]]],
    now: datetime,
) -> list[AMIStatus]:
    """One AMI per distinct requirement set: non-deprecated beats deprecated, then the newest
    CreationDate, then the larger name; the result is newest first. Images of an architecture
    Kubernetes does not run (i386, none) are dropped."""
    best: dict[str, tuple[tuple[bool, str, str], AMIStatus]] = {}
    for image, extra in candidates:
        arch = ARCHITECTURES.get(str(image.get("Architecture") or ""))
        if arch is None:
            continue
        reqs = [NodeSelectorRequirement(key=LABEL_ARCH, operator="In", values=[arch]), *extra]
        deprecated = _deprecated(image, now)
        rank = (not deprecated, str(image.get("CreationDate") or ""), str(image.get("Name") or ""))
        status = AMIStatus(
            id=str(image["ImageId"]),
            name=image.get("Name"),
            deprecated=deprecated or None,
            requirements=reqs,
        )
        key = _requirements_key(reqs)
        if key not in best or rank > best[key][0]:
            best[key] = (rank, status)
    ranked = sorted(best.values(), key=lambda item: (item[0][1], item[1].id), reverse=True)
    return [status for _, status in ranked]


@dataclass
class NodeClassResolution:
    """What `resolve` found: the status fields and the conditions (Ready included)."""

    subnets: list[SubnetStatus] = field(default_factory=list)
    security_groups: list[SecurityGroupStatus] = field(default_factory=list)
    amis: list[AMIStatus] = field(default_factory=list)
    instance_profile: str | None = None
    capacity_reservations: list[CapacityReservationStatus] | None = None
    conditions: list[Condition] = field(default_factory=list)
    requeue_after: float | None = None
    """Seconds until the class should be resolved again for a part that changes on its own
    (a capacity reservation ending), or None for the controller's usual period."""

    def condition(self, type_: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == type_), None)

    @property
    def ready(self) -> bool:
        ready = self.condition(CONDITION_READY)
        return ready is not None and ready.status == "True"

    def apply(self, nodeclass: EC2NodeClass) -> EC2NodeClass:
        """A copy of `nodeclass` carrying this status (conditions keep their transition time
        when their status did not change)."""
        out = nodeclass.model_copy(deep=True)
        old = {c.type: c for c in (nodeclass.status.conditions or [])} if nodeclass.status else {}
        conditions = []
        for cond in self.conditions:
            prev = old.get(cond.type)
            if prev is not None and prev.status == cond.status:
                cond = cond.model_copy(update={"last_transition_time": prev.last_transition_time})
            conditions.append(cond)
        out.status = EC2NodeClassStatus(
            subnets=self.subnets or None,
            security_groups=self.security_groups or None,
            amis=self.amis or None,
            instance_profile=self.instance_profile,
            capacity_reservations=self.capacity_reservations or None,
            conditions=conditions,
        )
        return out


class NodeClassResolver:
    """Resolves EC2NodeClasses against EC2, SSM and IAM."""

    def __init__(
        self,
        clients: AWSClients,
        *,
        cluster_name: str,
        kubernetes_version: str,
        clock: Callable[[], float] = time.monotonic,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        ssm_ttl: timedelta = SSM_CACHE_TTL,
        facts: ClusterFacts | None = None,
        reservations: CapacityReservations | None = None,
        placement_groups: PlacementGroups | None = None,
        reserved_capacity: bool = True,
    ) -> None:
        self.clients = clients
        self.cluster_name = cluster_name
        self.kubernetes_version = kubernetes_version
        self.facts = facts
        """The cluster's service CIDR and current Kubernetes version; without it the version
        given here is used and no CIDR is required."""
        self._clock = clock
        self._now = now
        self._ssm_ttl = ssm_ttl.total_seconds()
        self._ssm: dict[str, tuple[float, str | None]] = {}
        self.validator = DryRunValidator(clients, cluster_name=cluster_name, clock=clock)
        self.reservations = reservations or CapacityReservations(clients, clock=clock, now=now)
        """Shared with the instance types and the launch path (availability counts)."""
        self.placement_groups = placement_groups or PlacementGroups(clients, clock=clock)
        """Shared with the launch path (the launch template's placement)."""
        self.reserved_capacity = reserved_capacity
        """The `ReservedCapacity` feature gate: capacity reservations are resolved only when on
        (the `CapacityReservationsReady` condition is then part of `Ready`)."""

    # -- subnets and security groups -----------------------------------------------------------

    async def subnets(self, spec: EC2NodeClassSpec) -> list[SubnetStatus]:
        """Subnets of every term, most available IPs first, then by id."""
        filter_sets: list[list[dict[str, Any]]] = []
        ids = [t.id for t in spec.subnet_selector_terms if t.id]
        if ids:
            filter_sets.append([{"Name": "subnet-id", "Values": ids}])
        for term in spec.subnet_selector_terms:
            if term.tags and not term.id:
                filter_sets.append(filters_for_tags(term.tags))
        found = await self._describe_each("describe_subnets", "Subnets", "SubnetId", filter_sets)
        ordered = sorted(
            found.values(),
            key=lambda s: (-int(s.get("AvailableIpAddressCount") or 0), str(s["SubnetId"])),
        )
        return [
            SubnetStatus(
                id=str(s["SubnetId"]),
                zone=str(s["AvailabilityZone"]),
                zone_id=s.get("AvailabilityZoneId"),
            )
            for s in ordered
        ]

    async def _describe_each(
        self, operation: str, result_key: str, id_key: str, filter_sets: list[list[dict[str, Any]]]
    ) -> dict[str, Mapping[str, Any]]:
        """Every object any filter set matches, once each by id (terms are ORed)."""
        found: dict[str, Mapping[str, Any]] = {}
        async with self.clients.client("ec2") as ec2:
            paginator = ec2.get_paginator(operation)
            for filters in filter_sets:
                async for page in paginator.paginate(Filters=filters):
                    for item in page.get(result_key) or ():
                        found[str(item[id_key])] = item
        return found

    async def security_groups(self, spec: EC2NodeClassSpec) -> list[SecurityGroupStatus]:
        """Security groups of every term, by id."""
        terms = spec.security_group_selector_terms
        filter_sets: list[list[dict[str, Any]]] = []
        ids = [t.id for t in terms if t.id]
        names = [t.name for t in terms if t.name]
        if ids:
            filter_sets.append([{"Name": "group-id", "Values": ids}])
        if names:
            filter_sets.append([{"Name": "group-name", "Values": names}])
        for term in terms:
            if term.tags and not term.id and not term.name:
                filter_sets.append(filters_for_tags(term.tags))
        found = await self._describe_each(
            "describe_security_groups", "SecurityGroups", "GroupId", filter_sets
        )
        return [
            SecurityGroupStatus(id=gid, name=found[gid].get("GroupName")) for gid in sorted(found)
        ]

    # -- AMIs ----------------------------------------------------------------------------------

    async def ssm_parameter(self, name: str, *, ttl: timedelta | None = None) -> str | None:
        """An SSM parameter's value (None when missing), cached for `ttl` (default the SSM
        TTL, 24 hours, for the public alias parameters)."""
        now = self._clock()
        cached = self._ssm.get(name)
        limit = self._ssm_ttl if ttl is None else ttl.total_seconds()
        if cached is not None and now - cached[0] < limit:
            return cached[1]
        async with self.clients.client("ssm") as ssm:
            try:
                response = await ssm.get_parameter(Name=name)
                value: str | None = str(response["Parameter"]["Value"])
            except ClientError as error:
                if error_code(error) != "ParameterNotFound":
                    raise
                value = None
        self._ssm[name] = (now, value)
        return value

    async def amis(self, spec: EC2NodeClassSpec) -> list[AMIStatus]:
        """The AMIs of the class: an alias through SSM, else id/name/owner/tags/ssmParameter."""
        alias = spec.alias()
        if alias is not None:
            return await self._alias_amis(*alias)
        return await self._selected_amis(spec.ami_selector_terms)

    async def _alias_amis(self, family: str, version: str) -> list[AMIStatus]:
        params = alias_parameters(family, version, self.kubernetes_version)
        by_id: dict[str, list[AliasParameter]] = {}
        for param in params:
            value = await self.ssm_parameter(param.name)
            if value:
                by_id.setdefault(value, []).append(param)
        if not by_id:
            return []
        images = await self._describe_images(
            [{"Name": "image-id", "Values": sorted(by_id)}], owners=None
        )
        candidates = []
        for image in images:
            for param in by_id.get(str(image["ImageId"]), ()):
                # An alias names the architecture in the parameter; moto images may lack it.
                arch = {v: k for k, v in ARCHITECTURES.items()}[param.arch]
                candidates.append(({**image, "Architecture": arch}, param.variant))
        return best_amis(candidates, self._now())

    async def _selected_amis(self, terms: Sequence[AMISelectorTerm]) -> list[AMIStatus]:
        queries: list[tuple[list[dict[str, Any]], list[str] | None]] = []
        ids = [t.id for t in terms if t.id]
        for term in terms:
            if term.ssm_parameter:
                value = await self.ssm_parameter(term.ssm_parameter, ttl=CUSTOM_SSM_CACHE_TTL)
                if value and value.startswith("ami-"):
                    ids.append(value)
        if ids:
            queries.append(([{"Name": "image-id", "Values": ids}], None))
        for term in terms:
            if term.id or term.alias or term.ssm_parameter:
                continue
            filters: list[dict[str, Any]] = []
            owners: list[str] | None = [term.owner] if term.owner else None
            if term.name:
                filters.append({"Name": "name", "Values": [term.name]})
                owners = owners or ["self", "amazon"]
            filters.extend(filters_for_tags(term.tags or {}))
            queries.append((filters, owners))
        candidates = []
        for filters, owners in queries:
            for image in await self._describe_images(filters, owners=owners):
                candidates.append((image, ()))
        return best_amis(candidates, self._now())

    async def _describe_images(
        self, filters: list[dict[str, Any]], *, owners: list[str] | None
    ) -> list[Mapping[str, Any]]:
        kwargs: dict[str, Any] = {
            "Filters": [*filters, {"Name": "state", "Values": ["available"]}],
            "IncludeDeprecated": True,
        }
        if owners:
            kwargs["Owners"] = owners
        async with self.clients.client("ec2") as ec2:
            response = await ec2.describe_images(**kwargs)
        return list(response.get("Images") or ())

    # -- instance profile ----------------------------------------------------------------------

    def instance_profile_name(self, nodeclass: EC2NodeClass, role: str) -> str:
        """The managed profile name for `role`: `<cluster>_<hash(region, name, uid, role)>`.
        A new role gives a new profile, as in Karpenter (whose name is salted with the time
        instead): the old profile keeps the old role for the nodes launched with it until the
        instance profile garbage collection finds no NodeClaim naming it."""
        seed = f"{self.clients.region}/{nodeclass.name}/{nodeclass.metadata.uid or ''}/{role}"
        return f"{self.cluster_name}_{int(hashlib.sha256(seed.encode()).hexdigest()[:15], 16)}"

    async def instance_profile(self, nodeclass: EC2NodeClass) -> str:
        """`spec.instanceProfile` as is, or a managed profile holding `spec.role`: the one in
        the status when it is this class's and holds the role, else the role's own profile,
        created when missing. A profile holding another role is never changed: nodes running
        with it keep their permissions."""
        spec = nodeclass.spec
        if spec.instance_profile:
            return spec.instance_profile
        role = (spec.role or "").rsplit("/", 1)[-1]
        region = self.clients.region
        path = instance_profile_path(region, self.cluster_name, nodeclass.metadata.uid)
        current = nodeclass.status.instance_profile if nodeclass.status else None
        name = self.instance_profile_name(nodeclass, role)
        tags = {
            **(spec.tags or {}),
            f"{aws.TAG_CLUSTER_PREFIX}{self.cluster_name}": "owned",
            aws.TAG_EKS_CLUSTER_NAME: self.cluster_name,
            aws.TAG_NODECLASS: nodeclass.name,
            "topology.kubernetes.io/region": region,
        }
        async with self.clients.client("iam") as iam:
            if current and current != name:
                existing = await _instance_profile(iam, current)
                if (
                    existing is not None
                    and existing.get("Path") == path
                    and _roles(existing) == [role]
                ):
                    return current
            profile = await _instance_profile(iam, name)
            if profile is None:
                profile = (
                    await iam.create_instance_profile(
                        InstanceProfileName=name,
                        Path=path,
                        Tags=[{"Key": k, "Value": v} for k, v in sorted(tags.items())],
                    )
                )["InstanceProfile"]
            roles = _roles(profile)
            if roles == [role]:
                return name
            for old in roles:
                await iam.remove_role_from_instance_profile(InstanceProfileName=name, RoleName=old)
            await iam.add_role_to_instance_profile(InstanceProfileName=name, RoleName=role)
        if current and current != name:
            log.info(
                "instance profile for a new role",
                EC2NodeClass={"name": nodeclass.name},
                role=role,
                old=current,
                new=name,
            )
        return name

    # -- the whole class -----------------------------------------------------------------------

    async def resolve(self, nodeclass: EC2NodeClass) -> NodeClassResolution:
        """Resolve every part and set AMIsReady, SubnetsReady, SecurityGroupsReady,
        InstanceProfileReady, ValidationSucceeded and Ready."""
        spec = nodeclass.spec
        result = NodeClassResolution()
        generation = nodeclass.metadata.generation
        stamp = self._now()

        def cond(type_: str, ok: bool, reason: str, message: str = "") -> None:
            result.conditions.append(
                Condition(
                    type=type_,
                    status="True" if ok else "False",
                    reason=reason,
                    message=message,
                    observed_generation=generation,
                    last_transition_time=stamp,
                )
            )

        if self.facts is not None:
            self.kubernetes_version = await self.facts.kubernetes_version()
        result.amis = await self.amis(spec)
        cond(
            aws.CONDITION_AMIS_READY,
            bool(result.amis),
            aws.CONDITION_AMIS_READY if result.amis else aws.REASON_AMI_NOT_FOUND,
            "" if result.amis else f"AMISelector did not match any AMIs{_describe_ami(spec)}",
        )
        result.subnets = await self.subnets(spec)
        cond(
            aws.CONDITION_SUBNETS_READY,
            bool(result.subnets),
            aws.CONDITION_SUBNETS_READY if result.subnets else aws.REASON_SUBNETS_NOT_FOUND,
            ""
            if result.subnets
            else "SubnetSelector did not match any Subnets "
            f"(subnetSelectorTerms {_terms(spec.subnet_selector_terms)})",
        )
        result.security_groups = await self.security_groups(spec)
        cond(
            aws.CONDITION_SECURITY_GROUPS_READY,
            bool(result.security_groups),
            aws.CONDITION_SECURITY_GROUPS_READY
            if result.security_groups
            else aws.REASON_SECURITY_GROUPS_NOT_FOUND,
            ""
            if result.security_groups
            else "SecurityGroupSelector did not match any SecurityGroups "
            f"(securityGroupSelectorTerms {_terms(spec.security_group_selector_terms)})",
        )
        if self.reserved_capacity:
            await self._resolve_reservations(nodeclass, result, cond)
        if spec.placement_group_selector is not None:
            await self._resolve_placement_group(spec, cond)
        try:
            result.instance_profile = await self.instance_profile(nodeclass)
            cond(aws.CONDITION_INSTANCE_PROFILE_READY, True, aws.CONDITION_INSTANCE_PROFILE_READY)
        except ClientError as error:
            cond(
                aws.CONDITION_INSTANCE_PROFILE_READY,
                False,
                "InstanceProfileCreationFailed",
                f"creating instance profile for spec.role {spec.role!r}: {error_message(error)}",
            )
        deps = [c for c in result.conditions if c.status != "True"]
        bad_tags = _restricted_tags(spec.tags or {})
        cidr_error = await self._cidr_error(spec)
        if cidr_error is not None:
            cond(
                aws.CONDITION_VALIDATION_SUCCEEDED,
                False,
                aws.REASON_CLUSTER_CIDR_RESOLUTION_FAILED,
                cidr_error,
            )
        elif deps:
            cond(
                aws.CONDITION_VALIDATION_SUCCEEDED,
                False,
                aws.REASON_DEPENDENCIES_NOT_READY,
                "Failed to validate EC2NodeClass, dependencies not ready: "
                + ", ".join(c.type for c in deps),
            )
        elif bad_tags:
            cond(
                aws.CONDITION_VALIDATION_SUCCEEDED,
                False,
                aws.REASON_TAG_VALIDATION_FAILED,
                f"spec.tags may not set restricted keys: {', '.join(bad_tags)}",
            )
        else:
            checked = await self.validator.validate(
                nodeclass,
                subnets=result.subnets,
                security_groups=[g.id for g in result.security_groups],
                amis=result.amis,
                instance_profile=result.instance_profile,
            )
            cond(aws.CONDITION_VALIDATION_SUCCEEDED, checked.ok, checked.reason, checked.message)
        failing = [c.type for c in result.conditions if c.status != "True"]
        cond(
            CONDITION_READY,
            not failing,
            CONDITION_READY if not failing else "UnhealthyDependents",
            "" if not failing else ", ".join(f"{t}=False" for t in failing),
        )
        return result

    async def _resolve_reservations(
        self,
        nodeclass: EC2NodeClass,
        result: NodeClassResolution,
        cond: Callable[..., None],
    ) -> None:
        """`status.capacityReservations` and `CapacityReservationsReady`. The condition is True
        whatever is found, as in Karpenter (the class still launches on-demand and spot), and
        its message names each selected reservation karpy will not launch into and why: in a
        zone without a subnet of the class, or of a kind karpy does not know. A failed lookup
        keeps the reservations found before and says so."""
        terms = nodeclass.spec.capacity_reservation_selector_terms or []
        previous = (nodeclass.status.capacity_reservations if nodeclass.status else None) or []
        ok = aws.CONDITION_CAPACITY_RESERVATIONS_READY
        if not terms:
            cond(ok, True, ok)
            return
        try:
            found = await self.reservations.select(terms)
        except ClientError as error:
            result.capacity_reservations = list(previous)
            result.requeue_after = 60.0
            cond(
                ok,
                True,
                ok,
                "DescribeCapacityReservations failed, keeping the reservations found before: "
                f"{error_code(error)}: {error_message(error)}",
            )
            return
        now = self._now()
        statuses: list[CapacityReservationStatus] = []
        unusable: list[str] = []
        zones = sorted({s.zone for s in result.subnets})
        for raw in sorted(found, key=lambda r: str(r["CapacityReservationId"])):
            status = reservation_status(raw, now)
            rid = str(raw["CapacityReservationId"])
            if status is None:
                unusable.append(
                    f"{rid} has instance match criteria {raw.get('InstanceMatchCriteria')!r} "
                    f"and type {raw.get('ReservationType') or 'default'!r}, which karpy does "
                    "not launch into"
                )
                continue
            statuses.append(status)
            if status.availability_zone not in zones:
                unusable.append(
                    f"{rid} ({status.instance_type}) is in {status.availability_zone}, where "
                    f"the class has no subnet (subnets in {', '.join(zones) or 'no zone'}): "
                    f"add a subnet in {status.availability_zone} to subnetSelectorTerms to "
                    "launch into it"
                )
        result.capacity_reservations = statuses
        result.requeue_after = requeue_after(statuses, now)
        message = ""
        if not found:
            message = (
                "capacityReservationSelectorTerms select no active capacity reservation "
                f"({_terms(terms)})"
            )
        elif unusable:
            message = "not launching into capacity reservation " + "; ".join(unusable)
        cond(ok, True, ok, message)

    async def _resolve_placement_group(
        self, spec: EC2NodeClassSpec, cond: Callable[..., None]
    ) -> None:
        """`PlacementGroupReady`: True when the selector names an available group."""
        selector = spec.placement_group_selector
        assert selector is not None
        ready = aws.CONDITION_PLACEMENT_GROUP_READY
        named = selector_text(selector)
        try:
            group = await self.placement_groups.get(selector)
        except ClientError as error:
            cond(
                ready,
                False,
                aws.REASON_PLACEMENT_GROUP_RESOLUTION_FAILED,
                f"Failed to resolve placement group {named} (placementGroupSelector): "
                f"{error_code(error)}: {error_message(error)}",
            )
            return
        if group is None:
            cond(
                ready,
                False,
                aws.REASON_PLACEMENT_GROUP_NOT_FOUND,
                f"Placement group {named} not found (placementGroupSelector): create it in "
                f"{self.clients.region} or select an existing group",
            )
        elif group.state != "available":
            cond(
                ready,
                False,
                "PlacementGroupNotAvailable",
                f"Placement group {named} is in state {group.state!r}, expected 'available'",
            )
        else:
            cond(ready, True, ready)

    async def _cidr_error(self, spec: EC2NodeClassSpec) -> str | None:
        """Why the service CIDR an AL2023 NodeConfig needs is unknown, or None (other
        families do not need it, as in Karpenter)."""
        if self.facts is None or spec.resolved_ami_family() != "AL2023":
            return None
        try:
            await self.facts.service_network()
        except ClusterCIDRError as error:
            return str(error)
        return None


def _terms(terms: Sequence[Any]) -> str:
    return json.dumps([t.to_dict() for t in terms], sort_keys=True, separators=(",", ":"))


def _describe_ami(spec: EC2NodeClassSpec) -> str:
    return f" (amiSelectorTerms {_terms(spec.ami_selector_terms)})"


def _restricted_tags(tags: Mapping[str, str]) -> list[str]:
    restricted = {
        aws.TAG_EKS_CLUSTER_NAME,
        aws.TAG_NODEPOOL,
        aws.TAG_NODECLAIM,
        aws.TAG_NODECLASS,
    }
    return sorted(k for k in tags if k in restricted or k.startswith(aws.TAG_CLUSTER_PREFIX))


async def _instance_profile(iam: Any, name: str) -> Mapping[str, Any] | None:
    """The instance profile `name`, or None when IAM has none of that name."""
    try:
        profile: Mapping[str, Any] = (await iam.get_instance_profile(InstanceProfileName=name))[
            "InstanceProfile"
        ]
    except ClientError as error:
        if error_code(error) != "NoSuchEntity":
            raise
        return None
    return profile


def _roles(profile: Mapping[str, Any]) -> list[str]:
    return [str(r["RoleName"]) for r in profile.get("Roles") or ()]
