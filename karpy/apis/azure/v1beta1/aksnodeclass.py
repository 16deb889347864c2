"""`karpenter.azure.com/v1beta1` AKSNodeClass: how Azure VMs are launched for AKS (subnet, OS disk,
image family, kubelet and OS settings, tags), with the schema, defaults and CEL rules of the
upstream Azure provider's CRD (github.com/Azure/karpenter-provider-azure,
`pkg/apis/crds/karpenter.azure.com_aksnodeclasses.yaml`, the v1beta1 version), so an
AKSNodeClass written for it is admitted here unchanged.

Only v1beta1 is served: upstream's deprecated v1alpha2 has the same fields without the Windows
image families, and karpy has no conversion webhook to serve two versions with.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Final, Literal

from pydantic import Field

from karpy.apis.azure.v1beta1 import labels as azure
from karpy.apis.resource import CustomResource, PrinterColumn
from karpy.apis.schema import K8sModel, Rule, Schema
from karpy.apis.v1.common import Condition, Int32, Int64, NodeSelectorRequirement, ObjectMeta

API_VERSION: Final = "karpenter.azure.com/v1beta1"
KIND: Final = "AKSNodeClass"

ImageFamily = Literal[
    "Ubuntu", "Ubuntu2204", "Ubuntu2404", "AzureLinux", "Windows2022", "Windows2025"
]
IMAGE_FAMILY_DEFAULT: Final = "Ubuntu"
WINDOWS_IMAGE_FAMILIES: Final = ("Windows2022", "Windows2025")
OS_DISK_SIZE_GB_DEFAULT: Final = 128

# A quantity with a binary or decimal suffix, as upstream's size fields take it.
_SIZE_PATTERN = r"^\d+(E|P|T|G|M|K|Ei|Pi|Ti|Gi|Mi|Ki)$"
_DURATION_PATTERN = r"^([0-9]+(s|m|h))+$"
VNET_SUBNET_ID_PATTERN: Final = (
    r"(?i)^\/subscriptions\/[^\/]+\/resourceGroups\/[a-zA-Z0-9_\-().]{0,89}[a-zA-Z0-9_\-()]"
    r"\/providers\/Microsoft\.Network\/virtualNetworks\/[^\/]+\/subnets\/[^\/]+$"
)


class KubeletConfiguration(K8sModel):
    """Kubelet settings for the nodes (the subset AKS supports)."""

    cpu_manager_policy: Literal["none", "static"] = "none"
    """The CPU manager policy."""
    cpu_cfs_quota: bool = Field(True, alias="cpuCFSQuota")
    """Enforce CPU CFS quota for containers with CPU limits."""
    cpu_cfs_quota_period: str = Field("100ms", alias="cpuCFSQuotaPeriod")
    """The CPU CFS quota period (`cpu.cfs_period_us`), between 1ms and 1s."""
    image_gc_high_threshold_percent: Annotated[Int32, Schema(minimum=0, maximum=100)] | None = (
        Field(None, alias="imageGCHighThresholdPercent")
    )
    """Disk usage percent above which image garbage collection always runs."""
    image_gc_low_threshold_percent: Annotated[Int32, Schema(minimum=0, maximum=100)] | None = Field(
        None, alias="imageGCLowThresholdPercent"
    )
    """Disk usage percent image garbage collection frees down to."""
    topology_manager_policy: Literal["restricted", "best-effort", "none", "single-numa-node"] = (
        "none"
    )
    """The topology manager policy."""
    allowed_unsafe_sysctls: list[str] | None = None
    """Unsafe sysctls or sysctl patterns (ending in `*`) pods may set."""
    container_log_max_size: Annotated[str, Schema(pattern=_SIZE_PATTERN)] = "50Mi"
    """The size at which a container log file is rotated."""
    container_log_max_files: Annotated[Int32, Schema(minimum=2)] = 5
    """The maximum number of log files kept per container."""
    pod_pids_limit: Int64 | None = None
    """The maximum number of PIDs in any pod."""
    fail_swap_on: bool | None = None
    """Fail to start when swap is on; false to allow linuxOSConfig.swapFileSize."""


_KUBELET_RULES = (
    Rule(
        "has(self.imageGCHighThresholdPercent) && has(self.imageGCLowThresholdPercent) ?  "
        "self.imageGCHighThresholdPercent > self.imageGCLowThresholdPercent  : true",
        "imageGCHighThresholdPercent must be greater than imageGCLowThresholdPercent",
    ),
)


def _ordered(low: str, high: str) -> Rule:
    return Rule(
        f"has(self.{low}) && has(self.{high}) ? self.{low} <= self.{high} : true",
        f"{low} must be <= {high}",
    )


_PORT = "int(self.netIPv4IPLocalPortRange.split(' ')[{}])"


class Sysctls(K8sModel):
    """Kernel settings of the nodes (AKS custom Linux OS configuration)."""

    k8s_rules = (
        _ordered("netCoreRmemDefault", "netCoreRmemMax"),
        _ordered("netCoreWmemDefault", "netCoreWmemMax"),
        _ordered("netIPv4NeighDefaultGcThresh1", "netIPv4NeighDefaultGcThresh2"),
        _ordered("netIPv4NeighDefaultGcThresh2", "netIPv4NeighDefaultGcThresh3"),
        Rule(
            f"!has(self.netIPv4IPLocalPortRange) || ({_PORT.format(0)} >= 1024 && "
            f"{_PORT.format(0)} <= 60999)",
            "netIPv4IPLocalPortRange first port must be in [1024, 60999]",
        ),
        Rule(
            f"!has(self.netIPv4IPLocalPortRange) || ({_PORT.format(1)} >= 32768 && "
            f"{_PORT.format(1)} <= 65535)",
            "netIPv4IPLocalPortRange last port must be in [32768, 65535]",
        ),
        Rule(
            f"!has(self.netIPv4IPLocalPortRange) || {_PORT.format(0)} <= {_PORT.format(1)}",
            "netIPv4IPLocalPortRange first port must be <= last port",
        ),
    )

    fs_aio_max_nr: Annotated[Int32, Schema(minimum=65536, maximum=6553500)] | None = None
    """fs.aio-max-nr."""
    fs_file_max: Annotated[Int32, Schema(minimum=8192, maximum=12000500)] | None = None
    """fs.file-max."""
    fs_inotify_max_user_watches: (
        Annotated[Int32, Schema(minimum=781250, maximum=2097152)] | None
    ) = None
    """fs.inotify.max_user_watches."""
    fs_nr_open: Annotated[Int32, Schema(minimum=8192, maximum=20000500)] | None = None
    """fs.nr_open."""
    kernel_threads_max: Annotated[Int32, Schema(minimum=20, maximum=513785)] | None = None
    """kernel.threads-max."""
    net_core_netdev_max_backlog: Annotated[Int32, Schema(minimum=1000, maximum=3240000)] | None = (
        None
    )
    """net.core.netdev_max_backlog."""
    net_core_optmem_max: Annotated[Int32, Schema(minimum=20480, maximum=4194304)] | None = None
    """net.core.optmem_max."""
    net_core_rmem_default: Annotated[Int32, Schema(minimum=212992, maximum=134217728)] | None = None
    """net.core.rmem_default."""
    net_core_rmem_max: Annotated[Int32, Schema(minimum=212992, maximum=134217728)] | None = None
    """net.core.rmem_max."""
    net_core_somaxconn: Annotated[Int32, Schema(minimum=4096, maximum=3240000)] | None = None
    """net.core.somaxconn."""
    net_core_wmem_default: Annotated[Int32, Schema(minimum=212992, maximum=134217728)] | None = None
    """net.core.wmem_default."""
    net_core_wmem_max: Annotated[Int32, Schema(minimum=212992, maximum=134217728)] | None = None
    """net.core.wmem_max."""
    net_ipv4_ip_local_port_range: Annotated[str, Schema(pattern=r"^\d+ \d+$")] | None = Field(
        None, alias="netIPv4IPLocalPortRange"
    )
    """net.ipv4.ip_local_port_range as "first last"."""
    net_ipv4_neigh_default_gc_thresh1: (
        Annotated[Int32, Schema(minimum=128, maximum=80000)] | None
    ) = Field(None, alias="netIPv4NeighDefaultGcThresh1")
    """net.ipv4.neigh.default.gc_thresh1."""
    net_ipv4_neigh_default_gc_thresh2: (
        Annotated[Int32, Schema(minimum=512, maximum=90000)] | None
    ) = Field(None, alias="netIPv4NeighDefaultGcThresh2")
    """net.ipv4.neigh.default.gc_thresh2."""
    net_ipv4_neigh_default_gc_thresh3: (
        Annotated[Int32, Schema(minimum=1024, maximum=100000)] | None
    ) = Field(None, alias="netIPv4NeighDefaultGcThresh3")
    """net.ipv4.neigh.default.gc_thresh3."""
    net_ipv4_tcp_fin_timeout: Annotated[Int32, Schema(minimum=5, maximum=120)] | None = Field(
        None, alias="netIPv4TCPFinTimeout"
    )
    """net.ipv4.tcp_fin_timeout."""
    net_ipv4_tcp_keepalive_intvl: Annotated[Int32, Schema(minimum=10, maximum=90)] | None = Field(
        None, alias="netIPv4TCPKeepaliveIntvl"
    )
    """net.ipv4.tcp_keepalive_intvl."""
    net_ipv4_tcp_keepalive_probes: Annotated[Int32, Schema(minimum=1, maximum=15)] | None = Field(
        None, alias="netIPv4TCPKeepaliveProbes"
    )
    """net.ipv4.tcp_keepalive_probes."""
    net_ipv4_tcp_keepalive_time: Annotated[Int32, Schema(minimum=30, maximum=432000)] | None = (
        Field(None, alias="netIPv4TCPKeepaliveTime")
    )
    """net.ipv4.tcp_keepalive_time."""
    net_ipv4_tcp_max_syn_backlog: Annotated[Int32, Schema(minimum=128, maximum=3240000)] | None = (
        Field(None, alias="netIPv4TCPMaxSynBacklog")
    )
    """net.ipv4.tcp_max_syn_backlog."""
    net_ipv4_tcp_max_tw_buckets: Annotated[Int32, Schema(minimum=8000, maximum=1440000)] | None = (
        Field(None, alias="netIPv4TCPMaxTwBuckets")
    )
    """net.ipv4.tcp_max_tw_buckets."""
    net_ipv4_tcp_tw_reuse: bool | None = Field(None, alias="netIPv4TCPTwReuse")
    """net.ipv4.tcp_tw_reuse."""
    net_netfilter_nf_conntrack_buckets: (
        Annotated[Int32, Schema(minimum=65536, maximum=524288)] | None
    ) = None
    """net.netfilter.nf_conntrack_buckets."""
    net_netfilter_nf_conntrack_max: (
        Annotated[Int32, Schema(minimum=131072, maximum=2097152)] | None
    ) = None
    """net.netfilter.nf_conntrack_max."""
    vm_max_map_count: Annotated[Int32, Schema(minimum=65530, maximum=262144)] | None = None
    """vm.max_map_count."""
    vm_swappiness: Annotated[Int32, Schema(minimum=0, maximum=100)] | None = None
    """vm.swappiness."""
    vm_vfs_cache_pressure: Annotated[Int32, Schema(minimum=0, maximum=100)] | None = None
    """vm.vfs_cache_pressure."""


class LinuxOSConfig(K8sModel):
    """OS settings of Linux nodes (AKS custom node configuration)."""

    swap_file_size: Annotated[str, Schema(pattern=_SIZE_PATTERN)] | None = None
    """Size of a swap file created on each node ("1500Mi", "2Gi")."""
    sysctls: Sysctls | None = None
    """Kernel settings."""
    transparent_huge_page_enabled: Literal["always", "madvise", "never"] | None = None
    """/sys/kernel/mm/transparent_hugepage/enabled."""
    transparent_huge_page_defrag: (
        Literal["always", "defer", "defer+madvise", "madvise", "never"] | None
    ) = None
    """/sys/kernel/mm/transparent_hugepage/defrag."""


_ZONE_PATTERN = (
    r"^(\.|[A-Za-z0-9]([A-Za-z0-9_-]{0,61}[A-Za-z0-9])?"
    r"(\.[A-Za-z0-9]([A-Za-z0-9_-]{0,61}[A-Za-z0-9])?)*\.?)$"
)


class LocalDNSZoneOverride(K8sModel):
    """How local DNS serves one zone."""

    k8s_rules = (
        Rule(
            "!(self.zone.endsWith('cluster.local') && self.forwardDestination == 'VnetDNS')",
            "'cluster.local' cannot be forwarded to VnetDNS",
        ),
        Rule(
            "!(self.serveStale == 'Verify' && self.protocol == 'ForceTCP')",
            "serveStale Verify cannot be used with protocol ForceTCP",
        ),
    )

    zone: Annotated[str, Schema(min_length=1, max_length=254, pattern=_ZONE_PATTERN)]
    """The DNS zone ("." or "cluster.local")."""
    query_logging: Literal["Error", "Log"]
    """The log level of DNS queries."""
    protocol: Literal["PreferUDP", "ForceTCP"]
    """TCP or UDP to the upstream server."""
    forward_destination: Literal["ClusterCoreDNS", "VnetDNS"]
    """Where queries are forwarded."""
    forward_policy: Literal["Sequential", "RoundRobin", "Random"]
    """How the upstream server is chosen."""
    max_concurrent: Annotated[Int32, Schema(minimum=0)]
    """The maximum number of concurrent queries."""
    cache_duration: Annotated[str, Schema(pattern=_DURATION_PATTERN)]
    """Cache max TTL."""
    serve_stale_duration: Annotated[str, Schema(pattern=_DURATION_PATTERN)]
    """How long stale data is served."""
    serve_stale: Literal["Verify", "Immediate", "Disable"]
    """The policy of serving stale data."""


_REQUIRED_ZONES = Rule(
    "['.', 'cluster.local'].all(z, self.exists(x, x.zone == z))",
    "must contain required zones '.' and 'cluster.local'",
)
_OVERRIDES = Schema(
    max_items=100, list_type="map", list_map_keys=("zone",), rules=(_REQUIRED_ZONES,)
)
_VNET_OVERRIDES = _OVERRIDES.merge(
    Schema(
        rules=(
            Rule(
                "!self.exists(x, x.zone == '.' && x.forwardDestination == 'ClusterCoreDNS')",
                "root zone '.' cannot be forwarded to ClusterCoreDNS from vnetDNSOverrides",
            ),
            Rule(
                "!self.exists(x, x.zone != '.' && !x.zone.endsWith('cluster.local') && "
                "x.forwardDestination == 'ClusterCoreDNS')",
                "external domains cannot be forwarded to ClusterCoreDNS from vnetDNSOverrides",
            ),
        )
    )
)


class LocalDNS(K8sModel):
    """The per-node local DNS and its overrides."""

    mode: Literal["Preferred", "Required", "Disabled"]
    """Whether local DNS is enabled."""
    vnet_dns_overrides: Annotated[list[LocalDNSZoneOverride], _VNET_OVERRIDES] = Field(
        alias="vnetDNSOverrides"
    )
    """Overrides for traffic from pods with dnsPolicy Default, and the kubelet's."""
    kube_dns_overrides: Annotated[list[LocalDNSZoneOverride], _OVERRIDES] = Field(
        alias="kubeDNSOverrides"
    )
    """Overrides for traffic from pods with dnsPolicy ClusterFirst."""


