"""`karpenter.k8s.aws/v1` EC2NodeClass: how AWS instances are launched (subnets, security groups,
AMIs, IAM role, block devices, kubelet settings), as of Karpenter's AWS provider v1.14.1.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Final, Literal

from pydantic import Field

from karpy.apis.aws.v1 import labels as aws
from karpy.apis.resource import CustomResource, PrinterColumn
from karpy.apis.schema import K8sModel, Rule, Schema
from karpy.apis.v1.common import (
    Condition,
    Int32,
    Int64,
    NodeSelectorRequirement,
    ObjectMeta,
    Time,
)

API_VERSION: Final = "karpenter.k8s.aws/v1"
KIND: Final = "EC2NodeClass"

AMIFamily = Literal[
    "AL2", "AL2023", "Bottlerocket", "Custom", "Windows2019", "Windows2022", "Windows2025"
]
# alias family -> amiFamily value
ALIAS_FAMILIES: Final = {
    "al2": "AL2",
    "al2023": "AL2023",
    "bottlerocket": "Bottlerocket",
    "windows2019": "Windows2019",
    "windows2022": "Windows2022",
    "windows2025": "Windows2025",
}
WINDOWS_ALIAS_FAMILIES: Final = ("windows2019", "windows2022", "windows2025")
ALIAS_VERSION_LATEST: Final = "latest"


def _quoted(values: tuple[str, ...] | list[str]) -> str:
    return ", ".join(f"'{v}'" for v in values)


def _cel_list(values: tuple[str, ...] | list[str]) -> str:
    return "[" + ",".join(f"'{v}'" for v in values) + "]"


_TAG_SELECTOR_RULE = Rule(
    "self.all(k, k != '' && self[k] != '')", "empty tag keys or values aren't supported"
)
SelectorTags = Annotated[dict[str, str], Schema(max_properties=20, rules=(_TAG_SELECTOR_RULE,))]
"""Tags to match; a value of `*` matches any value of the key."""


class SubnetSelectorTerm(K8sModel):
    """Selects subnets; the fields of a term are ANDed."""

    tags: SelectorTags | None = None
    """Tags the subnet must carry; `*` matches any value."""
    id: Annotated[str, Schema(pattern="subnet-[0-9a-z]+")] | None = None
    """The subnet id."""


class SecurityGroupSelectorTerm(K8sModel):
    """Selects security groups; the fields of a term are ANDed."""

    tags: SelectorTags | None = None
    """Tags the security group must carry; `*` matches any value."""
    id: Annotated[str, Schema(pattern="sg-[0-9a-z]+")] | None = None
    """The security group id."""
    name: str | None = None
    """The security group's name (GroupName, not the Name tag)."""


class CapacityReservationSelectorTerm(K8sModel):
    """Selects capacity reservations; the fields of a term are ANDed."""

    tags: SelectorTags | None = None
    """Tags the reservation must carry; `*` matches any value."""
    id: Annotated[str, Schema(pattern="^cr-[0-9a-z]+$")] | None = None
    """The capacity reservation id."""
    owner_id: Annotated[str, Schema(pattern="^[0-9]{12}$")] | None = Field(None, alias="ownerID")
    """The account that owns the reservation."""
    instance_match_criteria: Literal["open", "targeted"] | None = None
    """How instances are matched to reservations."""


_ALIAS_RULES = (
    Rule(
        "self.matches('^[a-zA-Z0-9]+@.+$')",
        "'alias' is improperly formatted, must match the format 'family@version'",
    ),
    Rule(
        f"self.split('@')[0] in {_cel_list(list(ALIAS_FAMILIES))}",
        f"family is not supported, must be one of the following: {_quoted(list(ALIAS_FAMILIES))}",
    ),
    Rule(
        f"self.split('@')[0] in {_cel_list(WINDOWS_ALIAS_FAMILIES)} ? "
        "self.split('@')[1] == 'latest' : true",
        "windows families may only specify version 'latest'",
    ),
)


