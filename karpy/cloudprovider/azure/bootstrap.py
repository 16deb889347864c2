"""The custom data a VM boots with ("aksscriptless", the upstream Azure provider's default
provision mode), and the AKSNodeClass hash stamped on its NodeClaim.

Custom data: a bash script, base64 as ARM's `osProfile.customData` takes it. cloud-init runs a
user-data part that starts with `#!` as a script, so the AKS node image (whose provisioning
scripts, AgentBaker's `/opt/azure/containers/provision*.sh`, are baked in) gets what AKS's own
CustomScript extension command would give it: the script waits for the image's
`provision.sh`, sets the node's variables (`set -o allexport`, so the provisioning scripts
inherit them) and starts `provision_start.sh`. The variables that make the node join:

- `API_SERVER_NAME` (the host of `CLUSTER_ENDPOINT`; the scripts write
  `https://${API_SERVER_NAME}:443` into the kubelet's bootstrap kubeconfig), `KUBE_CA_CRT` (the
  cluster CA, base64 PEM, written to `/etc/kubernetes/certs/ca.crt`), `TLS_BOOTSTRAP_TOKEN` with
  `ENABLE_TLS_BOOTSTRAPPING=true` (TLS bootstrapping with `KUBELET_BOOTSTRAP_TOKEN`);
- `KUBELET_NODE_LABELS`: the node's labels the kubelet accepts (the `k8s.io/kubelet` rule,
  `karpy.cloudprovider.aws.kubeletlabels`; the rest are set on the Node once it registers), with
  the AKS agent labels;
- `KUBELET_FLAGS`: AKS's kubelet flags for the Kubernetes version, `--register-with-taints`
  (the NodeClaim's taints and startup taints and `karpenter.sh/unregistered:NoExecute`, which
  Karpenter removes once the Node registers), `--max-pods`, `--cluster-dns`, the SKU's
  `--kube-reserved` and `--eviction-hard`, and the AKSNodeClass's `kubelet` settings;
- the cluster's networking, subscription, region and node resource group, the Kubernetes
  version and binaries of the node's architecture, and the containerd configuration;
- on a GPU node (a size AKS installs NVIDIA drivers on, `karpy.cloudprovider.azure.gpu`):
  `GPU_NODE=true` with the driver's kind, version and `aks-gpu` image tag (`GPU_DRIVER_TYPE`,
  `GPU_DRIVER_VERSION`, `GPU_IMAGE_SHA`), which the image's scripts install, and containerd's
  default runtime `nvidia-container-runtime`, as upstream's aksscriptless mode gives it (MIG,
  fabric manager and the device plugin stay off there too). A class with `gpu.mode: None` gets
  none of it: its GPU nodes boot as any node, for a GPU operator to set up.

Hash: karpy's own value of the AKSNodeClass spec, with its own hash version, so a NodeClaim
launched by the upstream provider (another version) is re-stamped, never found drifted.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final
from urllib.parse import urlsplit

from karpy.apis.azure.v1beta1 import AKSNodeClass
from karpy.apis.azure.v1beta1 import labels as azure
from karpy.apis.azure.v1beta1.aksnodeclass import KubeletConfiguration
from karpy.apis.v1.labels import TAINT_EFFECT_NO_EXECUTE, TAINT_UNREGISTERED_KEY
from karpy.cloudprovider.aws.kubeletlabels import kubelet_safe
from karpy.cloudprovider.azure.gpu import GpuDriver

__all__ = [
    "CLUSTER_DNS_DEFAULT",
    "HASH_VERSION",
    "NodeBootstrap",
    "agentbaker_network_plugin",
    "api_server_name",
    "custom_data",
    "kubelet_flags",
    "kubelet_labels",
    "nodeclass_hash",
    "script",
]

HASH_VERSION: Final = "karpy-v1"
CLUSTER_DNS_DEFAULT: Final = "10.0.0.10"
"""The DNS service IP of an AKS cluster with the default service CIDR."""
REGISTRATION_TAINT: Final = f"{TAINT_UNREGISTERED_KEY}:{TAINT_EFFECT_NO_EXECUTE}"
MIRROR: Final = "https://acs-mirror.azureedge.net"
PAUSE_IMAGE: Final = "mcr.microsoft.com/oss/kubernetes/pause:3.6"
_AZURE_CNI_VERSION: Final = "1.4.32"
_CNI_PLUGINS_VERSION: Final = "1.1.1"
# The OOT ACR credential provider release that goes with each Kubernetes minor (1.30 on).
_CREDENTIAL_PROVIDER: Final = {30: "1.30.12", 31: "1.31.6", 32: "1.32.5"}
_CREDENTIAL_PROVIDER_LATEST: Final = "1.33.0"

_TLS_CIPHER_SUITES: Final = ",".join(
    (
        "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
        "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
        "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305",
        "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
        "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",
        "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        "TLS_RSA_WITH_AES_256_GCM_SHA384",
        "TLS_RSA_WITH_AES_128_GCM_SHA256",
    )
)
# AKS's kubelet flags on an agent node (before the version's, the taints' and the class's).
_BASE_FLAGS: Final = {
    "--address": "0.0.0.0",
    "--anonymous-auth": "false",
    "--authentication-token-webhook": "true",
    "--authorization-mode": "Webhook",
    "--cgroups-per-qos": "true",
    "--client-ca-file": "/etc/kubernetes/certs/ca.crt",
    "--cloud-config": "/etc/kubernetes/azure.json",
    "--cloud-provider": "external",
    "--cluster-domain": "cluster.local",
    "--enforce-node-allocatable": "pods",
    "--event-qps": "0",
    "--image-gc-high-threshold": "85",
    "--image-gc-low-threshold": "80",
    "--kubeconfig": "/var/lib/kubelet/kubeconfig",
    "--node-status-update-frequency": "10s",
    "--pod-infra-container-image": PAUSE_IMAGE,
    "--pod-manifest-path": "/etc/kubernetes/manifests",
    "--pod-max-pids": "-1",
    "--protect-kernel-defaults": "true",
    "--read-only-port": "0",
    "--resolv-conf": "/run/systemd/resolve/resolv.conf",
    "--rotate-certificates": "true",
    "--streaming-connection-idle-timeout": "4h",
    "--tls-cert-file": "/etc/kubernetes/certs/kubeletserver.crt",
    "--tls-cipher-suites": _TLS_CIPHER_SUITES,
    "--tls-private-key-file": "/etc/kubernetes/certs/kubeletserver.key",
}
_NODEFS_EVICTION: Final = "nodefs.available<10%,nodefs.inodesFree<5%"

_SYSCTLS: Final = """\
# Shorter TCP retries (kubernetes/kubernetes#41916) and larger queues and neighbour tables.
net.ipv4.tcp_retries2=8
net.core.message_burst=80
net.core.message_cost=40
net.core.somaxconn=16384
net.ipv4.tcp_max_syn_backlog=16384
net.ipv4.neigh.default.gc_thresh1=4096
net.ipv4.neigh.default.gc_thresh2=8192
net.ipv4.neigh.default.gc_thresh3=16384
"""


def _containerd_config(*, cgroup_v2: bool = True, gpu: bool = False) -> str:
    """containerd's configuration (version 2, CRI) on an AKS node: runc, or on a GPU node the
    NVIDIA container runtime (which hands the GPUs to containers) for every runtime."""
    cri = 'plugins."io.containerd.grpc.v1.cri"'
    systemd = "      SystemdCgroup = true\n" if cgroup_v2 else ""
    default = "nvidia-container-runtime" if gpu else "runc"
    binary = "/usr/bin/nvidia-container-runtime" if gpu else "/usr/bin/runc"
    runtimes = ""
    for name in (default, "untrusted"):
        runtimes += (
            f"    [{cri}.containerd.runtimes.{name}]\n"
            '      runtime_type = "io.containerd.runc.v2"\n'
            f"    [{cri}.containerd.runtimes.{name}.options]\n"
            f'      BinaryName = "{binary}"\n'
            f"{systemd if name == default else ''}"
        )
    return (
        "version = 2\n"
        "oom_score = 0\n"
        f"[{cri}]\n"
        f'  sandbox_image = "{PAUSE_IMAGE}"\n'
        f"  [{cri}.containerd]\n"
        f'    default_runtime_name = "{default}"\n'
        f"{runtimes}"
        f"  [{cri}.registry]\n"
        '    config_path = "/etc/containerd/certs.d"\n'
        f"  [{cri}.registry.headers]\n"
        '    X-Meta-Source-Client = ["azure/aks"]\n'
        "[metrics]\n"
        '  address = "0.0.0.0:10257"\n'
    )


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def api_server_name(endpoint: str) -> str:
    """The host of the cluster endpoint (`https://x.hcp.westus2.azmk8s.io:443` -> the FQDN)."""
    host = urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}").hostname
    if not host:
        raise ValueError(f"CLUSTER_ENDPOINT {endpoint!r} has no host name")
    return host


def agentbaker_network_plugin(plugin: str, mode: str, dataplane: str) -> str:
    """`NETWORK_PLUGIN` as the node scripts take it: `none` where the CNI is installed by the
    cluster (Azure CNI overlay, Cilium on the node subnet, no plugin), else the plugin."""
    if plugin == "none" or (plugin == "azure" and (mode == "overlay" or dataplane == "cilium")):
        return "none"
    return plugin


_INT32_MAX: Final = (1 << 31) - 1
_U64: Final = (1 << 64) - 1
# Go's math/rand additive lagged Fibonacci generator (607 words, tap 273) takes its first
# output from words 333 and 606 of its seeded state; these are the constants Go mixes into those
# two words (`rngCooked[333]`, `rngCooked[606]` in math/rand/rng.go).
_GO_RAND_COOKED: Final = {333: -4633371852008891965, 606: 4152330101494654406}


def _go_seedrand(x: int) -> int:
    """x * 48271 mod (2^31 - 1) (Schrage's method, as Go computes it in int32)."""
    hi, lo = x // 44488, x % 44488
    x = 48271 * lo - 3399 * hi
    return x + _INT32_MAX if x < 0 else x


def _go_rand_first_uint32(seed: int) -> int:
    """`rand.New(rand.NewSource(seed)).Uint32()` of Go's math/rand: the generator is seeded
    word by word from a Lehmer sequence, and the first output is the sum of words 333 and 606."""
    rem = abs(seed) % _INT32_MAX  # Go's % truncates; a negative remainder is then lifted
    x = (rem if seed >= 0 or rem == 0 else _INT32_MAX - rem) or 89482311
    words: dict[int, int] = {}
    for i in range(-20, 607):
        x = _go_seedrand(x)
        if i < 0:
            continue
        u = (x << 40) & _U64
        x = _go_seedrand(x)
        u ^= (x << 20) & _U64
        x = _go_seedrand(x)
        u ^= x
        if i in _GO_RAND_COOKED:
            words[i] = u ^ (_GO_RAND_COOKED[i] & _U64)
    first = (words[333] + words[606]) & _U64
    int63 = first & ((1 << 63) - 1)
    return (int63 >> 31) & 0xFFFFFFFF


def _fnv64a(data: bytes) -> int:
    h = 0xCBF29CE484222325
    for byte in data:
        h = ((h ^ byte) * 0x100000001B3) & _U64
    return h


def cluster_id(fqdn: str) -> str:
    """AKS's 8-digit cluster ID (the `<id>` of `aks-agentpool-<id>-nsg`), derived from the DNS
    prefix (the FQDN's first 33 characters) as AKS derives it: FNV-1a 64 of the prefix seeds
    Go's math/rand, whose first Uint32 is printed with `%08d` and cut to 8 characters."""
    digest = _fnv64a(fqdn[:33].encode())
    seed = digest - (1 << 64) if digest >= 1 << 63 else digest  # Go's int64(uint64)
    return f"{_go_rand_first_uint32(seed):08d}"[:8]


def normalized_cluster_label(resource_group: str) -> str:
    """The `kubernetes.azure.com/cluster` label value: the node resource group made a valid
    label value (parentheses to `-`, at most 63 characters, ending in an alphanumeric)."""
    value = resource_group.replace("(", "-").replace(")", "-")[:63]
    if value.endswith(("-", "_", ".")):
        value = value[:62] + "z" if len(value) > 62 else value + "z"
    return value


def kubelet_labels(
    labels: Mapping[str, str], *, node_resource_group: str, kubelet_identity_client_id: str = ""
) -> dict[str, str]:
    """The labels the kubelet registers its Node with: AKS's agent labels (and the kubelet
    identity's client ID when there is one), then the node's labels that the kubelet accepts."""
    out = {
        azure.AKS_LABEL_MODE: azure.MODE_USER,
        "kubernetes.azure.com/role": "agent",
        azure.AKS_LABEL_CLUSTER: normalized_cluster_label(node_resource_group),
    }
    if kubelet_identity_client_id:
        out[azure.AKS_LABEL_KUBELET_IDENTITY_CLIENT_ID] = kubelet_identity_client_id
    out.update(kubelet_safe(labels))
    return out


def _minor(version: str) -> int:
    match = re.match(r"v?(\d+)\.(\d+)", version)
    if match is None:
        raise ValueError(f"not a Kubernetes version: {version!r}")
    return int(match.group(2))


def credential_provider_url(version: str, arch: str) -> str:
    """The out-of-tree ACR credential provider of the version (1.30 on), else empty."""
    minor = _minor(version)
    if minor < 30:
        return ""
    release = _CREDENTIAL_PROVIDER.get(minor, _CREDENTIAL_PROVIDER_LATEST)
    return (
        f"{MIRROR}/cloud-provider-azure/v{release}/binaries/"
        f"azure-acr-credential-provider-linux-{arch}-v{release}.tar.gz"
    )


def _join(items: Mapping[str, str], separator: str) -> str:
    return ",".join(f"{k}{separator}{v}" for k, v in sorted(items.items()))


@dataclass(frozen=True, slots=True)
class NodeBootstrap:
    """Everything one node's custom data carries."""

    cluster_endpoint: str
    bootstrap_token: str
    ca_bundle: str
    """The cluster CA, base64 PEM (as a kubeconfig's `certificate-authority-data`)."""
    kubernetes_version: str
    arch: str
    subscription_id: str
    location: str
    node_resource_group: str
    subnet_id: str
    max_pods: int
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: Sequence[str] = ()
    """`key[=value]:Effect`; the registration taint is added."""
    kube_reserved: Mapping[str, str] = field(default_factory=dict)
    eviction_memory: str = "750Mi"
    kubelet: KubeletConfiguration | None = None
    cluster_dns: str = CLUSTER_DNS_DEFAULT
    network_plugin: str = "azure"
    network_plugin_mode: str = "overlay"
    network_dataplane: str = "cilium"
    network_policy: str = ""
    tenant_id: str = ""
    kubelet_identity_client_id: str = ""
    admin_username: str = "azureuser"
    gpu: GpuDriver | None = None
    """The NVIDIA driver to install: set on a GPU node whose class installs drivers."""


def kubelet_flags(b: NodeBootstrap) -> dict[str, str]:
    """The kubelet's flags (`--name` -> value) for the node."""
    flags = dict(_BASE_FLAGS)
    minor = _minor(b.kubernetes_version)
    if minor < 31:
        flags["--keep-terminated-pod-volumes"] = "false"
    if minor >= 34:
        del flags["--cloud-config"]
    if credential_provider_url(b.kubernetes_version, b.arch):
        flags["--image-credential-provider-config"] = (
            "/var/lib/kubelet/credential-provider-config.yaml"
        )
        flags["--image-credential-provider-bin-dir"] = "/var/lib/kubelet/credential-provider"
    else:
        flags["--feature-gates"] = "DisableKubeletCloudCredentialProviders=false"
        flags["--azure-container-registry-config"] = "/etc/kubernetes/azure.json"
    taints = [REGISTRATION_TAINT, *(t for t in b.taints if t != REGISTRATION_TAINT)]
    flags["--register-with-taints"] = ",".join(dict.fromkeys(taints))
    flags["--max-pods"] = str(b.max_pods)
    flags["--cluster-dns"] = b.cluster_dns
    if b.kube_reserved:
        flags["--kube-reserved"] = _join(b.kube_reserved, "=")
    flags["--eviction-hard"] = f"memory.available<{b.eviction_memory},{_NODEFS_EVICTION}"
    k = b.kubelet
    if k is not None:
        if k.image_gc_high_threshold_percent is not None:
            flags["--image-gc-high-threshold"] = str(k.image_gc_high_threshold_percent)
        if k.image_gc_low_threshold_percent is not None:
            flags["--image-gc-low-threshold"] = str(k.image_gc_low_threshold_percent)
        flags["--cpu-cfs-quota"] = str(k.cpu_cfs_quota).lower()
        flags["--cpu-cfs-quota-period"] = k.cpu_cfs_quota_period
        flags["--cpu-manager-policy"] = k.cpu_manager_policy
        flags["--topology-manager-policy"] = k.topology_manager_policy
        flags["--container-log-max-size"] = k.container_log_max_size
        flags["--container-log-max-files"] = str(k.container_log_max_files)
        if k.pod_pids_limit is not None:
            flags["--pod-max-pids"] = str(k.pod_pids_limit)
        if k.allowed_unsafe_sysctls:
            flags["--allowed-unsafe-sysctls"] = ",".join(k.allowed_unsafe_sysctls)
        if k.fail_swap_on is not None:
            flags["--fail-swap-on"] = str(k.fail_swap_on).lower()
    return flags


def variables(b: NodeBootstrap) -> dict[str, str]:
    """The variables the node's provisioning scripts read, in the order they are set."""
    fqdn = api_server_name(b.cluster_endpoint)
    cid = cluster_id(fqdn)
    subnet = b.subnet_id.strip("/").split("/")
    # subscriptions/<s>/resourceGroups/<rg>/providers/Microsoft.Network/
    # virtualNetworks/<vnet>/subnets/<name>
    empty = ("", "", "")
    vnet_group, vnet, subnet_name = (
        (subnet[3], subnet[7], subnet[9]) if len(subnet) >= 10 else empty
    )
    flags = kubelet_flags(b)
    labels = kubelet_labels(
        b.labels,
        node_resource_group=b.node_resource_group,
        kubelet_identity_client_id=b.kubelet_identity_client_id,
    )
    credential_provider = credential_provider_url(b.kubernetes_version, b.arch)
    version = b.kubernetes_version.lstrip("v")
    true, false = "true", "false"
    gpu = b.gpu
    return {
        "ADMINUSER": b.admin_username,
        "TENANT_ID": b.tenant_id,
        "KUBERNETES_VERSION": version,
        "KUBE_BINARY_URL": (
            f"{MIRROR}/kubernetes/v{version}/binaries/kubernetes-node-linux-{b.arch}.tar.gz"
        ),
        "CREDENTIAL_PROVIDER_DOWNLOAD_URL": credential_provider,
        "SUBSCRIPTION_ID": b.subscription_id,
        "RESOURCE_GROUP": b.node_resource_group,
        "LOCATION": b.location,
        "VM_TYPE": "vmss",
        "SUBNET": subnet_name,
        "NETWORK_SECURITY_GROUP": f"aks-agentpool-{cid}-nsg",
        "VIRTUAL_NETWORK": vnet,
        "VIRTUAL_NETWORK_RESOURCE_GROUP": vnet_group,
        "ROUTE_TABLE": f"aks-agentpool-{cid}-routetable",
        "SERVICE_PRINCIPAL_CLIENT_ID": "msi",
        "SERVICE_PRINCIPAL_FILE_CONTENT": _b64("msi"),
        "USER_ASSIGNED_IDENTITY_ID": b.kubelet_identity_client_id,
        "USE_MANAGED_IDENTITY_EXTENSION": true,
        "USE_INSTANCE_METADATA": true,
        "NETWORK_PLUGIN": agentbaker_network_plugin(
            b.network_plugin, b.network_plugin_mode, b.network_dataplane
        ),
        "NETWORK_POLICY": b.network_policy,
        "NETWORK_MODE": "",
        "VNET_CNI_PLUGINS_URL": (
            f"{MIRROR}/azure-cni/v{_AZURE_CNI_VERSION}/binaries/"
            f"azure-vnet-cni-linux-{b.arch}-v{_AZURE_CNI_VERSION}.tgz"
        ),
        "CNI_PLUGINS_URL": (
            f"{MIRROR}/cni-plugins/v{_CNI_PLUGINS_VERSION}/binaries/"
            f"cni-plugins-linux-{b.arch}-v{_CNI_PLUGINS_VERSION}.tgz"
        ),
        "CLOUDPROVIDER_BACKOFF": true,
        "CLOUDPROVIDER_BACKOFF_MODE": "v2",
        "CLOUDPROVIDER_BACKOFF_RETRIES": "6",
        "CLOUDPROVIDER_BACKOFF_EXPONENT": "0",
        "CLOUDPROVIDER_BACKOFF_DURATION": "5",
        "CLOUDPROVIDER_BACKOFF_JITTER": "0",
        "CLOUDPROVIDER_RATELIMIT": true,
        "CLOUDPROVIDER_RATELIMIT_QPS": "10",
        "CLOUDPROVIDER_RATELIMIT_QPS_WRITE": "10",
        "CLOUDPROVIDER_RATELIMIT_BUCKET": "100",
        "CLOUDPROVIDER_RATELIMIT_BUCKET_WRITE": "100",
        "LOAD_BALANCER_DISABLE_OUTBOUND_SNAT": false,
        "LOAD_BALANCER_SKU": "Standard",
        "EXCLUDE_MASTER_FROM_STANDARD_LB": true,
        "MAXIMUM_LOADBALANCER_RULE_COUNT": "250",
        "CONTAINER_RUNTIME": "containerd",
        "CLI_TOOL": "ctr",
        "NEEDS_CONTAINERD": true,
        "CONTAINERD_CONFIG_CONTENT": _b64(_containerd_config(gpu=gpu is not None)),
        "API_SERVER_NAME": fqdn,
        "KUBE_CA_CRT": b.ca_bundle,
        "ENABLE_TLS_BOOTSTRAPPING": true,
        "ENABLE_SECURE_TLS_BOOTSTRAPPING": false,
        "TLS_BOOTSTRAP_TOKEN": b.bootstrap_token,
        "KUBELET_FLAGS": " ".join(f"{k}={v}" for k, v in sorted(flags.items())),
        "KUBELET_NODE_LABELS": _join(labels, "="),
        "KUBELET_CONFIG_FILE_ENABLED": false,
        "IS_VHD": true,
        "GPU_NODE": true if gpu is not None else false,
        "SGX_NODE": false,
        "MIG_NODE": false,
        "CONFIG_GPU_DRIVER_IF_NEEDED": true,
        "ENABLE_GPU_DEVICE_PLUGIN_IF_NEEDED": false,
        "GPU_NEEDS_FABRIC_MANAGER": false,
        "GPU_DRIVER_TYPE": gpu.kind if gpu is not None else "",
        "GPU_DRIVER_VERSION": gpu.version if gpu is not None else "",
        "GPU_IMAGE_SHA": gpu.image_tag if gpu is not None else "",
        "GPU_INSTANCE_PROFILE": "",
        "NEEDS_CGROUPV2": true,
        "SYSCTL_CONTENT": _b64(_SYSCTLS),
        "ENSURE_NO_DUPE_PROMISCUOUS_BRIDGE": false,
        "DISABLE_SSH": false,
        "IS_KATA": false,
        "TARGET_CLOUD": "AzurePublicCloud",
        "TARGET_ENVIRONMENT": "AzurePublicCloud",
        "IS_CUSTOM_CLOUD": false,
        "OUTBOUND_COMMAND": "curl -v --insecure --proxy-insecure https://mcr.microsoft.com/v2/",
        "CSE_HELPERS_FILEPATH": "/opt/azure/containers/provision_source.sh",
        "CSE_DISTRO_HELPERS_FILEPATH": "/opt/azure/containers/provision_source_distro.sh",
        "CSE_INSTALL_FILEPATH": "/opt/azure/containers/provision_installs.sh",
        "CSE_DISTRO_INSTALL_FILEPATH": "/opt/azure/containers/provision_installs_distro.sh",
        "CSE_CONFIG_FILEPATH": "/opt/azure/containers/provision_configs.sh",
        "MCR_REPOSITORY_BASE": "mcr.microsoft.com",
        "ENABLE_IMDS_RESTRICTION": false,
        "INSERT_IMDS_RESTRICTION_RULE_TO_MANGLE_TABLE": false,
        "CSE_TIMEOUT": "15m",
    }


def script(b: NodeBootstrap) -> str:
    """The bash script of the custom data (before base64)."""
    lines = [
        "#!/bin/bash",
        "# karpy: AKS node bootstrapping (aksscriptless), run by cloud-init from the custom data.",
        "set -o allexport",
        # The image's provisioning waits for this marker; the CSE log directory is expected.
        "echo '#EOF' >> /opt/azure/manifest.json",
        "mkdir -p /var/log/azure/Microsoft.Azure.Extensions.CustomScript/events",
        "echo $(date),$(hostname) > /var/log/azure/cluster-provision-cse-output.log",
        # Wait (up to 20 minutes) for cloud-init to have laid out the image's provision.sh.
        "for i in $(seq 1 1200); do",
        '  grep -Fq "EOF" /opt/azure/containers/provision.sh && break',
        "  if [ $i -eq 1200 ]; then exit 100; else sleep 1; fi",
        "done",
    ]
    lines += [f"{name}={shlex.quote(value)}" for name, value in variables(b).items()]
    lines.append('/usr/bin/nohup /bin/bash -c "/bin/bash /opt/azure/containers/provision_start.sh"')
    return "\n".join(lines) + "\n"


def custom_data(b: NodeBootstrap) -> str:
    """The base64 custom data of a node."""
    return _b64(script(b))


def nodeclass_hash(nodeclass: AKSNodeClass) -> str:
    """A stable hash of the spec (key order and defaults as the model writes them)."""
    spec = nodeclass.spec.to_dict()
    text = json.dumps(spec, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]