class Security(K8sModel):
    """Security settings of the nodes."""

    encryption_at_host: bool | None = None
    """Host-level encryption of the VM's disks and caches."""


class GPU(K8sModel):
    """GPU settings of the nodes."""

    mode: Literal["Driver", "None"] = "Driver"
    """Driver: AKS installs the (NVIDIA) drivers and only SKUs it supports are used; None: the
    drivers are managed elsewhere (a GPU operator) and every GPU SKU is used."""


class ArtifactStreaming(K8sModel):
    """Artifact streaming of container images."""

    enabled: bool | None = None
    """Stream images on demand instead of pulling them whole (default false)."""


_TAG_RULES = (
    Rule("self.all(k, size(k) <= 512)", "tags keys must be less than 512 characters"),
    Rule(
        "self.all(k, !k.matches('[<>%&?]'))",
        "tags keys must not contain '<', '>', '%', '&', or '?'",
    ),
    Rule("self.all(k, !k.contains('\\\\'))", "tags keys must not contain '\\'"),
    Rule("self.all(k, size(self[k]) <= 256)", "tags values must be less than 256 characters"),
)
_WINDOWS = "[" + ",".join(f"'{f}'" for f in WINDOWS_IMAGE_FAMILIES) + "]"
_SPEC_RULES = (
    Rule(
        "has(self.fipsMode) && self.fipsMode == 'FIPS' ? (has(self.imageFamily) && "
        "self.imageFamily != 'Ubuntu2204' && self.imageFamily != 'Ubuntu2404') : true",
        "FIPS is not yet supported for Ubuntu2204 or Ubuntu2404",
    ),
    Rule(
        "!has(self.fipsMode) || self.fipsMode != 'FIPS' || !has(self.imageFamily) || "
        f"!(self.imageFamily in {_WINDOWS})",
        "FIPS is not supported for Windows image families",
    ),
    Rule(
        f"!has(self.linuxOSConfig) || !has(self.imageFamily) || !(self.imageFamily in {_WINDOWS})",
        "linuxOSConfig is not supported for Windows image families",
    ),
    Rule(
        "!has(self.linuxOSConfig) || !has(self.linuxOSConfig.swapFileSize) || "
        "(has(self.kubelet) && has(self.kubelet.failSwapOn) && self.kubelet.failSwapOn == false)",
        "kubelet.failSwapOn must be set to false when linuxOSConfig.swapFileSize is specified",
    ),
)


