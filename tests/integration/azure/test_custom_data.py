"""The "aksscriptless" custom data read as the AKS node reads it (`nodeboot`): a bash script that
cloud-init runs, which waits for the node image's provisioning scripts, sets every variable they
need to join the node (checked for form, as the scripts use them: the API server's host name in
the bootstrap kubeconfig, the base64 CA, the bootstrap token, the containerd TOML, ...) and
starts them; kubelet flags the kubelet parses and only labels it accepts, judged by the
`k8s.io/kubelet` module's own rule (hack/kubeletlabels); a GPU node's NVIDIA driver and
containerd runtime."""

from __future__ import annotations

import base64
import datetime
import ipaddress
import re
import tomllib
from typing import Any

import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from karpy.apis.azure.v1beta1 import AKSNodeClass
from karpy.cloudprovider.azure.bootstrap import NodeBootstrap, custom_data
from karpy.cloudprovider.azure.gpu import driver_for
from karpy.scheduling.quantity import parse_quantity
from tests.integration.aws.gotools import kubelet_label_rule
from tests.integration.azure.nodeboot import START, read_custom_data

ENDPOINT = "https://my-aks-dns-12345678.hcp.westus2.azmk8s.io:443"
FQDN = "my-aks-dns-12345678.hcp.westus2.azmk8s.io"
TOKEN = "abcdef.0123456789abcdef"
SUBNET = (
    "/subscriptions/sub-1/resourceGroups/net-rg/providers/Microsoft.Network/"
    "virtualNetworks/aks-vnet-1/subnets/nodes"
)
LABELS = {
    "karpenter.sh/nodepool": "default",
    "karpenter.sh/capacity-type": "spot",
    "karpenter.azure.com/sku-family": "D",
    "node.kubernetes.io/instance-type": "Standard_D2s_v3",
    "kubernetes.io/arch": "amd64",
    "topology.kubernetes.io/zone": "westus2-1",
    "team": "web",
    "node-restriction.kubernetes.io/fenced": "true",
    "kubernetes.io/role": "worker",
    "example.k8s.io/owner": "ops",
}
REFUSED = {"node-restriction.kubernetes.io/fenced", "kubernetes.io/role", "example.k8s.io/owner"}
TAINTS = ("dedicated=web:NoSchedule", "example.com/not-ready:NoExecute")

# The variables the node image's provisioning scripts (AgentBaker's cse_main/cse_config) read to
# join the node; each must be set, and set to something.
REQUIRED = (
    "API_SERVER_NAME",
    "KUBE_CA_CRT",
    "TLS_BOOTSTRAP_TOKEN",
    "ENABLE_TLS_BOOTSTRAPPING",
    "KUBELET_FLAGS",
    "KUBELET_NODE_LABELS",
    "KUBERNETES_VERSION",
    "KUBE_BINARY_URL",
    "NETWORK_PLUGIN",
    "CONTAINERD_CONFIG_CONTENT",
    "CONTAINER_RUNTIME",
    "CLI_TOOL",
    "NEEDS_CONTAINERD",
    "IS_VHD",
    "SUBSCRIPTION_ID",
    "RESOURCE_GROUP",
    "LOCATION",
    "VM_TYPE",
    "SUBNET",
    "VIRTUAL_NETWORK",
    "VIRTUAL_NETWORK_RESOURCE_GROUP",
    "NETWORK_SECURITY_GROUP",
    "ROUTE_TABLE",
    "SERVICE_PRINCIPAL_CLIENT_ID",
    "SERVICE_PRINCIPAL_FILE_CONTENT",
    "USE_MANAGED_IDENTITY_EXTENSION",
    "USE_INSTANCE_METADATA",
    "VNET_CNI_PLUGINS_URL",
    "CNI_PLUGINS_URL",
    "SYSCTL_CONTENT",
    "NEEDS_CGROUPV2",
    "TARGET_CLOUD",
    "TARGET_ENVIRONMENT",
    "CSE_HELPERS_FILEPATH",
    "CSE_DISTRO_HELPERS_FILEPATH",
    "CSE_INSTALL_FILEPATH",
    "CSE_DISTRO_INSTALL_FILEPATH",
    "CSE_CONFIG_FILEPATH",
    "ADMINUSER",
    "MCR_REPOSITORY_BASE",
)
BOOLEANS = (
    "ENABLE_TLS_BOOTSTRAPPING",
    "ENABLE_SECURE_TLS_BOOTSTRAPPING",
    "NEEDS_CONTAINERD",
    "IS_VHD",
    "USE_MANAGED_IDENTITY_EXTENSION",
    "USE_INSTANCE_METADATA",
    "NEEDS_CGROUPV2",
    "GPU_NODE",
    "MIG_NODE",
    "SGX_NODE",
    "GPU_NEEDS_FABRIC_MANAGER",
    "CONFIG_GPU_DRIVER_IF_NEEDED",
    "ENABLE_GPU_DEVICE_PLUGIN_IF_NEEDED",
    "KUBELET_CONFIG_FILE_ENABLED",
)
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_NAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QUALIFIED = re.compile(
    rf"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?{_NAME}$"
)
_TAINT = re.compile(
    r"^(?P<key>[^=:]+)(=(?P<value>[^:]*))?:(?P<effect>NoSchedule|PreferNoSchedule|NoExecute)$"
)