class AMISelectorTerm(K8sModel):
    """Selects AMIs; the fields of a term are ANDed. An alias term stands alone."""

    alias: Annotated[str, Schema(max_length=30, rules=_ALIAS_RULES)] | None = None
    """An EKS optimized AMI as `family@version` (`al2023@latest`, `al2023@v20240625`)."""
    tags: SelectorTags | None = None
    """Tags the AMI must carry; `*` matches any value."""
    id: Annotated[str, Schema(pattern="ami-[0-9a-z]+")] | None = None
    """The AMI id."""
    name: str | None = None
    """The AMI name (not the Name tag)."""
    owner: str | None = None
    """The owner: an account id, `self`, `amazon` or `aws-marketplace`."""
    ssm_parameter: str | None = None
    """The name or ARN of an SSM parameter whose value is an AMI id."""


class PlacementGroupSelector(K8sModel):
    """Selects one placement group by name or by id."""

    k8s_rules = (
        Rule(
            "has(self.name) != has(self.id)",
            "expected exactly one of ['name', 'id'] in placementGroupSelector",
        ),
    )

    name: Annotated[str, Schema(min_length=1, max_length=255)] | None = None
    """The placement group name."""
    id: Annotated[str, Schema(pattern="^pg-[0-9a-z]+$")] | None = None
    """The placement group id."""


EVICTION_SIGNALS: Final = (
    "memory.available",
    "nodefs.available",
    "nodefs.inodesFree",
    "imagefs.available",
    "imagefs.inodesFree",
    "pid.available",
)
RESERVED_RESOURCES: Final = ("cpu", "memory", "ephemeral-storage", "pid")
EVICTION_VALUE_PATTERN: Final = (
    r"^((\d{1,2}(\.\d{1,2})?|100(\.0{1,2})?)%||(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))"
    r"(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?)$"
)


def _eviction_keys_rule(field: str) -> Rule:
    return Rule(
        f"self.all(x, x in {_cel_list(EVICTION_SIGNALS)})",
        f"valid keys for {field} are {_cel_list(EVICTION_SIGNALS)}",
    )


def _reserved_rules(field: str) -> tuple[Rule, ...]:
    keys = " || ".join(f"x=='{k}'" for k in RESERVED_RESOURCES)
    return (
        Rule(f"self.all(x, {keys})", f"valid keys for {field} are {_cel_list(RESERVED_RESOURCES)}"),
        Rule(
            "self.all(x, !self[x].startsWith('-'))",
            f"{field} value cannot be a negative resource quantity",
        ),
    )


EvictionValue = Annotated[str, Schema(pattern=EVICTION_VALUE_PATTERN)]


class KubeletConfiguration(K8sModel):
    """Kubelet settings for the nodes (a subset of the upstream KubeletConfiguration)."""

    cluster_dns: list[str] | None = Field(None, alias="clusterDNS")
    """IP addresses of the cluster DNS server."""
    max_pods: Annotated[Int32, Schema(minimum=0)] | None = None
    """The maximum number of pods on a node."""
    pods_per_core: Annotated[Int32, Schema(minimum=0)] | None = None
    """Pods per CPU core; never more than maxPods."""
    system_reserved: (
        Annotated[dict[str, str], Schema(rules=_reserved_rules("systemReserved"))] | None
    ) = None
    """Resources reserved for OS system daemons and kernel memory."""
    kube_reserved: (
        Annotated[dict[str, str], Schema(rules=_reserved_rules("kubeReserved"))] | None
    ) = None
    """Resources reserved for Kubernetes system components."""
    eviction_hard: (
        Annotated[dict[str, EvictionValue], Schema(rules=(_eviction_keys_rule("evictionHard"),))]
        | None
    ) = None
    """Hard eviction thresholds by signal."""
    eviction_soft: (
        Annotated[dict[str, EvictionValue], Schema(rules=(_eviction_keys_rule("evictionSoft"),))]
        | None
    ) = None
    """Soft eviction thresholds by signal."""
    eviction_soft_grace_period: (
        Annotated[dict[str, str], Schema(rules=(_eviction_keys_rule("evictionSoftGracePeriod"),))]
        | None
    ) = None
    """Grace periods of the soft eviction thresholds by signal."""
    eviction_max_pod_grace_period: Int32 | None = None
    """Maximum grace period (seconds) for pods evicted by soft thresholds."""
    image_gc_high_threshold_percent: Annotated[Int32, Schema(minimum=0, maximum=100)] | None = (
        Field(None, alias="imageGCHighThresholdPercent")
    )
    """Disk usage percent above which image garbage collection always runs."""
    image_gc_low_threshold_percent: Annotated[Int32, Schema(minimum=0, maximum=100)] | None = Field(
        None, alias="imageGCLowThresholdPercent"
    )
    """Disk usage percent image garbage collection frees down to."""
    cpu_cfs_quota: bool | None = Field(None, alias="cpuCFSQuota")
    """Enforce CPU CFS quota for containers with CPU limits."""


