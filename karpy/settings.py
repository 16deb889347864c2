"""karpy's settings: Karpenter's environment variables, as nested pydantic-settings models.

Each setting has one name used three ways: the environment variable (`BATCH_IDLE_DURATION`), the
`karpy run` flag (`--batch-idle-duration`, which wins over the environment) and a field in a
nested model (`settings.batch.idle_duration`). `SETTINGS` is the table that ties them together;
`karpy.operator` builds its flags from it. Durations use Go's syntax (`300ms`, `1m30s`, `2h`), as
Karpenter's do. A bad value raises `SettingsError` naming the variable, so start-up stops with a
message the operator can act on.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from karpy.apis.duration import DurationError, parse_duration

__all__ = [
    "SETTINGS",
    "AWSSettings",
    "AzureSettings",
    "BatchSettings",
    "FeatureGates",
    "KubeClientSettings",
    "KwokSettings",
    "LeaderElectionSettings",
    "NodeClaimSettings",
    "ServerSettings",
    "SettingSpec",
    "Settings",
    "SettingsError",
    "load_settings",
]

# -- Go durations (parsed by karpy.apis.duration, like every duration in karpy) ----------------


def _to_duration(value: object) -> object:
    if isinstance(value, str):
        try:
            return parse_duration(value.strip())
        except DurationError:
            raise ValueError(
                f"invalid duration {value!r}: use Go syntax such as 300ms, 10s, 1m30s or 2h"
            ) from None
    return value


def _positive(value: timedelta) -> timedelta:
    if value <= timedelta(0):
        raise ValueError("must be a positive duration")
    return value


Duration = Annotated[timedelta, BeforeValidator(_to_duration), AfterValidator(_positive)]

# -- nested models --------------------------------------------------------------------------------

_FROZEN = ConfigDict(frozen=True, extra="forbid")

_GATES = {
    "NodeRepair": "node_repair",
    "ReservedCapacity": "reserved_capacity",
    "SpotToSpotConsolidation": "spot_to_spot_consolidation",
    "NodeOverlay": "node_overlay",
    "StaticCapacity": "static_capacity",
    "CapacityBuffer": "capacity_buffer",
}
_TRUE = {"true", "1", "t", "yes", "on"}
_FALSE = {"false", "0", "f", "no", "off"}


class FeatureGates(BaseModel):
    """Karpenter's feature gates with its defaults; written `NodeRepair=true,...`."""

    model_config = _FROZEN

    node_repair: bool = False
    reserved_capacity: bool = True
    spot_to_spot_consolidation: bool = False
    node_overlay: bool = False
    static_capacity: bool = False
    capacity_buffer: bool = False

    @model_validator(mode="before")
    @classmethod
    def _parse(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        gates: dict[str, bool] = {}
        for item in (part.strip() for part in value.split(",")):
            if not item:
                continue
            name, sep, raw = item.partition("=")
            name = name.strip()
            if name not in _GATES:
                raise ValueError(f"unknown feature gate {name!r}; known: {', '.join(_GATES)}")
            flag = raw.strip().lower()
            if not sep or flag not in _TRUE | _FALSE:
                raise ValueError(f"feature gate {name} needs =true or =false (got {item!r})")
            gates[_GATES[name]] = flag in _TRUE
        return gates

    def __str__(self) -> str:
        return ",".join(f"{k}={str(getattr(self, v)).lower()}" for k, v in _GATES.items())


class SpreadDefault(BaseModel):
    """One of kube-scheduler's cluster-default spread constraints (`PodTopologySpreadArgs`
    `defaultConstraints`): given to pods that declare none, selecting the pods with their
    labels."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    max_skew: Annotated[int, Field(ge=1, alias="maxSkew")]
    topology_key: Annotated[str, Field(min_length=1, alias="topologyKey")]
    when_unsatisfiable: Annotated[
        Literal["DoNotSchedule", "ScheduleAnyway"], Field(alias="whenUnsatisfiable")
    ] = "ScheduleAnyway"

    def to_constraint(self) -> dict[str, Any]:
        return {
            "maxSkew": self.max_skew,
            "topologyKey": self.topology_key,
            "whenUnsatisfiable": self.when_unsatisfiable,
        }


def spread_list(value: object) -> object:
    """`DEFAULT_TOPOLOGY_SPREAD_CONSTRAINTS` is a JSON list, as in kube-scheduler's config."""
    if not isinstance(value, str):
        return value
    if not value.strip():
        return ()
    try:
        parsed = json.loads(value)
    except ValueError as err:
        raise ValueError(f"not a JSON list of constraints: {err}") from None
    if not isinstance(parsed, list):
        raise ValueError("must be a JSON list of {maxSkew, topologyKey, whenUnsatisfiable}")
    return parsed


class BatchSettings(BaseModel):
    """The provisioning batch window: closes after `idle_duration` without new pods, or at
    `max_duration`."""

    model_config = _FROZEN

    idle_duration: Duration = timedelta(seconds=1)
    max_duration: Duration = timedelta(seconds=10)


class KubeClientSettings(BaseModel):
    model_config = _FROZEN

    qps: float = Field(default=200.0, gt=0)
    burst: int = Field(default=300, ge=1)
    kubeconfig: str | None = None


class ServerSettings(BaseModel):
    """Where /metrics and the /healthz, /readyz probes listen (port 0: any free port)."""

    model_config = _FROZEN

    metrics_port: int = Field(default=8080, ge=0, le=65535)
    health_probe_port: int = Field(default=8081, ge=0, le=65535)
    bind_address: str = "0.0.0.0"

    @field_validator("bind_address")
    @classmethod
    def _ip(cls, value: str) -> str:
        try:
            ipaddress.ip_address(value)
        except ValueError:
            raise ValueError(f"{value!r} is not an IP address") from None
        return value


class LeaderElectionSettings(BaseModel):
    model_config = _FROZEN

    disabled: bool = False
    system_namespace: str = Field(default="kube-system", min_length=1)
    pod_name: str = Field(default_factory=socket.gethostname, min_length=1)


class NodeClaimSettings(BaseModel):
    """How long a NodeClaim may take to launch, and then to register its Node."""

    model_config = _FROZEN

    launch_timeout: Duration = timedelta(minutes=5)
    registration_timeout: Duration = timedelta(minutes=15)


class DisruptionSettings(BaseModel):
    """How long a disruption command waits for its replacements to initialize before it fails
    and untaints its candidates (the shortest wait; it grows by 80 ms per candidate in flight,
    up to an hour, as Karpenter's). Karpenter fixes it at 10 minutes; karpy lets it be set so
    that a cluster (or a test) where nodes boot in seconds need not wait that long."""

    model_config = _FROZEN

    command_timeout: Duration = timedelta(minutes=10)


class AWSSettings(BaseModel):
    model_config = _FROZEN

    cluster_endpoint: str = ""
    cluster_ca_bundle: str = ""
    interruption_queue: str = ""
    vm_memory_overhead_percent: float = Field(default=0.075, ge=0, lt=1)
    reserved_enis: int = Field(default=0, ge=0)
    isolated_vpc: bool = False


def _comma_list(value: object) -> object:
    """`NODE_IDENTITIES` is comma-separated, as upstream's flag reads it."""
    if isinstance(value, str):
        return tuple(part.strip() for part in value.split(",") if part.strip())
    return value


def _tag_pairs(value: object) -> object:
    """`ADDITIONAL_TAGS` is `key=value` pairs separated by commas, as upstream's flag reads it:
    blanks around them and empty entries are dropped, a value may be empty, a key may not."""
    if not isinstance(value, str):
        return value
    tags: dict[str, str] = {}
    for pair in value.split(","):
        if not pair.strip():
            continue
        parts = pair.split("=")
        if len(parts) != 2 or not parts[0].strip():
            raise ValueError(f"{pair.strip()!r} is not a key=value pair with a key")
        tags[parts[0].strip()] = parts[1].strip()
    return tags


class AzureSettings(BaseModel):
    """The Azure provider's settings, named as the upstream Azure provider's
    (`pkg/operator/options`, `pkg/auth`): what VMs are launched into and how nodes join.
    `CLUSTER_NAME`, `CLUSTER_ENDPOINT` and `VM_MEMORY_OVERHEAD_PERCENT` are shared with AWS."""

    model_config = _FROZEN

    subscription_id: str = ""
    location: str = ""
    resource_group: str = ""
    node_resource_group: str = ""
    vnet_subnet_id: str = ""
    vnet_guid: str = ""
    network_plugin: Literal["azure", "kubenet", "none"] = "azure"
    network_plugin_mode: Literal["overlay", ""] = "overlay"
    network_policy: str = ""
    network_dataplane: Literal["azure", "cilium"] = "cilium"
    kubelet_bootstrap_token: str = ""
    kubelet_identity_client_id: str = ""
    ssh_public_key: str = ""
    linux_admin_username: str = "azureuser"
    node_identities: Annotated[tuple[str, ...], BeforeValidator(_comma_list)] = ()
    dns_service_ip: str = ""
    additional_tags: Annotated[dict[str, str], BeforeValidator(_tag_pairs)] = Field(
        default_factory=dict
    )
    provision_mode: Literal["aksscriptless"] = "aksscriptless"
    arm_endpoint: str = "https://management.azure.com"
    prices_endpoint: str = "https://prices.azure.com"

    @field_validator("location")
    @classmethod
    def _region(cls, value: str) -> str:
        return value.strip().lower()

    @field_validator("dns_service_ip")
    @classmethod
    def _ip(cls, value: str) -> str:
        value = value.strip()
        if value:
            try:
                ipaddress.ip_address(value)
            except ValueError:
                raise ValueError(f"{value!r} is not an IP address") from None
        return value

    @field_validator("vnet_subnet_id")
    @classmethod
    def _subnet(cls, value: str) -> str:
        value = value.strip()
        if value and not _SUBNET_ID.fullmatch(value):
            raise ValueError(
                "not a subnet resource ID: /subscriptions/<id>/resourceGroups/<group>/providers/"
                "Microsoft.Network/virtualNetworks/<vnet>/subnets/<subnet>"
            )
        return value

    @field_validator("arm_endpoint", "prices_endpoint")
    @classmethod
    def _url(cls, value: str) -> str:
        if not value.startswith(("https://", "http://")):
            raise ValueError("must be an http(s) URL")
        return value.rstrip("/")


_SUBNET_ID = re.compile(
    r"/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.Network/"
    r"virtualNetworks/[^/]+/subnets/[^/]+",
    re.IGNORECASE,
)


class KwokSettings(BaseModel):
    model_config = _FROZEN

    instance_types_file_path: Path | None = None

    @field_validator("instance_types_file_path")
    @classmethod
    def _exists(cls, value: Path | None) -> Path | None:
        if value is not None and not value.is_file():
            raise ValueError(f"no such file: {value}")
        return value


# -- the table ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SettingSpec:
    """One setting: its environment name, where it lives in `Settings`, and its help."""

    env: str
    path: tuple[str, ...]
    help: str
    default: str = ""
    boolean: bool = False

    @property
    def flag(self) -> str:
        return "--" + self.env.lower().replace("_", "-")


SETTINGS: tuple[SettingSpec, ...] = (
    SettingSpec("PROVIDER", ("provider",), "cloud provider: aws, azure or kwok", "aws"),
    SettingSpec(
        "CLUSTER_NAME", ("cluster_name",), "cluster name (required for aws and azure)", '""'
    ),
    SettingSpec(
        "CLUSTER_ENDPOINT", ("aws", "cluster_endpoint"), "apiserver URL for new nodes", '""'
    ),
    SettingSpec(
        "CLUSTER_CA_BUNDLE",
        ("aws", "cluster_ca_bundle"),
        "apiserver CA for new nodes, base64 (default: the CA karpy trusts)",
        '""',
    ),
    SettingSpec(
        "INTERRUPTION_QUEUE",
        ("aws", "interruption_queue"),
        "SQS interruption queue name or URL (unset: no interruption handling)",
        '""',
    ),
    SettingSpec(
        "BATCH_IDLE_DURATION",
        ("batch", "idle_duration"),
        "close a provisioning batch after this long without new pods",
        "1s",
    ),
    SettingSpec(
        "BATCH_MAX_DURATION",
        ("batch", "max_duration"),
        "longest a provisioning batch stays open",
        "10s",
    ),
    SettingSpec(
        "FEATURE_GATES",
        ("feature_gates",),
        "feature gates, e.g. NodeRepair=true,SpotToSpotConsolidation=false",
        str(FeatureGates()),
    ),
    SettingSpec(
        "VM_MEMORY_OVERHEAD_PERCENT",
        ("aws", "vm_memory_overhead_percent"),
        "fraction of memory lost to virtualization",
        "0.075",
    ),
    SettingSpec("RESERVED_ENIS", ("aws", "reserved_enis"), "ENIs kept out of max-pods maths", "0"),
    SettingSpec(
        "ISOLATED_VPC",
        ("aws", "isolated_vpc"),
        "no public AWS endpoints (skip the pricing API)",
        "false",
        boolean=True,
    ),
    SettingSpec("KUBE_CLIENT_QPS", ("kube_client", "qps"), "apiserver requests per second", "200"),
    SettingSpec("KUBE_CLIENT_BURST", ("kube_client", "burst"), "apiserver request burst", "300"),
    SettingSpec(
        "KUBECONFIG",
        ("kube_client", "kubeconfig"),
        "kubeconfig path(s); unset: in-cluster or ~/.kube/config",
        '""',
    ),
    SettingSpec(
        "LOG_LEVEL",
        ("log_level",),
        "debug, info, warn or error: karpy's own logs (the AWS and Azure SDKs log warnings"
        " and errors only)",
        "info",
    ),
    SettingSpec("METRICS_PORT", ("server", "metrics_port"), "port of /metrics", "8080"),
    SettingSpec(
        "HEALTH_PROBE_PORT", ("server", "health_probe_port"), "port of /healthz, /readyz", "8081"
    ),
    SettingSpec("BIND_ADDRESS", ("server", "bind_address"), "address the servers bind", "0.0.0.0"),
    SettingSpec(
        "SYSTEM_NAMESPACE",
        ("leader_election", "system_namespace"),
        "namespace of the leader-election Lease",
        "kube-system",
    ),
    SettingSpec(
        "POD_NAME",
        ("leader_election", "pod_name"),
        "leader identity prefix (a unique suffix is added)",
        "host name",
    ),
    SettingSpec(
        "DISABLE_LEADER_ELECTION",
        ("leader_election", "disabled"),
        "run controllers without a lease (single replica only)",
        "false",
        boolean=True,
    ),
    SettingSpec(
        "PREFERENCE_POLICY",
        ("preference_policy",),
        "Respect or Ignore preferred affinities and ScheduleAnyway spreads",
        "Respect",
    ),
    SettingSpec(
        "MIN_VALUES_POLICY", ("min_values_policy",), "Strict or BestEffort minValues", "Strict"
    ),
    SettingSpec(
        "DEFAULT_TOPOLOGY_SPREAD_CONSTRAINTS",
        ("default_topology_spread",),
        "kube-scheduler's defaultConstraints (JSON list): given to pods without spread constraints",
        "[]",
    ),
    SettingSpec(
        "LAUNCH_TIMEOUT",
        ("nodeclaim", "launch_timeout"),
        "delete a NodeClaim not launched within this",
        "5m",
    ),
    SettingSpec(
        "REGISTRATION_TIMEOUT",
        ("nodeclaim", "registration_timeout"),
        "delete a NodeClaim whose Node has not registered within this",
        "15m",
    ),
    SettingSpec(
        "DISRUPTION_COMMAND_TIMEOUT",
        ("disruption", "command_timeout"),
        "fail a disruption command (untaint its nodes) whose replacements have not initialized "
        "within this (grows by 80ms per node in flight, up to 1h)",
        "10m",
    ),
    SettingSpec(
        "ARM_SUBSCRIPTION_ID",
        ("azure", "subscription_id"),
        "azure: subscription of the cluster's nodes (required)",
        '""',
    ),
    SettingSpec(
        "LOCATION",
        ("azure", "location"),
        "azure: region of the cluster, e.g. westus2 (required)",
        '""',
    ),
    SettingSpec(
        "ARM_RESOURCE_GROUP",
        ("azure", "resource_group"),
        "azure: the AKS cluster's resource group",
        '""',
    ),
    SettingSpec(
        "AZURE_NODE_RESOURCE_GROUP",
        ("azure", "node_resource_group"),
        "azure: resource group of the nodes' VMs and NICs, MC_... (required)",
        '""',
    ),
    SettingSpec(
        "VNET_SUBNET_ID",
        ("azure", "vnet_subnet_id"),
        "azure: subnet resource ID of new nodes unless the AKSNodeClass names one (required)",
        '""',
    ),
    SettingSpec(
        "VNET_GUID",
        ("azure", "vnet_guid"),
        "azure: resource GUID of a custom VNet (Azure CNI)",
        '""',
    ),
    SettingSpec(
        "NETWORK_PLUGIN", ("azure", "network_plugin"), "azure: azure, kubenet or none", "azure"
    ),
    SettingSpec(
        "NETWORK_PLUGIN_MODE",
        ("azure", "network_plugin_mode"),
        "azure: overlay, or empty for pods on the node subnet",
        "overlay",
    ),
    SettingSpec(
        "NETWORK_POLICY", ("azure", "network_policy"), "azure: azure, calico, cilium or empty", '""'
    ),
    SettingSpec(
        "NETWORK_DATAPLANE", ("azure", "network_dataplane"), "azure: azure or cilium", "cilium"
    ),
    SettingSpec(
        "KUBELET_BOOTSTRAP_TOKEN",
        ("azure", "kubelet_bootstrap_token"),
        "azure: bootstrap token new nodes join with (required)",
        '""',
    ),
    SettingSpec(
        "KUBELET_IDENTITY_CLIENT_ID",
        ("azure", "kubelet_identity_client_id"),
        "azure: client ID of the kubelet's managed identity on new nodes",
        '""',
    ),
    SettingSpec(
        "LINUX_ADMIN_USERNAME",
        ("azure", "linux_admin_username"),
        "azure: admin user name of the nodes' VMs",
        "azureuser",
    ),
    SettingSpec(
        "SSH_PUBLIC_KEY",
        ("azure", "ssh_public_key"),
        "azure: SSH public key of the nodes' VMs",
        '""',
    ),
    SettingSpec(
        "NODE_IDENTITIES",
        ("azure", "node_identities"),
        "azure: user-assigned identity resource IDs given to every VM, comma-separated",
        '""',
    ),
    SettingSpec(
        "DNS_SERVICE_IP",
        ("azure", "dns_service_ip"),
        "azure: the nodes' cluster DNS (--cluster-dns); unset: the kube-system/kube-dns "
        "Service's ClusterIP, else 10.0.0.10",
        '""',
    ),
    SettingSpec(
        "ADDITIONAL_TAGS",
        ("azure", "additional_tags"),
        "azure: tags for every VM and NIC, key=value,...; the AKSNodeClass's tags win",
        '""',
    ),
    SettingSpec(
        "PROVISION_MODE",
        ("azure", "provision_mode"),
        "azure: how nodes bootstrap (aksscriptless only)",
        "aksscriptless",
    ),
    SettingSpec(
        "ARM_ENDPOINT",
        ("azure", "arm_endpoint"),
        "azure (karpy): Azure Resource Manager URL",
        "https://management.azure.com",
    ),
    SettingSpec(
        "AZURE_PRICES_ENDPOINT",
        ("azure", "prices_endpoint"),
        "azure (karpy): Azure Retail Prices API URL",
        "https://prices.azure.com",
    ),
    SettingSpec(
        "INSTANCE_TYPES_FILE_PATH",
        ("kwok", "instance_types_file_path"),
        "kwok instance-type catalogue (JSON)",
        "built-in",
    ),
)
_BY_PATH = {spec.path: spec for spec in SETTINGS}


def _nest(flat: Mapping[str, str]) -> dict[str, Any]:
    """`{"BATCH_IDLE_DURATION": "2s"}` -> `{"batch": {"idle_duration": "2s"}}`."""
    by_env = {spec.env: spec for spec in SETTINGS}
    nested: dict[str, Any] = {}
    for env, value in flat.items():
        spec = by_env.get(env)
        if spec is None:
            raise SettingsError([f"{env}: not a karpy setting"])
        node = nested
        for part in spec.path[:-1]:
            node = node.setdefault(part, {})
        node[spec.path[-1]] = value
    return nested


class _FlatEnvSource(PydanticBaseSettingsSource):
    """Reads each setting from its own flat environment variable (empty counts as unset)."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        found = {s.env: os.environ[s.env] for s in SETTINGS if os.environ.get(s.env, "") != ""}
        return _nest(found)


class Settings(BaseSettings):
    """Every karpy setting; build with `load_settings()` for readable errors."""

    model_config = SettingsConfigDict(frozen=True, extra="forbid")

    provider: Literal["aws", "azure", "kwok"] = "aws"
    cluster_name: str = ""
    log_level: Literal["debug", "info", "warn", "warning", "error"] = "info"
    preference_policy: Literal["Respect", "Ignore"] = "Respect"
    min_values_policy: Literal["Strict", "BestEffort"] = "Strict"
    default_topology_spread: Annotated[tuple[SpreadDefault, ...], BeforeValidator(spread_list)] = ()
    feature_gates: FeatureGates = FeatureGates()
    batch: BatchSettings = BatchSettings()
    kube_client: KubeClientSettings = KubeClientSettings()
    server: ServerSettings = ServerSettings()
    leader_election: LeaderElectionSettings = Field(default_factory=LeaderElectionSettings)
    nodeclaim: NodeClaimSettings = NodeClaimSettings()
    disruption: DisruptionSettings = DisruptionSettings()
    aws: AWSSettings = AWSSettings()
    azure: AzureSettings = AzureSettings()
    kwok: KwokSettings = KwokSettings()

    @field_validator("log_level", mode="before")
    @classmethod
    def _lower(cls, value: object) -> object:
        return value.lower() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _provider_needs(self) -> Settings:
        if self.provider == "aws" and not self.cluster_name:
            raise ValueError("CLUSTER_NAME is required with PROVIDER=aws")
        if self.provider == "azure":
            missing = [
                env
                for env, value in (
                    ("CLUSTER_NAME", self.cluster_name),
                    ("CLUSTER_ENDPOINT", self.aws.cluster_endpoint),
                    ("KUBELET_BOOTSTRAP_TOKEN", self.azure.kubelet_bootstrap_token),
                    ("ARM_SUBSCRIPTION_ID", self.azure.subscription_id),
                    ("LOCATION", self.azure.location),
                    ("AZURE_NODE_RESOURCE_GROUP", self.azure.node_resource_group),
                    ("VNET_SUBNET_ID", self.azure.vnet_subnet_id),
                )
                if not value
            ]
            if missing:
                raise ValueError(f"{', '.join(missing)} required with PROVIDER=azure")
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return init_settings, _FlatEnvSource(settings_cls)


class SettingsError(ValueError):
    """One or more settings are invalid; each line names the variable."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("invalid settings:\n  " + "\n  ".join(problems))


def _describe(error: Mapping[str, Any]) -> str:
    loc = tuple(str(p) for p in error.get("loc", ()))
    spec = None
    length = len(loc)
    while length > 0:
        spec = _BY_PATH.get(loc[:length])
        if spec is not None:
            break
        length -= 1
    message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
    if spec is None:
        return message
    given = error.get("input")
    shown = f" (got {given!r})" if isinstance(given, str | int | float) else ""
    # within a structured value (a list of constraints): the item and field, e.g. [0].maxSkew
    inner = "".join(f"[{p}]" if p.isdigit() else f".{p}" for p in loc[length:])
    where = f" {inner.lstrip('.')}:" if inner else ""
    return f"{spec.env} ({spec.flag}):{where} {message}{shown}"


def load_settings(overrides: Mapping[str, str] | None = None) -> Settings:
    """Settings from the environment, with `overrides` (env name -> value, e.g. from flags)
    taking precedence; raises `SettingsError` naming each bad variable."""
    try:
        return Settings(**_nest(overrides or {}))
    except ValidationError as exc:
        raise SettingsError([_describe(e) for e in exc.errors()]) from None
