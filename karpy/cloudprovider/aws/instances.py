"""EC2 instances behind NodeClaims (reference §3.2-3.4): launch with CreateFleet, read back with
DescribeInstances, terminate. The methods follow the `CloudProvider` contract (types.py), so the
provider that plugs this in only finds the NodeClaim's EC2NodeClass and instance types.

A launch is idempotent per NodeClaim twice over: CreateFleet gets a `ClientToken` derived from
the NodeClaim, and when an instance may already exist for it, one tagged with the NodeClaim's
name in this cluster is adopted (EC2 keeps a token for a while only, and moto ignores tokens).
An instance may exist when this process already sent a CreateFleet for the NodeClaim, or when
the NodeClaim predates this process's first launch (an earlier leader may have launched it and
died before writing its status). A NodeClaim created since is looked up by nobody: that lookup
was one DescribeInstances per launch (rate-limited on EC2, a scan of every instance in moto);
the lookups still made are coalesced like DescribeInstances by ID (`DescribeBatcher`): a burst of
replacements shortly after start asks once for all their names.

Equal CreateFleet requests of a burst share one call (`FleetBatcher`), so the request carries
only the tags every NodeClaim of the batch shares; each instance is then tagged with its
NodeClaim, and remembered by ID, so a retry of that NodeClaim in this process finds it even if
the tagging failed.
"""

from __future__ import annotations

import asyncio
import builtins
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import structlog

from karpy.apis.aws.v1 import labels as aws
from karpy.apis.aws.v1.ec2nodeclass import KIND as EC2NODECLASS_KIND
from karpy.apis.aws.v1.ec2nodeclass import CapacityReservationStatus, EC2NodeClass
from karpy.apis.v1 import NodeClaim
from karpy.apis.v1.labels import (
    CAPACITY_TYPE_ON_DEMAND,
    CAPACITY_TYPE_RESERVED,
    CAPACITY_TYPE_SPOT,
    LABEL_CAPACITY_TYPE,
    LABEL_INSTANCE_TYPE,
    LABEL_NODEPOOL,
    LABEL_TOPOLOGY_ZONE,
)
from karpy.apis.v1.nodeclaim import NodeClaimStatus
from karpy.cloudprovider.aws.candidates import CandidateCache
from karpy.cloudprovider.aws.capacity import EFA
from karpy.cloudprovider.aws.clients import AWSClients
from karpy.cloudprovider.aws.clusterfacts import ClusterCIDRError, ClusterFacts
from karpy.cloudprovider.aws.compatibility import ami_requirements, image_for
from karpy.cloudprovider.aws.describebatch import DescribeBatcher
from karpy.cloudprovider.aws.errors import ClientError, error_code, error_message
from karpy.cloudprovider.aws.fleet import (
    FleetInstance,
    LaunchGroup,
    MinValuesError,
    client_token,
    fleet_request,
    offerings_for,
    overrides,
    parse_fleet_response,
    price_overlaid,
    reservation_of,
    zonal_subnets,
)
from karpy.cloudprovider.aws.fleetbatch import IDLE as FLEET_IDLE
from karpy.cloudprovider.aws.fleetbatch import MAX_WAIT as FLEET_MAX_WAIT
from karpy.cloudprovider.aws.fleetbatch import FleetBatcher
from karpy.cloudprovider.aws.launch import LaunchTemplates, launch_template_data
from karpy.cloudprovider.aws.nodeclasshash import hash_annotations
from karpy.cloudprovider.aws.placementgroups import PlacementGroup, PlacementGroups, selector_text
from karpy.cloudprovider.aws.reservations import CapacityReservations
from karpy.cloudprovider.aws.unavailable import UnavailableOfferings
from karpy.cloudprovider.aws.userdata import BootstrapOptions, Taint
from karpy.cloudprovider.types import (
    CreateError,
    InsufficientCapacityError,
    NodeClaimNotFoundError,
    NodeClassNotReadyError,
)
from karpy.scheduling.instancetypes import InstanceType
from karpy.scheduling.requirements import Requirements
from karpy.scheduling.resources import PODS, format_resources, parse_resources

__all__ = ["PROVIDER_ID_PREFIX", "AWSInstances", "ClusterInfo", "instance_id_of", "launch_tags"]

log = structlog.get_logger("karpy.cloudprovider.aws")