_KUBELET_RULES = (
    Rule(
        "has(self.imageGCHighThresholdPercent) && has(self.imageGCLowThresholdPercent) ?  "
        "self.imageGCHighThresholdPercent > self.imageGCLowThresholdPercent  : true",
        "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent",
    ),
    Rule(
        "has(self.evictionSoft) ? "
        "self.evictionSoft.all(e, (e in self.evictionSoftGracePeriod)):true",
        "evictionSoft OwnerKey does not have a matching evictionSoftGracePeriod",
    ),
    Rule(
        "has(self.evictionSoftGracePeriod) ? "
        "self.evictionSoftGracePeriod.all(e, (e in self.evictionSoft)):true",
        "evictionSoftGracePeriod OwnerKey does not have a matching evictionSoft",
    ),
)


class MetadataOptions(K8sModel):
    """Instance Metadata Service exposure for the nodes."""

    http_endpoint: Literal["enabled", "disabled"] = "enabled"
    """Whether the metadata endpoint is reachable."""
    http_protocol_ipv6: Literal["enabled", "disabled"] = Field("disabled", alias="httpProtocolIPv6")
    """Whether the IPv6 metadata endpoint is enabled."""
    http_put_response_hop_limit: Annotated[Int64, Schema(minimum=1, maximum=64)] = 1
    """Hop limit of metadata PUT responses (1..64)."""
    http_tokens: Literal["required", "optional"] = "required"
    """Whether IMDSv2 session tokens are required."""


VOLUME_SIZE_PATTERN: Final = (
    r"^((?:[1-9][0-9]{0,3}|[1-4][0-9]{4}|[5][0-8][0-9]{3}|59000)Gi|"
    r"(?:[1-9][0-9]{0,3}|[1-5][0-9]{4}|[6][0-3][0-9]{3}|64000)G|"
    r"([1-9]||[1-5][0-7]|58)Ti|([1-9]||[1-5][0-9]|6[0-3]|64)T)$"
)


class BlockDevice(K8sModel):
    """An EBS volume."""

    k8s_rules = (
        Rule(
            "has(self.snapshotID) || has(self.volumeSize)",
            "snapshotID or volumeSize must be defined",
        ),
        Rule(
            "!has(self.volumeInitializationRate) || "
            "(has(self.snapshotID) && self.snapshotID != '')",
            "snapshotID must be set when volumeInitializationRate is set",
        ),
    )

    delete_on_termination: bool | None = None
    """Delete the volume when the instance terminates."""
    encrypted: bool | None = None
    """Encrypt the volume."""
    iops: Int64 | None = None
    """Provisioned IOPS (io1, io2, gp3)."""
    kms_key_id: str | None = Field(None, alias="kmsKeyID")
    """The KMS key for encryption."""
    snapshot_id: str | None = Field(None, alias="snapshotID")
    """The EBS snapshot to create the volume from."""
    throughput: Int64 | None = None
    """Throughput in MiB/s (gp3)."""
    volume_initialization_rate: Annotated[Int32, Schema(minimum=100, maximum=300)] | None = None
    """Snapshot initialization rate in MiB/s; needs snapshotID."""
    volume_size: Annotated[str, Schema(pattern=VOLUME_SIZE_PATTERN)] | None = None
    """Size in Gi, G, Ti or T."""
    volume_type: Literal["standard", "io1", "io2", "gp2", "sc1", "st1", "gp3"] | None = None
    """The EBS volume type."""