def _ca_pem() -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ca")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now)
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM).decode()


CA = _ca_pem()
KUBELET = AKSNodeClass.model_validate(
    {
        "metadata": {"name": "default"},
        "spec": {
            "kubelet": {
                "imageGCHighThresholdPercent": 70,
                "imageGCLowThresholdPercent": 50,
                "cpuCFSQuota": False,
                "podPidsLimit": 4096,
                "allowedUnsafeSysctls": ["net.core.somaxconn", "kernel.msg*"],
                "containerLogMaxFiles": 3,
            }
        },
    }
).spec.kubelet


def boot(**changes: Any) -> NodeBootstrap:
    fields: dict[str, Any] = {
        "cluster_endpoint": ENDPOINT,
        "bootstrap_token": TOKEN,
        "ca_bundle": base64.b64encode(CA.encode()).decode(),
        "kubernetes_version": "1.33.2",
        "arch": "amd64",
        "subscription_id": "sub-1",
        "location": "westus2",
        "node_resource_group": "MC_rg_my-aks_westus2",
        "subnet_id": SUBNET,
        "max_pods": 110,
        "labels": LABELS,
        "taints": TAINTS,
        "kube_reserved": {"cpu": "100m", "memory": "1843Mi"},
        "eviction_memory": "750Mi",
        "kubelet": KUBELET,
        "cluster_dns": "10.0.0.10",
    }
    fields.update(changes)
    return NodeBootstrap(**fields)


def flags_of(variables: dict[str, str]) -> dict[str, str]:
    """KUBELET_FLAGS as the kubelet's flag parser takes them: `--name=value` each, unique."""
    out: dict[str, str] = {}
    for word in variables["KUBELET_FLAGS"].split(" "):
        assert re.fullmatch(r"--[a-z0-9][-a-z0-9]*=\S*", word), word
        name, _, value = word.partition("=")
        assert name not in out, f"{name} given twice"
        out[name] = value
    return out


def pairs(text: str, separator: str) -> dict[str, str]:
    return dict(item.split(separator, 1) for item in text.split(",") if item)


@pytest.fixture(scope="module")
def kubelet_rule() -> dict[str, Any]:
    return kubelet_label_rule(*LABELS, "kubernetes.azure.com/role", "kubernetes.azure.com/mode")


def test_cloud_init_runs_a_script_that_waits_for_the_image_then_starts_its_provisioning() -> None:
    data = custom_data(boot())
    assert len(data) <= 87_380  # ARM's limit on osProfile.customData (64 KiB before base64)
    node = read_custom_data(data)
    assert node.part_type == "text/x-shellscript"
    lines = node.text.splitlines()
    assert lines[0] == "#!/bin/bash"
    assert lines.index("set -o allexport") < lines.index("done")
    assert any(
        "/opt/azure/containers/provision.sh" in line for line in lines[: lines.index("done")]
    )
    assert lines[-1] == START