class AKSNodeClassSpec(K8sModel):
    """How karpy launches Azure VMs for the NodePools that reference this class."""

    k8s_rules = _SPEC_RULES

    vnet_subnet_id: Annotated[str, Schema(pattern=VNET_SUBNET_ID_PATTERN)] | None = Field(
        None, alias="vnetSubnetID"
    )
    """The subnet of the VMs' NICs; the `VNET_SUBNET_ID` setting when unset."""
    os_disk_size_gb: Annotated[Int32, Schema(minimum=30, maximum=2048)] = Field(
        OS_DISK_SIZE_GB_DEFAULT, alias="osDiskSizeGB"
    )
    """The size of the OS disk in GB."""
    image_family: ImageFamily = IMAGE_FAMILY_DEFAULT
    """The node image family."""
    fips_mode: Literal["FIPS", "Disabled"] | None = None
    """FIPS compliance of the nodes."""
    tags: Annotated[dict[str, str], Schema(rules=_TAG_RULES)] | None = None
    """Tags applied to the VMs and NICs."""
    kubelet: Annotated[KubeletConfiguration, Schema(rules=_KUBELET_RULES)] | None = None
    """Kubelet settings of the nodes."""
    max_pods: Annotated[Int32, Schema(minimum=10, maximum=250)] | None = None
    """Maximum pods per node; by default 250 with the azure network plugin in overlay mode or
    with no plugin, 30 with azure's node-subnet mode, 110 otherwise."""
    security: Security | None = None
    """Security settings."""
    local_dns: LocalDNS | None = Field(None, alias="localDNS")
    """The per-node local DNS."""
    gpu: GPU | None = None
    """GPU settings."""
    artifact_streaming: ArtifactStreaming | None = None
    """Artifact streaming of container images."""
    linux_os_config: LinuxOSConfig | None = Field(None, alias="linuxOSConfig")
    """OS settings of Linux nodes."""

    def is_windows(self) -> bool:
        return self.image_family in WINDOWS_IMAGE_FAMILIES