class BlockDeviceMapping(K8sModel):
    """A block device of the instance."""

    device_name: str | None = None
    """The device name, e.g. /dev/xvda."""
    ebs: BlockDevice | None = None
    """The EBS volume."""
    root_volume: bool | None = None
    """Whether this device holds the kubelet root directory (at most one)."""


class NetworkInterface(K8sModel):
    """One network interface of the instance."""

    network_card_index: Annotated[Int32, Schema(minimum=0)]
    """The network card the interface is attached to."""
    device_index: Annotated[Int32, Schema(minimum=0)]
    """The device index on the network card."""
    interface_type: Literal["interface", "efa-only"]
    """A regular ENI (`interface`) or an EFA-only interface."""


_NETWORK_INTERFACE_RULES = (
    Rule(
        "self.exists(x, x.networkCardIndex == 0 && x.deviceIndex == 0 && "
        "x.interfaceType == 'interface')",
        "networkInterfaces must include a primary interface (networkCardIndex 0, deviceIndex 0, "
        "interfaceType 'interface')",
    ),
    Rule(
        "self.all(x, self.exists_one(y, y.networkCardIndex == x.networkCardIndex && "
        "y.deviceIndex == x.deviceIndex))",
        "networkInterfaces must not repeat a (networkCardIndex, deviceIndex) pair",
    ),
    Rule(
        "self.all(x, x.interfaceType != 'efa-only' || self.exists_one(y, "
        "y.interfaceType == 'efa-only' && y.networkCardIndex == x.networkCardIndex))",
        "networkInterfaces may have at most one 'efa-only' interface per network card",
    ),
)


class ConnectionTracking(K8sModel):
    """Connection tracking timeouts of the instance's interfaces (Nitro instance types only)."""

    k8s_rules = (
        Rule(
            "has(self.tcpEstablishedTimeout) || has(self.udpStreamTimeout) || has(self.udpTimeout)",
            "connectionTracking must set at least one of ['tcpEstablishedTimeout', "
            "'udpStreamTimeout', 'udpTimeout']",
        ),
    )

    tcp_established_timeout: Annotated[Int32, Schema(minimum=60, maximum=432000)] | None = None
    """Timeout (seconds) of established TCP connections."""
    udp_stream_timeout: Annotated[Int32, Schema(minimum=60, maximum=180)] | None = None
    """Timeout (seconds) of UDP flows seen in both directions."""
    udp_timeout: Annotated[Int32, Schema(minimum=30, maximum=60)] | None = None
    """Timeout (seconds) of UDP flows seen in one direction."""


class CPUOptions(K8sModel):
    """CPU options of the instances."""

    nested_virtualization: Literal["enabled", "disabled"] | None = None
    """Enable nested virtualization (limits the instance types)."""


_SPEC_RULES = (
    Rule(
        "(has(self.role) && !has(self.instanceProfile)) || "
        "(!has(self.role) && has(self.instanceProfile))",
        "must specify exactly one of ['role', 'instanceProfile']",
    ),
    *(
        Rule(
            "!has(self.amiFamily) || (self.amiSelectorTerms.exists(x, has(x.alias) && "
            f"x.alias.find('^[^@]+') == '{alias}') ? (self.amiFamily == 'Custom' || "
            f"self.amiFamily == '{family}') : true)",
            f"if set, amiFamily must be '{family}' or 'Custom' when using "
            f"{'an' if family.startswith('A') else 'a'} {family} alias",
        )
        for alias, family in ALIAS_FAMILIES.items()
    ),
    Rule(
        "self.amiSelectorTerms.exists(x, has(x.alias)) ? true : has(self.amiFamily)",
        "must specify amiFamily if amiSelectorTerms does not contain an alias",
    ),
)