def test_every_variable_the_node_scripts_need_is_set_and_well_formed() -> None:
    v = read_custom_data(custom_data(boot())).variables
    missing = [name for name in REQUIRED if not v.get(name)]
    assert missing == []
    for name in BOOLEANS:
        assert v[name] in {"true", "false"}, name
    # The bootstrap kubeconfig the scripts write with these, read as the kubelet would.
    kubeconfig = yaml.safe_load(
        "clusters:\n- cluster:\n    server: https://" + v["API_SERVER_NAME"] + ":443\n"
        'users:\n- user:\n    token: "' + v["TLS_BOOTSTRAP_TOKEN"] + '"\n'
    )
    assert kubeconfig["clusters"][0]["cluster"]["server"] == f"https://{FQDN}:443"
    assert re.fullmatch(r"[a-z0-9]{6}\.[a-z0-9]{16}", kubeconfig["users"][0]["user"]["token"])
    assert v["ENABLE_TLS_BOOTSTRAPPING"] == "true"
    # `echo "$KUBE_CA_CRT" | base64 -d > /etc/kubernetes/certs/ca.crt`
    ca = x509.load_pem_x509_certificate(base64.b64decode(v["KUBE_CA_CRT"], validate=True))
    assert ca.subject == ca.issuer
    assert v["KUBERNETES_VERSION"] == "1.33.2"
    assert v["KUBE_BINARY_URL"].endswith("/v1.33.2/binaries/kubernetes-node-linux-amd64.tar.gz")
    assert "linux-amd64" in v["CNI_PLUGINS_URL"] and "linux-amd64" in v["VNET_CNI_PLUGINS_URL"]
    assert v["CREDENTIAL_PROVIDER_DOWNLOAD_URL"].endswith("-linux-amd64-v1.33.0.tar.gz")
    containerd = tomllib.loads(base64.b64decode(v["CONTAINERD_CONFIG_CONTENT"]).decode())
    cri = containerd["plugins"]["io.containerd.grpc.v1.cri"]
    assert containerd["version"] == 2
    assert cri["containerd"]["default_runtime_name"] == "runc"
    assert cri["containerd"]["runtimes"]["runc"]["options"]["SystemdCgroup"] is True
    sysctls = base64.b64decode(v["SYSCTL_CONTENT"]).decode().splitlines()
    assert all(re.fullmatch(r"[a-z0-9_.]+=\S+", s) for s in sysctls if not s.startswith("#"))
    assert (v["SUBNET"], v["VIRTUAL_NETWORK"], v["VIRTUAL_NETWORK_RESOURCE_GROUP"]) == (
        "nodes",
        "aks-vnet-1",
        "net-rg",
    )
    assert (v["SUBSCRIPTION_ID"], v["LOCATION"], v["RESOURCE_GROUP"]) == (
        "sub-1",
        "westus2",
        "MC_rg_my-aks_westus2",
    )
    assert re.fullmatch(r"aks-agentpool-\d{8}-nsg", v["NETWORK_SECURITY_GROUP"])
    assert base64.b64decode(v["SERVICE_PRINCIPAL_FILE_CONTENT"]) == b"msi"


def test_kubelet_flags_carry_taints_max_pods_dns_reservations_and_the_class_settings() -> None:
    flags = flags_of(read_custom_data(custom_data(boot())).variables)
    taints = flags["--register-with-taints"].split(",")
    assert taints[0] == "karpenter.sh/unregistered:NoExecute"
    assert set(taints) == {"karpenter.sh/unregistered:NoExecute", *TAINTS}
    for taint in taints:
        match = _TAINT.fullmatch(taint)
        assert match is not None and _QUALIFIED.fullmatch(match["key"]), taint
        assert _LABEL_VALUE.fullmatch(match["value"] or ""), taint
    assert flags["--max-pods"] == "110"
    ipaddress.ip_address(flags["--cluster-dns"])
    reserved = pairs(flags["--kube-reserved"], "=")
    assert set(reserved) == {"cpu", "memory"}
    assert parse_quantity(reserved["cpu"]) and parse_quantity(reserved["memory"])
    eviction = pairs(flags["--eviction-hard"], "<")
    assert eviction["memory.available"] == "750Mi"
    assert set(eviction) <= {"memory.available", "nodefs.available", "nodefs.inodesFree"}
    assert flags["--image-gc-high-threshold"] == "70"
    assert flags["--image-gc-low-threshold"] == "50"
    assert flags["--cpu-cfs-quota"] == "false"
    assert flags["--pod-max-pids"] == "4096"
    assert flags["--allowed-unsafe-sysctls"] == "net.core.somaxconn,kernel.msg*"
    assert flags["--container-log-max-files"] == "3"
    assert flags["--cloud-provider"] == "external"
    assert flags["--client-ca-file"] == "/etc/kubernetes/certs/ca.crt"