PROVIDER_ID_PREFIX: Final = "aws:///"
LIVE_STATES: Final = ("pending", "running", "stopping", "stopped", "shutting-down")
GONE_STATES: Final = frozenset({"shutting-down", "terminated"})
LT_NOT_FOUND: Final = "InvalidLaunchTemplateName.NotFoundException"
INSTANCE_NOT_FOUND: Final = "InvalidInstanceID.NotFound"
RESERVATION_FULL: Final = "ReservationCapacityExceeded"
MAX_LISTED_TYPES_IN_ERROR: Final = 10
SENT_REMEMBERED: Final = 10_000
CLAIM_LOOKUP_WINDOW: Final = 1.0
"""Seconds the lookups of NodeClaims an earlier leader may have launched gather before one
DescribeInstances: they come from a burst of launches reaching the provider over seconds, each
lookup filters on tags (a scan of every instance in moto, a rate-limited call on EC2), and a
launch waits at most this long for it."""
TAG_ATTEMPTS: Final = (0.0, 0.2, 1.0)
"""Delays before each CreateTags of a new instance: EC2 may not know an instance it has just
launched (eventual consistency) and answers InvalidInstanceID.NotFound for a moment."""
LEADER_OVERLAP: Final = timedelta(seconds=60)
"""NodeClaims created this soon after this process's first launch are still looked up: a
previous leader may have been launching until its lease ran out, and clocks differ a little."""


@dataclass(frozen=True)
class ClusterInfo:
    """What nodes need to know about the cluster to join it."""

    name: str
    endpoint: str
    ca_bundle: str | None = None
    cidr: str | None = None
    dns: tuple[str, ...] = ()
    extra_tags: Mapping[str, str] = field(default_factory=dict)


def instance_id_of(provider_id: str) -> str | None:
    """`i-…` from `aws:///<zone>/<instance id>`."""
    if not provider_id.startswith(PROVIDER_ID_PREFIX):
        return None
    tail = provider_id[len(PROVIDER_ID_PREFIX) :].rsplit("/", 1)[-1]
    return tail if tail.startswith("i-") else None


def launch_tags(
    cluster: str, nodeclass: EC2NodeClass, nodepool: str | None, nodeclaim: str | None = None
) -> dict[str, str]:
    """The NodeClass's tags with karpy's own over them: cluster ownership, NodePool, NodeClass
    and, for the instance itself, the NodeClaim and Name."""
    tags = dict(nodeclass.spec.tags or {})
    tags[f"{aws.TAG_CLUSTER_PREFIX}{cluster}"] = "owned"
    tags[aws.TAG_EKS_CLUSTER_NAME] = cluster
    tags[aws.TAG_NODECLASS] = nodeclass.name
    if nodepool:
        tags[aws.TAG_NODEPOOL] = nodepool
    if nodeclaim:
        tags[aws.TAG_NODECLAIM] = nodeclaim
        tags["Name"] = nodeclaim
    return tags


def _tags(instance: Mapping[str, Any]) -> dict[str, str]:
    return {str(t["Key"]): str(t.get("Value") or "") for t in instance.get("Tags") or ()}


def _nodeclaim_tag(instance: Mapping[str, Any]) -> str:
    return _tags(instance).get(aws.TAG_NODECLAIM, "")


def _state(instance: Mapping[str, Any]) -> str:
    return str((instance.get("State") or {}).get("Name") or "")