_RESTRICTED_TAGS = (
    ("eks:eks-cluster-name", "self.all(k, k !='eks:eks-cluster-name')"),
    ("kubernetes.io/cluster/", "self.all(k, !k.startsWith('kubernetes.io/cluster') )"),
    ("karpenter.sh/nodepool", "self.all(k, k != 'karpenter.sh/nodepool')"),
    ("karpenter.sh/nodeclaim", "self.all(k, k !='karpenter.sh/nodeclaim')"),
    ("karpenter.k8s.aws/ec2nodeclass", "self.all(k, k !='karpenter.k8s.aws/ec2nodeclass')"),
)
_TAG_RULES = (
    Rule("self.all(k, k != '')", "empty tag keys aren't supported"),
    *(
        Rule(rule, f"tag contains a restricted tag matching {tag}")
        for tag, rule in _RESTRICTED_TAGS
    ),
)


def _default_metadata_options() -> MetadataOptions:
    return MetadataOptions()


class EC2NodeClassSpec(K8sModel):
    """How karpy launches EC2 instances for the NodePools that reference this class."""

    k8s_rules = _SPEC_RULES

    subnet_selector_terms: Annotated[
        list[SubnetSelectorTerm],
        Schema(
            max_items=30,
            rules=(
                Rule("self.size() != 0", "subnetSelectorTerms cannot be empty"),
                Rule(
                    "self.all(x, has(x.tags) || has(x.id))",
                    "expected at least one, got none, ['tags', 'id']",
                ),
                Rule(
                    "!self.all(x, has(x.id) && has(x.tags))",
                    "'id' is mutually exclusive, cannot be set with a combination of other "
                    "fields in a subnet selector term",
                ),
            ),
        ),
    ]
    """Subnet selector terms, ORed."""
    security_group_selector_terms: Annotated[
        list[SecurityGroupSelectorTerm],
        Schema(
            max_items=30,
            rules=(
                Rule("self.size() != 0", "securityGroupSelectorTerms cannot be empty"),
                Rule(
                    "self.all(x, has(x.tags) || has(x.id) || has(x.name))",
                    "expected at least one, got none, ['tags', 'id', 'name']",
                ),
                Rule(
                    "!self.all(x, has(x.id) && (has(x.tags) || has(x.name)))",
                    "'id' is mutually exclusive, cannot be set with a combination of other "
                    "fields in a security group selector term",
                ),
                Rule(
                    "!self.all(x, has(x.name) && (has(x.tags) || has(x.id)))",
                    "'name' is mutually exclusive, cannot be set with a combination of other "
                    "fields in a security group selector term",
                ),
            ),
        ),
    ]
    """Security group selector terms, ORed."""
    capacity_reservation_selector_terms: (
        Annotated[
            list[CapacityReservationSelectorTerm],
            Schema(
                max_items=30,
                rules=(
                    Rule(
                        "self.all(x, has(x.tags) || has(x.id) || has(x.instanceMatchCriteria))",
                        "expected at least one, got none, ['tags', 'id', 'instanceMatchCriteria']",
                    ),
                    Rule(
                        "!self.all(x, has(x.id) && (has(x.tags) || has(x.ownerID) || "
                        "has(x.instanceMatchCriteria)))",
                        "'id' is mutually exclusive, cannot be set along with other fields in a "
                        "capacity reservation selector term",
                    ),
                ),
            ),
        ]
        | None
    ) = None
    """Capacity reservation selector terms, ORed."""
    associate_public_ip_address: bool | None = Field(None, alias="associatePublicIPAddress")
    """Assign public IP addresses to the instances."""
    ip_prefix_count: Annotated[Int32, Schema(minimum=0)] | None = None
    """Number of IPv4 (or IPv6) prefixes assigned to the network interface."""
    ami_selector_terms: Annotated[
        list[AMISelectorTerm],
        Schema(
            min_items=1,
            max_items=30,
            rules=(
                Rule(
                    "self.all(x, has(x.tags) || has(x.id) || has(x.name) || has(x.alias) || "
                    "has(x.ssmParameter))",
                    "expected at least one, got none, ['tags', 'id', 'name', 'alias', "
                    "'ssmParameter']",
                ),
                Rule(
                    "!self.exists(x, has(x.id) && (has(x.alias) || has(x.tags) || has(x.name) || "
                    "has(x.owner)))",
                    "'id' is mutually exclusive, cannot be set with a combination of other fields "
                    "in amiSelectorTerms",
                ),
                Rule(
                    "!self.exists(x, has(x.alias) && (has(x.id) || has(x.tags) || has(x.name) || "
                    "has(x.owner)))",
                    "'alias' is mutually exclusive, cannot be set with a combination of other "
                    "fields in amiSelectorTerms",
                ),
                Rule(
                    "!(self.exists(x, has(x.alias)) && self.size() != 1)",
                    "'alias' is mutually exclusive, cannot be set with a combination of other "
                    "amiSelectorTerms",
                ),
            ),
        ),
    ]
    """AMI selector terms, ORed."""
    ami_family: AMIFamily | None = None
    """User-data format and default block devices; inferred from an alias term, else required."""
    user_data: str | None = None
    """User data merged with the bootstrap karpy generates for the AMI family."""
    role: Annotated[str, Schema(rules=(Rule("self != ''", "role cannot be empty"),))] | None = None
    """The IAM role of the nodes; karpy manages an instance profile for it."""
    instance_profile: (
        Annotated[str, Schema(rules=(Rule("self != ''", "instanceProfile cannot be empty"),))]
        | None
    ) = None
    """An existing instance profile used as is (instead of role)."""
    tags: Annotated[dict[str, str], Schema(rules=_TAG_RULES)] | None = None
    """Tags applied to instances, volumes, launch templates and fleets."""
    kubelet: Annotated[KubeletConfiguration, Schema(rules=_KUBELET_RULES)] | None = None
    """Kubelet settings of the nodes."""
    block_device_mappings: (
        Annotated[
            list[BlockDeviceMapping],
            Schema(
                max_items=50,
                rules=(
                    Rule(
                        "self.filter(x, has(x.rootVolume)?x.rootVolume==true:false).size() <= 1",
                        "must have only one blockDeviceMappings with rootVolume",
                    ),
                ),
            ),
        ]
        | None
    ) = None
    """Block devices of the instances; the AMI family's defaults when empty."""
    instance_store_policy: Literal["RAID0"] | None = None
    """How instance-store disks are used: RAID0 makes them the node's ephemeral storage."""
    detailed_monitoring: bool | None = None
    """Enable detailed CloudWatch monitoring."""
    metadata_options: MetadataOptions = Field(default_factory=_default_metadata_options)
    """Instance Metadata Service options."""
    context: str | None = None
    """The CreateFleet `Context` (reserved EC2 field)."""
    placement_group_selector: PlacementGroupSelector | None = None
    """Launch into this placement group."""
    network_interfaces: (
        Annotated[list[NetworkInterface], Schema(max_items=150, rules=_NETWORK_INTERFACE_RULES)]
        | None
    ) = None
    """An explicit network interface layout (for EFA)."""
    connection_tracking: ConnectionTracking | None = None
    """Connection tracking timeouts."""
    cpu_options: CPUOptions | None = None
    """CPU options."""

    def alias(self) -> tuple[str, str] | None:
        """The alias term's (family, version), if the class uses an alias."""
        for term in self.ami_selector_terms:
            if term.alias:
                family, _, version = term.alias.partition("@")
                return family, version
        return None

    def resolved_ami_family(self) -> str:
        """`amiFamily`, else the alias's family (validation guarantees one of them)."""
        if self.ami_family is not None:
            return self.ami_family
        alias = self.alias()
        if alias is not None:
            return ALIAS_FAMILIES.get(alias[0], "Custom")
        return "Custom"