@pytest.mark.parametrize(
    ("version", "present", "absent"),
    [
        ("1.29.9", {"--feature-gates", "--keep-terminated-pod-volumes", "--cloud-config"},
         {"--image-credential-provider-config"}),
        ("1.31.1", {"--image-credential-provider-config", "--cloud-config"},
         {"--feature-gates", "--keep-terminated-pod-volumes"}),
        ("1.34.0", {"--image-credential-provider-bin-dir"}, {"--cloud-config"}),
    ],
)  # fmt: skip
def test_kubelet_flags_follow_the_kubernetes_version(
    version: str, present: set[str], absent: set[str]
) -> None:
    node = read_custom_data(custom_data(boot(kubernetes_version=version)))
    flags = flags_of(node.variables)
    assert present <= set(flags)
    assert not absent & set(flags)
    assert node.variables["KUBERNETES_VERSION"] == version


def test_node_labels_are_only_those_the_kubelet_accepts(kubelet_rule: dict[str, Any]) -> None:
    v = read_custom_data(custom_data(boot())).variables
    labels = pairs(v["KUBELET_NODE_LABELS"], "=")
    assert not set(labels) & REFUSED
    assert {k: labels[k] for k in LABELS if k not in REFUSED} == {
        k: val for k, val in LABELS.items() if k not in REFUSED
    }
    assert labels["kubernetes.azure.com/role"] == "agent"
    assert labels["kubernetes.azure.com/mode"] == "user"
    assert labels["kubernetes.azure.com/cluster"] == "MC_rg_my-aks_westus2"
    for key, value in labels.items():
        assert _QUALIFIED.fullmatch(key) and _LABEL_VALUE.fullmatch(value), (key, value)
        if "kubernetes.io/" in key or "k8s.io/" in key:
            assert kubelet_rule["allowed"][key], key
    for key in REFUSED:
        assert not kubelet_rule["allowed"][key], key


@pytest.mark.parametrize(
    ("plugin", "mode", "dataplane", "expected"),
    [
        ("azure", "overlay", "cilium", "none"),
        ("azure", "", "cilium", "none"),
        ("azure", "", "azure", "azure"),
        ("none", "", "cilium", "none"),
    ],
)
def test_the_network_plugin_is_the_one_the_node_scripts_install(
    plugin: str, mode: str, dataplane: str, expected: str
) -> None:
    b = boot(network_plugin=plugin, network_plugin_mode=mode, network_dataplane=dataplane)
    assert read_custom_data(custom_data(b)).variables["NETWORK_PLUGIN"] == expected


def test_values_with_shell_characters_reach_the_node_unchanged() -> None:
    labels = {"team": "a", "example.com/note": "x_y.z"}
    taints = ("example.com/quote=it-s:NoSchedule",)
    v = read_custom_data(
        custom_data(boot(labels=labels, taints=taints, tenant_id="t'$(x)"))
    ).variables
    assert v["TENANT_ID"] == "t'$(x)"
    assert "example.com/quote=it-s:NoSchedule" in v["KUBELET_FLAGS"]


def test_an_endpoint_without_a_host_is_refused() -> None:
    with pytest.raises(ValueError, match="no host name"):
        custom_data(boot(cluster_endpoint="https://:443"))


def test_a_kubelet_identity_is_the_nodes_and_labels_them() -> None:
    v = read_custom_data(custom_data(boot(kubelet_identity_client_id="client-1"))).variables
    assert v["USER_ASSIGNED_IDENTITY_ID"] == "client-1"
    labels = pairs(v["KUBELET_NODE_LABELS"], "=")
    assert labels["kubernetes.azure.com/kubelet-identity-client-id"] == "client-1"
    plain = read_custom_data(custom_data(boot())).variables
    assert "kubernetes.azure.com/kubelet-identity-client-id" not in plain["KUBELET_NODE_LABELS"]