class AWSInstances:
    """Launches, reads, lists and terminates the cluster's EC2 instances."""

    def __init__(
        self,
        clients: AWSClients,
        cluster: ClusterInfo,
        *,
        unavailable: UnavailableOfferings,
        launch_templates: LaunchTemplates | None = None,
        wall: Callable[[], datetime] = lambda: datetime.now(UTC),
        facts: ClusterFacts | None = None,
        fleet_idle: float = FLEET_IDLE,
        fleet_max_wait: float = FLEET_MAX_WAIT,
        reservations: CapacityReservations | None = None,
        placement_groups: PlacementGroups | None = None,
        reserved_capacity: bool = False,
    ) -> None:
        self._clients = clients
        self.reservations = reservations
        """Counts of the instances left in each capacity reservation (shared with the
        instance types and the EC2NodeClass resolver)."""
        self.placement_groups = placement_groups or PlacementGroups(clients)
        self.reserved_capacity = reserved_capacity
        """The `ReservedCapacity` gate: launch templates say whether they use reservations."""
        self.cluster = cluster
        self.facts = facts
        """Where the service CIDR and cluster DNS IP come from when `cluster` lacks them."""
        self.unavailable = unavailable
        self.launch_templates = launch_templates or LaunchTemplates(clients)
        self.candidates = CandidateCache()
        self._wall = wall
        self._by_id = DescribeBatcher(self._describe_ids)
        self._by_claim = DescribeBatcher(
            self._describe_claims, key=_nodeclaim_tag, window=CLAIM_LOOKUP_WINDOW
        )
        self._first_launch: datetime | None = None
        self._sent: OrderedDict[tuple[str, str], None] = OrderedDict()
        """(name, uid) of the NodeClaims this process sent a CreateFleet for, the latest
        `SENT_REMEMBERED`."""
        self._given: OrderedDict[tuple[str, str], FleetInstance] = OrderedDict()
        """The instance each of those NodeClaims was given by a fleet, so a retry finds it
        by ID even before (or without) its NodeClaim tag."""
        self.fleets = FleetBatcher(self._create_fleet, idle=fleet_idle, max_wait=fleet_max_wait)
        """Merges equal CreateFleet requests; `fleet_idle`/`fleet_max_wait` are its window."""

    # -- create --------------------------------------------------------------------------------

    async def create(
        self,
        claim: NodeClaim,
        nodeclass: EC2NodeClass,
        instance_types: Sequence[InstanceType],
    ) -> NodeClaim:
        """Launch one instance for `claim` from `instance_types` (the NodePool's, already built
        for `nodeclass`) and return the claim with providerID, imageID, labels, capacity."""
        self._check_ready(nodeclass)
        by_name = {it.name: it for it in instance_types}
        placement = await self._placement(nodeclass)
        given = await self._given_instance(claim)
        if given is not None:
            log.info("found instance of nodeclaim", NodeClaim={"name": claim.name})
            return self._launched(claim, nodeclass, given, by_name, placement)
        if self._may_be_launched(claim):
            existing = await self._find_launched(claim.name)
            if existing is not None:
                log.info("found instance of nodeclaim", NodeClaim={"name": claim.name})
                return self._launched(
                    claim, nodeclass, _as_fleet_instance(existing), by_name, placement
                )
        reqs = Requirements.from_node_selector_terms(r.to_dict() for r in claim.spec.requirements)
        requests = parse_resources(
            claim.spec.resources.requests if claim.spec.resources else None,
            field="spec.resources.requests",
        )
        try:
            found = await self.candidates.get(instance_types, reqs, requests)
        except MinValuesError as err:
            raise CreateError(
                f"truncating instance types, {err}", reason="InstanceTypeFilteringFailed"
            ) from err
        capacity_type = found.capacity_type
        if capacity_type is None:
            raise InsufficientCapacityError(
                "all requested instance types were unavailable during launch "
                f"({found.compatible} compatible of {len(instance_types)})"
            )
        chosen = found.chosen
        partition = _partition_for(reqs, placement)
        instance = await self._launch(
            claim,
            nodeclass,
            chosen,
            reqs,
            capacity_type,
            placement=placement,
            partition=partition,
            retry=True,
        )
        return self._launched(claim, nodeclass, instance, by_name, placement, partition)

    async def _placement(self, nodeclass: EC2NodeClass) -> PlacementGroup | None:
        """The placement group the class launches into (None without a selector); a group
        that is gone or not available stops the launch as a not-Ready class does."""
        selector = nodeclass.spec.placement_group_selector
        if selector is None:
            return None
        try:
            group = await self.placement_groups.get(selector)
        except ClientError as error:
            raise NodeClassNotReadyError(
                f'EC2NodeClass "{nodeclass.name}" is not ready: placement group '
                f"{selector_text(selector)}: {error_message(error)}"
            ) from error
        if group is None or group.state != "available":
            state = "not found" if group is None else f"in state {group.state!r}"
            raise NodeClassNotReadyError(
                f'EC2NodeClass "{nodeclass.name}" is not ready: placement group '
                f"{selector_text(selector)} is {state}"
            )
        return group

    async def _given_instance(self, claim: NodeClaim) -> FleetInstance | None:
        """The live instance a fleet of this process gave `claim`, tagged as its own."""
        key = (claim.name, claim.metadata.uid or "")
        given = self._given.get(key)
        if given is None:
            return None
        found = await self._by_id.get(given.instance_id)
        if found is None or _state(found) in GONE_STATES:
            del self._given[key]
            return None
        if _nodeclaim_tag(found) != claim.name:
            await self._tag(given.instance_id, claim.name)
        return given

    def _may_be_launched(self, claim: NodeClaim) -> bool:
        """Whether an instance may already exist for `claim` (see the module docstring)."""
        if self._first_launch is None:
            self._first_launch = self._wall()
        if (claim.name, claim.metadata.uid or "") in self._sent:
            return True
        created = claim.metadata.creation_timestamp
        if created is None:
            return True
        if created.tzinfo is None:
            created = created.replace(tzinfo=UTC)
        return created < self._first_launch + LEADER_OVERLAP

    def _check_ready(self, nodeclass: EC2NodeClass) -> None:
        status = nodeclass.status
        ready = (
            next((c for c in (status.conditions or []) if c.type == "Ready"), None)
            if status
            else None
        )
        if ready is None or ready.status != "True":
            reason = f": {ready.message}" if ready is not None and ready.message else ""
            raise NodeClassNotReadyError(f'EC2NodeClass "{nodeclass.name}" is not ready{reason}')
        gen = nodeclass.metadata.generation
        if gen is not None and ready.observed_generation not in (None, gen):
            raise NodeClassNotReadyError(
                f'EC2NodeClass "{nodeclass.name}" status is for generation '
                f"{ready.observed_generation}, not {gen}"
            )

    async def _launch(
        self,
        claim: NodeClaim,
        nodeclass: EC2NodeClass,
        types: Sequence[InstanceType],
        reqs: Requirements,
        capacity_type: str,
        *,
        placement: PlacementGroup | None,
        partition: int | None = None,
        retry: bool,
    ) -> FleetInstance:
        nodepool = claim.nodepool_name
        reserved = self._reservations_for(nodeclass, types, reqs, capacity_type)
        kind = reserved[0].reservation_type if reserved else None
        interruptible = bool(reserved[0].interruptible) if reserved else False
        groups = await self._launch_groups(
            claim,
            nodeclass,
            types,
            reservations=reserved,
            placement=placement,
            partition=partition,
        )
        status = nodeclass.status
        subnets = zonal_subnets((status.subnets if status else None) or [])
        prioritized = price_overlaid(types)
        configs = overrides(groups, reqs, capacity_type, subnets, prioritized=prioritized)
        names = [it.name for it in types]
        if not configs:
            raise InsufficientCapacityError(
                f"no subnet in the zones of the offerings of {_list(names)} ({capacity_type})"
            )
        request = fleet_request(
            configs,
            capacity_type,
            # The NodeClaim's own tags come after launch: equal requests share one fleet.
            launch_tags(self.cluster.name, nodeclass, nodepool),
            token=client_token(claim.name, claim.metadata.uid),
            context=nodeclass.spec.context,
            prioritized=prioritized,
            reservation_type=kind,
            interruptible=interruptible,
        )
        self._sent[(claim.name, claim.metadata.uid or "")] = None
        while len(self._sent) > SENT_REMEMBERED:
            self._sent.popitem(last=False)
        try:
            response = await self.fleets.create(request)
        except ClientError as error:
            if error_code(error) == LT_NOT_FOUND and retry:
                for group in groups:
                    self.launch_templates.forget(group.template)
                return await self._launch(
                    claim,
                    nodeclass,
                    types,
                    reqs,
                    capacity_type,
                    placement=placement,
                    partition=partition,
                    retry=False,
                )
            raise CreateError(
                f"creating fleet: {error_message(error)}",
                reason=error_code(error) or "CreateFleetFailed",
            ) from error
        instance, errors = parse_fleet_response(response)
        # Partial errors name offerings without capacity even when another one launched.
        only_capacity = self.unavailable.record_fleet_errors(errors, capacity_type)
        if capacity_type == CAPACITY_TYPE_RESERVED:
            self._reservations_full(errors, types)
            if instance is not None:
                instance = replace(instance, capacity_type=CAPACITY_TYPE_RESERVED)
                rid = _reservation_at(types, instance.instance_type, instance.zone)
                if rid is not None and self.reservations is not None:
                    self.reservations.mark_launched(rid)
        if instance is not None:
            log.info(
                "launched instance",
                NodeClaim={"name": claim.name},
                id=instance.instance_id,
                **{
                    "instance-type": instance.instance_type,
                    "zone": instance.zone,
                    "capacity-type": instance.capacity_type,
                },
            )
            self._given[(claim.name, claim.metadata.uid or "")] = instance
            while len(self._given) > SENT_REMEMBERED:
                self._given.popitem(last=False)
            await self._tag(instance.instance_id, claim.name)
            return instance
        codes = sorted({str(e.get("ErrorCode")) for e in errors}) or ["no instances returned"]
        message = f"creating fleet ({capacity_type}) of {_list(names)}: {', '.join(codes)}"
        if only_capacity:
            raise InsufficientCapacityError(message)
        raise CreateError(message, reason="FleetError")

    async def _create_fleet(self, request: dict[str, Any]) -> Mapping[str, Any]:
        """One CreateFleet call (the `FleetBatcher`'s way out)."""
        async with self._clients.client("ec2") as ec2:
            response: Mapping[str, Any] = await ec2.create_fleet(**request)
        return response

    async def _tag(self, instance_id: str, claim_name: str) -> None:
        """Tag a launched instance with its NodeClaim (`karpenter.sh/nodeclaim`, `Name`), by
        which a later leader finds it. A failure is logged, not raised: the instance is this
        NodeClaim's either way, and this process finds it by ID."""
        tags = [
            {"Key": aws.TAG_NODECLAIM, "Value": claim_name},
            {"Key": "Name", "Value": claim_name},
        ]
        for attempt, delay in enumerate(TAG_ATTEMPTS):
            await asyncio.sleep(delay)
            try:
                async with self._clients.client("ec2") as ec2:
                    await ec2.create_tags(Resources=[instance_id], Tags=tags)
                return
            except ClientError as error:
                last = attempt == len(TAG_ATTEMPTS) - 1
                if error_code(error) != INSTANCE_NOT_FOUND or last:
                    log.warning(
                        "tagging instance with its nodeclaim failed",
                        NodeClaim={"name": claim_name},
                        id=instance_id,
                        error=error_message(error),
                    )
                    return

    def _reservations_for(
        self,
        nodeclass: EC2NodeClass,
        types: Sequence[InstanceType],
        reqs: Requirements,
        capacity_type: str,
    ) -> list[CapacityReservationStatus]:
        """For a reserved launch, the reservations it may use: those of one kind (on-demand
        reservation, capacity block, interruptible), the kind of the cheapest offering, since
        one fleet asks for one target capacity type. Empty for other launches."""
        if capacity_type != CAPACITY_TYPE_RESERVED:
            return []
        known = {
            r.id: r
            for r in (nodeclass.status.capacity_reservations if nodeclass.status else None) or ()
        }
        offered = sorted(
            (o.price, it.name, rid)
            for it in types
            for o in offerings_for(it, reqs, capacity_type)
            if (rid := reservation_of(o)) in known
        )
        if not offered:
            return []

        def kind(r: CapacityReservationStatus) -> tuple[str | None, bool]:
            return r.reservation_type, bool(r.interruptible)

        first = kind(known[offered[0][2]])
        return [
            known[rid] for rid in dict.fromkeys(o[2] for o in offered) if kind(known[rid]) == first
        ]

    def _reservations_full(
        self, errors: Sequence[Mapping[str, Any]], types: Sequence[InstanceType]
    ) -> None:
        """`ReservationCapacityExceeded` for an override: its reservation has no room left."""
        if self.reservations is None:
            return
        for error in errors:
            if error.get("ErrorCode") != RESERVATION_FULL:
                continue
            override = (error.get("LaunchTemplateAndOverrides") or {}).get("Overrides") or {}
            rid = _reservation_at(
                types, str(override.get("InstanceType")), override.get("AvailabilityZone")
            )
            if rid is not None:
                self.reservations.mark_unavailable(rid)

    async def _launch_groups(
        self,
        claim: NodeClaim,
        nodeclass: EC2NodeClass,
        types: Sequence[InstanceType],
        *,
        reservations: Sequence[CapacityReservationStatus] = (),
        placement: PlacementGroup | None = None,
        partition: int | None = None,
    ) -> list[LaunchGroup]:
        """Types grouped by (AMI, max pods, EFA interfaces, capacity reservation), each group
        with its ensured launch template (a reserved launch has one per reservation it may
        use, as each template targets one)."""
        status = nodeclass.status
        amis = ami_requirements((status.amis if status else None) or [])
        # A NodeClaim asking for EFA gets every EFA interface its type has, one per network
        # card (Karpenter's rule), so types are grouped by that count too.
        requests = (claim.spec.resources.requests if claim.spec.resources else None) or {}
        wants_efa = EFA in requests
        by_id = {r.id: r for r in reservations}
        grouped: dict[tuple[str, int, int, str | None], list[InstanceType]] = {}
        for it in types:
            image = image_for(it.requirements, amis)
            if image is None:
                continue
            efa = int(it.capacity.get(EFA, 0)) if wants_efa else 0
            pods = int(it.capacity.get(PODS, 0))
            if not by_id:
                grouped.setdefault((image, pods, efa, None), []).append(it)
                continue
            for rid in dict.fromkeys(reservation_of(o) for o in it.offerings):
                if rid in by_id:
                    grouped.setdefault((image, pods, efa, rid), []).append(it)
        lt_tags = launch_tags(self.cluster.name, nodeclass, claim.nodepool_name)
        kubelet = nodeclass.spec.kubelet
        cidr, dns, family = await self._network(nodeclass)
        groups = []
        for (image, pods, efa, rid), members in grouped.items():
            options = BootstrapOptions(
                cluster_name=self.cluster.name,
                cluster_endpoint=self.cluster.endpoint,
                ca_bundle=self.cluster.ca_bundle,
                cluster_cidr=cidr,
                max_pods=pods or None,
                cluster_dns=dns,
                labels=dict(claim.metadata.labels or {}),
                kubelet={
                    k: v
                    for k, v in (kubelet.to_dict() if kubelet else {}).items()
                    if k not in ("maxPods", "clusterDNS")
                },
                taints=[
                    Taint(key=t.key, value=t.value, effect=t.effect)
                    for t in [*(claim.spec.taints or []), *(claim.spec.startup_taints or [])]
                ],
                custom_user_data=nodeclass.spec.user_data,
                instance_store_policy=nodeclass.spec.instance_store_policy,
                ip_family=family,
            )
            data = launch_template_data(
                nodeclass,
                image_id=image,
                bootstrap=options,
                tags=lt_tags,
                ip_family=family,
                efa_interfaces=efa,
                reserved_capacity=self.reserved_capacity,
                capacity_reservation=by_id.get(rid) if rid else None,
                placement_group_id=placement.id if placement else None,
                placement_partition=partition,
            )
            template = await self.launch_templates.ensure(data, lt_tags)
            groups.append(LaunchGroup(template.name, image, members, reservation=rid))
        if not groups:
            raise InsufficientCapacityError(
                f"no AMI of EC2NodeClass {nodeclass.name!r} matches the requirements of "
                f"{_list([it.name for it in types])}"
            )
        return groups

    async def _network(
        self, nodeclass: EC2NodeClass
    ) -> tuple[str | None, tuple[str, ...], str | None]:
        """The service CIDR, the cluster DNS IPs and the IP family for the node. DNS:
        `kubelet.clusterDNS`, else the kube-dns Service's ClusterIP (Karpenter's rule).
        Family: the service CIDR's, else the kube-dns IP's (Karpenter's only source, which
        reads IPv4 when the Service cannot be read), else unknown. AL2023 cannot join without
        the CIDR, so its launch waits for it as for a not-Ready class."""
        kubelet = nodeclass.spec.kubelet
        dns = tuple(kubelet.cluster_dns) if kubelet and kubelet.cluster_dns else self.cluster.dns
        cidr = self.cluster.cidr
        kube_dns: str | None = None
        if self.facts is not None:
            kube_dns = await self.facts.dns_ip()
            if not dns and kube_dns:
                dns = (kube_dns,)
            if cidr is None:
                try:
                    cidr = (await self.facts.service_network()).cidr
                except ClusterCIDRError as error:
                    if nodeclass.spec.resolved_ami_family() == "AL2023":
                        raise NodeClassNotReadyError(
                            f'EC2NodeClass "{nodeclass.name}" is not ready: {error}'
                        ) from error
        family_of = cidr or kube_dns or (self.cluster.dns[0] if self.cluster.dns else None)
        family = None if family_of is None else ("ipv6" if ":" in family_of else "ipv4")
        return cidr, dns, family

    async def _find_launched(self, claim_name: str) -> Mapping[str, Any] | None:
        """A live instance already launched for this NodeClaim in this cluster."""
        return await self._by_claim.get(claim_name)

    async def _describe_claims(self, names: Sequence[str]) -> builtins.list[Mapping[str, Any]]:
        """The live instances of this cluster tagged with any of these NodeClaim names (one
        DescribeInstances for a batch of `_find_launched` calls)."""
        found = await self._describe(
            Filters=[
                {"Name": f"tag:{aws.TAG_NODECLAIM}", "Values": list(names)},
                {"Name": f"tag:{aws.TAG_EKS_CLUSTER_NAME}", "Values": [self.cluster.name]},
                {"Name": "instance-state-name", "Values": list(LIVE_STATES)},
            ]
        )
        return [i for i in found if _state(i) not in GONE_STATES]

    def _launched(
        self,
        claim: NodeClaim,
        nodeclass: EC2NodeClass,
        instance: FleetInstance,
        types: Mapping[str, InstanceType],
        placement: PlacementGroup | None = None,
        partition: int | None = None,
    ) -> NodeClaim:
        it = types.get(instance.instance_type)
        node_labels = dict(claim.metadata.labels or {})
        status: dict[str, Any] = claim.status.to_dict() if claim.status else {}
        if it is not None:
            node_labels.update(it.requirements.labels())
            status["capacity"] = format_resources(it.capacity)
            status["allocatable"] = format_resources(it.allocatable)
            offering = next(
                (
                    o
                    for o in it.offerings
                    if o.zone == instance.zone and o.capacity_type == instance.capacity_type
                ),
                None,
            )
            if offering is not None:
                node_labels.update(offering.requirements.labels())
        node_labels[LABEL_INSTANCE_TYPE] = instance.instance_type
        node_labels[LABEL_CAPACITY_TYPE] = instance.capacity_type
        if instance.zone:
            node_labels[LABEL_TOPOLOGY_ZONE] = instance.zone
        node_labels[aws.LABEL_NODECLASS] = nodeclass.name
        if placement is not None:
            node_labels[aws.LABEL_PLACEMENT_GROUP_ID] = placement.id
        # The partition is known only when the launch asked for one (EC2 picks otherwise).
        if partition is not None:
            node_labels[aws.LABEL_PLACEMENT_GROUP_PARTITION] = str(partition)
        else:
            node_labels.pop(aws.LABEL_PLACEMENT_GROUP_PARTITION, None)
        status["providerID"] = f"{PROVIDER_ID_PREFIX}{instance.zone or ''}/{instance.instance_id}"
        if instance.image_id:
            status["imageID"] = instance.image_id
        out = claim.model_copy(deep=True)
        out.metadata.labels = node_labels
        out.metadata.annotations = {
            **(claim.metadata.annotations or {}),
            **hash_annotations(nodeclass, self.cluster.ca_bundle),
        }
        profile = nodeclass.status.instance_profile if nodeclass.status else None
        if profile:
            out.metadata.annotations[aws.ANNOTATION_INSTANCE_PROFILE_NAME] = profile
        out.status = NodeClaimStatus.model_validate(status)
        return out

    # -- get, list, delete ---------------------------------------------------------------------

    async def _describe(self, **kwargs: Any) -> list[Mapping[str, Any]]:
        out: list[Mapping[str, Any]] = []
        async with self._clients.client("ec2") as ec2:
            paginator = ec2.get_paginator("describe_instances")
            async for page in paginator.paginate(**kwargs):
                for reservation in page.get("Reservations") or ():
                    out.extend(reservation.get("Instances") or ())
        return out

    async def describe(self, provider_id: str) -> Mapping[str, Any]:
        """The live instance of a providerID; `NodeClaimNotFoundError` when it is gone."""
        instance_id = instance_id_of(provider_id)
        if instance_id is None:
            raise NodeClaimNotFoundError(f"providerID {provider_id!r} is not an EC2 instance")
        found = await self._by_id.get(instance_id)
        if found is None or _state(found) == "terminated":
            raise NodeClaimNotFoundError(f'instance "{instance_id}" not found')
        return found

    async def _describe_ids(self, instance_ids: Sequence[str]) -> builtins.list[Mapping[str, Any]]:
        """One DescribeInstances for a batch of `describe` calls (see `DescribeBatcher`)."""
        return await self._describe(Filters=[{"Name": "instance-id", "Values": list(instance_ids)}])

    async def get(self, provider_id: str) -> NodeClaim:
        return self.claim_of(await self.describe(provider_id))

    async def list(self) -> builtins.list[NodeClaim]:
        """Every live instance tagged as this cluster's and launched for a NodePool."""
        found = await self._describe(
            Filters=[
                {"Name": f"tag:{aws.TAG_EKS_CLUSTER_NAME}", "Values": [self.cluster.name]},
                {"Name": "tag-key", "Values": [aws.TAG_NODEPOOL]},
                {"Name": "instance-state-name", "Values": list(LIVE_STATES)},
            ]
        )
        # moto merges filters of the same name, so the NodeClass tag is checked here.
        return [
            self.claim_of(i)
            for i in found
            if aws.TAG_NODECLASS in _tags(i) and _state(i) != "terminated"
        ]

    async def delete(self, claim: NodeClaim) -> None:
        """Terminate the claim's instance; `NodeClaimNotFoundError` once it is gone (or going)."""
        provider_id = (claim.status.provider_id if claim.status else None) or ""
        instance = await self.describe(provider_id)
        if _state(instance) in GONE_STATES:
            raise NodeClaimNotFoundError(f'instance "{instance["InstanceId"]}" is terminating')
        async with self._clients.client("ec2") as ec2:
            try:
                await ec2.terminate_instances(InstanceIds=[instance["InstanceId"]])
            except ClientError as error:
                if error_code(error) == INSTANCE_NOT_FOUND:
                    raise NodeClaimNotFoundError(str(instance["InstanceId"])) from None
                raise
        # Its slot in the reservation is free again (counted until EC2 next answers).
        if self.reservations is not None and _reserved(instance):
            self.reservations.mark_terminated(str(instance["CapacityReservationId"]))

    def claim_of(self, instance: Mapping[str, Any]) -> NodeClaim:
        """A NodeClaim describing an instance, rebuilt from its tags."""
        tags = _tags(instance)
        zone = str((instance.get("Placement") or {}).get("AvailabilityZone") or "")
        capacity_type = _capacity_type(instance)
        node_labels = {
            LABEL_INSTANCE_TYPE: str(instance.get("InstanceType")),
            LABEL_TOPOLOGY_ZONE: zone,
            LABEL_CAPACITY_TYPE: capacity_type,
        }
        if aws.TAG_NODEPOOL in tags:
            node_labels[LABEL_NODEPOOL] = tags[aws.TAG_NODEPOOL]
        if aws.TAG_NODECLASS in tags:
            node_labels[aws.LABEL_NODECLASS] = tags[aws.TAG_NODECLASS]
        launch = instance.get("LaunchTime")
        meta: dict[str, Any] = {
            "name": tags.get(aws.TAG_NODECLAIM),
            "labels": node_labels,
            "creationTimestamp": launch,
        }
        if _state(instance) in GONE_STATES:
            meta["deletionTimestamp"] = meta["creationTimestamp"]
        return NodeClaim.model_validate(
            {
                "metadata": meta,
                "spec": {
                    "requirements": [],
                    "nodeClassRef": {
                        "group": aws.GROUP,
                        "kind": EC2NODECLASS_KIND,
                        "name": tags.get(aws.TAG_NODECLASS, "unknown"),
                    },
                },
                "status": {
                    "providerID": f"{PROVIDER_ID_PREFIX}{zone}/{instance['InstanceId']}",
                    "imageID": instance.get("ImageId"),
                },
            }
        )