class SubnetStatus(K8sModel):
    """A resolved subnet."""

    id: str
    """The subnet id."""
    zone: str
    """The subnet's availability zone."""
    zone_id: str | None = Field(None, alias="zoneID")
    """The availability zone id."""


class SecurityGroupStatus(K8sModel):
    """A resolved security group."""

    id: str
    """The security group id."""
    name: str | None = None
    """The security group name."""


class AMIStatus(K8sModel):
    """A resolved AMI and the instance requirements it serves."""

    id: str
    """The AMI id."""
    name: str | None = None
    """The AMI name."""
    deprecated: bool | None = None
    """Whether the AMI is deprecated."""
    requirements: list[NodeSelectorRequirement]
    """The instance requirements the AMI is compatible with."""


class CapacityReservationStatus(K8sModel):
    """A resolved capacity reservation."""

    availability_zone: str
    """The reservation's availability zone."""
    end_time: Time | None = None
    """When the reservation expires."""
    id: Annotated[str, Schema(pattern="^cr-[0-9a-z]+$")]
    """The reservation id."""
    instance_match_criteria: Literal["open", "targeted"]
    """How instances are matched to the reservation."""
    instance_type: str
    """The reserved instance type."""
    owner_id: Annotated[str, Schema(pattern="^[0-9]{12}$")] = Field(alias="ownerID")
    """The owning account."""
    reservation_type: Literal["default", "capacity-block"] | None = None
    """An on-demand capacity reservation or a capacity block."""
    interruptible: bool | None = None
    """Whether instances in the reservation may be interrupted."""
    state: Literal["active", "expiring"] | None = None
    """The reservation's state."""