class NodeImage(K8sModel):
    """A resolved node image and the instance types it serves."""

    id: str
    """The image id (a community or shared image gallery version)."""
    requirements: list[NodeSelectorRequirement]
    """The instance requirements the image is compatible with."""


class AKSNodeClassStatus(K8sModel):
    """The resolved state of the AKSNodeClass."""

    images: list[NodeImage] | None = None
    """The images available to the NodeClass."""
    kubernetes_version: str | None = None
    """The Kubernetes version of the nodes launched for the NodeClass."""
    local_dns_state: Literal["Enabled", "Disabled"] | None = Field(None, alias="localDNSState")
    """Whether local DNS is enabled on the nodes (resolved from spec.localDNS.mode)."""
    conditions: list[Condition] | None = None
    """ImagesReady, KubernetesVersionReady, SubnetsReady, ValidationSucceeded and Ready."""


def _default_spec() -> AKSNodeClassSpec:
    return AKSNodeClassSpec()


class AKSNodeClass(K8sModel):
    """AKSNodeClass is the Schema for the AKSNodeClass API."""

    api_version: str = API_VERSION
    kind: str = KIND
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: Annotated[AKSNodeClassSpec, Schema(emit_default=False)] = Field(
        default_factory=_default_spec
    )
    status: AKSNodeClassStatus | None = None

    @property
    def name(self) -> str:
        return self.metadata.name or ""


AKSNODECLASS = CustomResource(
    model=AKSNodeClass,
    group=azure.GROUP,
    version="v1beta1",
    kind=KIND,
    plural="aksnodeclasses",
    singular="aksnodeclass",
    short_names=("aksnc", "aksncs"),
    categories=("karpenter", "nap"),
    # A cluster on another provider (Karpenter's CRD chart on EKS) lacks this CRD: karpy then runs
    # as if there were no AKSNodeClasses. Under PROVIDER=azure the provider watches it.
    optional=True,
    printer_columns=(
        PrinterColumn("Ready", '.status.conditions[?(@.type=="Ready")].status'),
        PrinterColumn("Age", ".metadata.creationTimestamp", "date"),
        PrinterColumn("ImageFamily", ".spec.imageFamily", priority=1),
    ),
)


def validate_aksnodeclass(
    obj: Mapping[str, Any], *, old: Mapping[str, Any] | None = None
) -> AKSNodeClass:
    """Admit an AKSNodeClass manifest as the apiserver would and return it."""
    return AKSNODECLASS.validate(obj, old=old)