# AKS cluster IDs of API server FQDNs as Go 1.26 computes them (upstream's getAKSClusterID:
# FNV-1a 64 of the first 33 characters seeding math/rand, first Uint32, "%08d", 8 characters).
GO_CLUSTER_IDS = {
    "my-aks-dns-12345678.hcp.westus2.azmk8s.io": "33175740",
    "test-cluster-dns-12345678.hcp.westus2.azmk8s.io": "17472771",
    "karpenter-dns-abcdef01.hcp.eastus.azmk8s.io": "22767199",
    "jzde8gx.d6ncf10epf91d-ho.d-.zdoc9is0j8h-t9l": "11966212",
    "50ce9-uvw5.3efr4edt-2sywb3wkh5dnsipzz": "16270328",
    "5fk2z9ri19r0wyojfljooa5.lqsaj08x-ui6d39zzzzg4zdmen2khvdga-j8": "56506322",
    "xkwo886vompzom75wbbr4qmw2wxfogo4mvn4a4wfhym4l1vfz": "85506700",
}


@pytest.mark.parametrize(("fqdn", "expected"), sorted(GO_CLUSTER_IDS.items()))
def test_the_agent_pool_names_carry_aks_s_cluster_id(fqdn: str, expected: str) -> None:
    v = read_custom_data(custom_data(boot(cluster_endpoint=f"https://{fqdn}:443"))).variables
    assert v["NETWORK_SECURITY_GROUP"] == f"aks-agentpool-{expected}-nsg"
    assert v["ROUTE_TABLE"] == f"aks-agentpool-{expected}-routetable"


# -- GPU nodes ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("size", "kind", "version", "tag"),
    [
        ("Standard_NC6s_v3", "cuda", "550.144.03", "20250328201547"),
        ("Standard_ND96asr_v4", "cuda", "550.144.03", "20250328201547"),
        ("Standard_NV36ads_A10_v5", "grid", "550.144.06", "20250512225043"),
        ("Standard_NC24", "cuda", "470.82.01", "20250328201547"),
    ],
)
def test_a_gpu_node_installs_its_nvidia_driver_and_runs_containers_with_it(
    size: str, kind: str, version: str, tag: str
) -> None:
    v = read_custom_data(custom_data(boot(gpu=driver_for(size)))).variables
    assert v["GPU_NODE"] == "true"
    assert v["CONFIG_GPU_DRIVER_IF_NEEDED"] == "true"
    # The image's scripts pull mcr.microsoft.com/aks/aks-gpu-<type>:<version>-<sha>.
    assert (v["GPU_DRIVER_TYPE"], v["GPU_DRIVER_VERSION"], v["GPU_IMAGE_SHA"]) == (
        kind,
        version,
        tag,
    )
    assert re.fullmatch(r"\d+\.\d+\.\d+", v["GPU_DRIVER_VERSION"])
    assert re.fullmatch(r"\d{14}", v["GPU_IMAGE_SHA"])
    # As upstream's aksscriptless mode: no MIG, no SGX, no fabric manager, no device plugin
    # from the scripts (the NVIDIA device plugin is the cluster's).
    for name in ("MIG_NODE", "SGX_NODE", "GPU_NEEDS_FABRIC_MANAGER"):
        assert v[name] == "false", name
    assert v["ENABLE_GPU_DEVICE_PLUGIN_IF_NEEDED"] == "false"
    assert v["GPU_INSTANCE_PROFILE"] == ""
    containerd = tomllib.loads(base64.b64decode(v["CONTAINERD_CONFIG_CONTENT"]).decode())
    runtimes = containerd["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]
    assert runtimes["default_runtime_name"] == "nvidia-container-runtime"
    nvidia = runtimes["runtimes"]["nvidia-container-runtime"]
    assert nvidia["runtime_type"] == "io.containerd.runc.v2"
    assert nvidia["options"] == {
        "BinaryName": "/usr/bin/nvidia-container-runtime",
        "SystemdCgroup": True,
    }
    assert runtimes["runtimes"]["untrusted"]["options"]["BinaryName"] == (
        "/usr/bin/nvidia-container-runtime"
    )
    assert "runc" not in runtimes["runtimes"]


def test_a_node_without_gpu_drivers_is_no_gpu_node() -> None:
    v = read_custom_data(custom_data(boot())).variables
    assert v["GPU_NODE"] == "false"
    assert (v["GPU_DRIVER_TYPE"], v["GPU_DRIVER_VERSION"], v["GPU_IMAGE_SHA"]) == ("", "", "")
    for name in ("MIG_NODE", "SGX_NODE", "GPU_NEEDS_FABRIC_MANAGER"):
        assert v[name] == "false", name