class EC2NodeClassStatus(K8sModel):
    """The resolved state of the EC2NodeClass."""

    subnets: list[SubnetStatus] | None = None
    """Resolved subnets, most available IPs first."""
    security_groups: list[SecurityGroupStatus] | None = None
    """Resolved security groups."""
    capacity_reservations: list[CapacityReservationStatus] | None = None
    """Resolved capacity reservations."""
    amis: list[AMIStatus] | None = None
    """Resolved AMIs."""
    instance_profile: str | None = None
    """The instance profile in use."""
    conditions: list[Condition] | None = None
    """AMIsReady, SubnetsReady, SecurityGroupsReady, InstanceProfileReady, ValidationSucceeded,
    PlacementGroupReady, CapacityReservationsReady and Ready."""


class EC2NodeClass(K8sModel):
    """EC2NodeClass is the Schema for the EC2NodeClass API."""

    api_version: str = API_VERSION
    kind: str = KIND
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: EC2NodeClassSpec
    status: EC2NodeClassStatus | None = None

    @property
    def name(self) -> str:
        return self.metadata.name or ""


EC2NODECLASS = CustomResource(
    model=EC2NodeClass,
    group=aws.GROUP,
    version="v1",
    kind=KIND,
    plural="ec2nodeclasses",
    singular="ec2nodeclass",
    short_names=("ec2nc", "ec2ncs"),
    printer_columns=(
        PrinterColumn("Ready", '.status.conditions[?(@.type=="Ready")].status'),
        PrinterColumn("Age", ".metadata.creationTimestamp", "date"),
        PrinterColumn("Role", ".spec.role", priority=1),
    ),
)


def validate_ec2nodeclass(
    obj: Mapping[str, Any], *, old: Mapping[str, Any] | None = None
) -> EC2NodeClass:
    """Admit an EC2NodeClass manifest as the apiserver would and return it."""
    return EC2NODECLASS.validate(obj, old=old)