def _partition_for(reqs: Requirements, placement: PlacementGroup | None) -> int | None:
    """The partition of a partition placement group a launch asks for: the lowest one the
    NodeClaim allows when it names any (a topology spread over partitions), else None (EC2
    spreads the instances over the partitions itself)."""
    if placement is None or placement.strategy != "partition" or not placement.partition_count:
        return None
    wanted = reqs.get(aws.LABEL_PLACEMENT_GROUP_PARTITION)
    if wanted is None:
        return None
    allowed = [n for n in range(1, placement.partition_count + 1) if wanted.has(str(n))]
    if len(allowed) == placement.partition_count:
        return None
    return allowed[0] if allowed else None


def _reservation_at(
    types: Sequence[InstanceType], instance_type: str, zone: str | None
) -> str | None:
    """The capacity reservation of `instance_type`'s reserved offering in `zone`."""
    for it in types:
        if it.name != instance_type:
            continue
        for o in it.offerings:
            if o.capacity_type == CAPACITY_TYPE_RESERVED and o.zone == zone:
                return reservation_of(o)
    return None


def _reserved(instance: Mapping[str, Any]) -> bool:
    """Whether an instance runs in a capacity reservation it was launched into only
    (Karpenter's test: a reservation id and the `capacity-reservations-only` preference)."""
    spec = instance.get("CapacityReservationSpecification") or {}
    return bool(instance.get("CapacityReservationId")) and (
        spec.get("CapacityReservationPreference") == "capacity-reservations-only"
    )


def _as_fleet_instance(instance: Mapping[str, Any]) -> FleetInstance:
    return FleetInstance(
        instance_id=str(instance["InstanceId"]),
        instance_type=str(instance.get("InstanceType")),
        zone=(instance.get("Placement") or {}).get("AvailabilityZone"),
        subnet_id=instance.get("SubnetId"),
        image_id=instance.get("ImageId"),
        capacity_type=_capacity_type(instance),
    )


def _capacity_type(instance: Mapping[str, Any]) -> str:
    if instance.get("InstanceLifecycle") == "spot" or instance.get("SpotInstanceRequestId"):
        return CAPACITY_TYPE_SPOT
    return CAPACITY_TYPE_RESERVED if _reserved(instance) else CAPACITY_TYPE_ON_DEMAND


def _list(names: Sequence[str]) -> str:
    shown = ", ".join(names[:MAX_LISTED_TYPES_IN_ERROR])
    more = len(names) - MAX_LISTED_TYPES_IN_ERROR
    return f"[{shown}{f', and {more} more' if more > 0 else ''}]"
