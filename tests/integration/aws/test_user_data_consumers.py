"""The user data of every AMI family read the way the node reads it: AL2023's MIME archive as
nodeadm does (and nodeadm's own `config check` on karpy's NodeConfig, plus the fields nodeadm's
`init` requires), AL2's script as the shell splits it for bootstrap.sh, Bottlerocket's TOML as
its settings, Windows' PowerShell call of Start-EKSBootstrap.ps1. Each carries the cluster's
name, endpoint, CA, DNS, max pods, the registration taint with the NodePool's taints, the
EC2NodeClass's kubelet settings, and only labels the kubelet accepts, judged by the
`k8s.io/kubelet` module's own rule (hack/kubeletlabels)."""

from __future__ import annotations

import email
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml

from karpy.cloudprovider.aws.kubeletlabels import (
    KUBELET_LABEL_NAMESPACES,
    KUBELET_LABELS,
    kubelet_accepts,
)
from karpy.cloudprovider.aws.userdata import BootstrapOptions, Taint, user_data
from tests.integration.aws.gotools import (
    kubelet_label_rule,
    nodeadm_config_check,
    nodeadm_strict_read,
)

NAME = "prod"
ENDPOINT = "https://ABC.gr7.us-east-1.eks.amazonaws.com"
CA = "Q0FCVU5ETEU="
CIDR = "10.100.0.0/16"
DNS = "10.100.0.10"
LABELS = {
    "karpenter.sh/nodepool": "default",
    "karpenter.sh/capacity-type": "on-demand",
    "team": "a",
    "kubernetes.io/arch": "amd64",
    "node.kubernetes.io/instance-type": "m5.large",
    "topology.kubernetes.io/zone": "us-east-1a",
    "feature.node.kubernetes.io/gpu": "true",
    "node-restriction.kubernetes.io/fenced": "true",
    "example.k8s.io/owner": "ops",
    "kubernetes.io/role": "worker",
    "karpenter.k8s.aws/instance-family": "m5",
}
REFUSED = {
    "node-restriction.kubernetes.io/fenced",
    "example.k8s.io/owner",
    "kubernetes.io/role",
}
TAINTS = (
    Taint(key="dedicated", value="web", effect="NoSchedule"),
    Taint(key="example.com/agent-not-ready", effect="NoExecute"),
)
KUBELET = {
    "kubeReserved": {"cpu": "100m", "memory": "300Mi", "ephemeral-storage": "1Gi"},
    "systemReserved": {"cpu": "50m", "memory": "100Mi"},
    "evictionHard": {"memory.available": "5%"},
    "evictionSoft": {"memory.available": "10%"},
    "evictionSoftGracePeriod": {"memory.available": "1m"},
    "evictionMaxPodGracePeriod": 60,
    "imageGCHighThresholdPercent": 85,
    "imageGCLowThresholdPercent": 80,
    "cpuCFSQuota": False,
}
OPTIONS = BootstrapOptions(
    cluster_name=NAME,
    cluster_endpoint=ENDPOINT,
    ca_bundle=CA,
    cluster_cidr=CIDR,
    max_pods=29,
    cluster_dns=(DNS,),
    labels=LABELS,
    taints=TAINTS,
    kubelet=KUBELET,
)
REGISTRATION = "karpenter.sh/unregistered:NoExecute"
EXPECTED_TAINTS = {
    "dedicated=web:NoSchedule",
    "example.com/agent-not-ready:NoExecute",
    REGISTRATION,
}


@pytest.fixture(scope="module")
def kubelet_rule() -> dict[str, Any]:
    return kubelet_label_rule(*LABELS)


def test_karpys_kubelet_label_rule_is_the_kubelets(kubelet_rule: dict[str, Any]) -> None:
    assert set(kubelet_rule["labels"]) == KUBELET_LABELS
    assert set(kubelet_rule["namespaces"]) == KUBELET_LABEL_NAMESPACES
    for key, allowed in kubelet_rule["allowed"].items():
        namespace = key.partition("/")[0] if "/" in key else ""
        kubernetes = any(
            namespace == d or namespace.endswith("." + d) for d in ("kubernetes.io", "k8s.io")
        )
        assert kubelet_accepts(key) == (not kubernetes or allowed), key
    assert {k for k in LABELS if not kubelet_accepts(k)} == REFUSED


def assert_labels(given: dict[str, str], kubelet_rule: dict[str, Any]) -> None:
    """Only labels the kubelet accepts, all of those, and the do-not-sync-taints label."""
    assert given.pop("karpenter.sh/do-not-sync-taints") == "true"
    assert given == {k: v for k, v in LABELS.items() if k not in REFUSED}
    assert not set(given) & REFUSED
    for key in given:
        if "kubernetes.io/" in key or "k8s.io/" in key:
            assert kubelet_rule["allowed"][key], key


def pairs(text: str, separator: str = "=") -> dict[str, str]:
    return dict(item.split(separator, 1) for item in text.split(",") if item)


def flags_of(args: list[str]) -> dict[str, str]:
    return dict(a.removeprefix("--").split("=", 1) for a in args)


# -- AL2023 ------------------------------------------------------------------------------------


def nodeadm_configs(text: str) -> list[dict[str, Any]]:
    """The NodeConfig parts of the MIME archive, as nodeadm reads user data."""
    message = email.message_from_string(text)
    assert message.get_content_type() == "multipart/mixed"
    return [
        yaml.safe_load(str(part.get_payload()))
        for part in message.walk()
        if part.get_content_type() == "application/node.eks.aws"
    ]


def test_al2023_nodeadm_accepts_the_node_config(
    tmp_path: Path, kubelet_rule: dict[str, Any]
) -> None:
    configs = nodeadm_configs(user_data("AL2023", OPTIONS))
    assert len(configs) == 1
    config = configs[0]
    path = tmp_path / "nodeconfig.yaml"
    path.write_text(yaml.safe_dump(config))
    checked = nodeadm_config_check(path)
    assert checked.returncode == 0, checked.stderr
    assert "Configuration is valid" in checked.stderr + checked.stdout
    # Every field karpy writes is one of nodeadm's (its `config check` ignores unknown ones).
    assert "error" not in nodeadm_strict_read(path)
    # The check is not a rubber stamp: a NodeConfig of an unknown version is refused.
    path.write_text(yaml.safe_dump({**config, "apiVersion": "node.eks.aws/v9"}))
    refused = nodeadm_config_check(path)
    assert refused.returncode != 0 and "no kind" in refused.stderr + refused.stdout

    # What `nodeadm init` validates and `config check` does not (ValidateNodeConfig).
    cluster = config["spec"]["cluster"]
    for required in ("name", "apiServerEndpoint", "certificateAuthority", "cidr"):
        assert cluster.get(required), f"nodeadm init refuses a NodeConfig without {required}"
    assert cluster == {
        "name": NAME,
        "apiServerEndpoint": ENDPOINT,
        "certificateAuthority": CA,
        "cidr": CIDR,
    }

    kubelet = config["spec"]["kubelet"]
    settings = kubelet["config"]
    assert settings["maxPods"] == 29 and settings["clusterDNS"] == [DNS]
    assert {
        f"{t['key']}={t['value']}:{t['effect']}" if t.get("value") else f"{t['key']}:{t['effect']}"
        for t in settings["registerWithTaints"]
    } == EXPECTED_TAINTS
    assert {k: settings[k] for k in KUBELET} == KUBELET
    (flag,) = kubelet["flags"]
    assert flag.startswith("--node-labels=")
    assert_labels(pairs(flag.removeprefix("--node-labels=")), kubelet_rule)


V6_CIDR = "fd12:3456:789a::/108"
V6_DNS = "fd12:3456:789a::a"
RAID0_IPV6 = BootstrapOptions(
    **{
        **OPTIONS.__dict__,
        "instance_store_policy": "RAID0",
        "cluster_cidr": V6_CIDR,
        "cluster_dns": (V6_DNS,),
        "ip_family": "ipv6",
    }
)


def test_al2023_nodeadm_accepts_raid0_and_an_ipv6_cluster(tmp_path: Path) -> None:
    (config,) = nodeadm_configs(user_data("AL2023", RAID0_IPV6))
    path = tmp_path / "nodeconfig.yaml"
    path.write_text(yaml.safe_dump(config))
    checked = nodeadm_config_check(path)
    assert checked.returncode == 0, checked.stderr
    assert "Configuration is valid" in checked.stderr + checked.stdout
    # `config check` reads neither field names nor the strategy, so read it with nodeadm's
    # own types: the strategy its local-disk aspect acts on, among those it defines; the
    # IPv6 service CIDR it takes the node's IP family from; the kubelet's IPv6 DNS IP.
    read = nodeadm_strict_read(path)
    assert "error" not in read, read["error"]
    spec = read["config"]["spec"]
    assert spec["instance"]["localStorage"]["strategy"] == "RAID0"
    assert "RAID0" in read["localStorageStrategies"]
    assert spec["cluster"]["cidr"] == V6_CIDR
    assert config["spec"]["kubelet"]["config"]["clusterDNS"] == [V6_DNS]
    # The strict reading is not a rubber stamp: a misspelt field is refused.
    config["spec"]["instance"] = {"localStorag": {"strategy": "RAID0"}}
    path.write_text(yaml.safe_dump(config))
    assert "localStorag" in nodeadm_strict_read(path)["error"]


def test_al2023_without_the_cidr_is_what_nodeadm_init_refuses(tmp_path: Path) -> None:
    options = BootstrapOptions(**{**OPTIONS.__dict__, "cluster_cidr": None})
    (config,) = nodeadm_configs(user_data("AL2023", options))
    assert "cidr" not in config["spec"]["cluster"]


# -- AL2 ---------------------------------------------------------------------------------------


def bootstrap_sh_args(text: str) -> list[str]:
    """The arguments bash passes to /etc/eks/bootstrap.sh in karpy's script part."""
    message = email.message_from_string(text)
    scripts = [
        str(p.get_payload()) for p in message.walk() if p.get_content_type() == "text/x-shellscript"
    ]
    script = scripts[-1].replace("\\\n", " ")
    (line,) = [ln for ln in script.splitlines() if ln.startswith("/etc/eks/bootstrap.sh")]
    return shlex.split(line)[1:]


def options_of(args: list[str]) -> tuple[list[str], dict[str, str]]:
    positional, named, i = [], {}, 0
    while i < len(args):
        if args[i].startswith("--"):
            named[args[i]] = args[i + 1]
            i += 2
        else:
            positional.append(args[i])
            i += 1
    return positional, named


def assert_kubelet_flags(extra: str, kubelet_rule: dict[str, Any]) -> None:
    flags = flags_of(shlex.split(extra))
    assert_labels(pairs(flags["node-labels"]), kubelet_rule)
    assert set(flags["register-with-taints"].split(",")) == EXPECTED_TAINTS
    assert flags["max-pods"] == "29"
    assert pairs(flags["kube-reserved"]) == KUBELET["kubeReserved"]
    assert pairs(flags["system-reserved"]) == KUBELET["systemReserved"]
    assert pairs(flags["eviction-hard"], "<") == KUBELET["evictionHard"]
    assert pairs(flags["eviction-soft"], "<") == KUBELET["evictionSoft"]
    assert pairs(flags["eviction-soft-grace-period"]) == KUBELET["evictionSoftGracePeriod"]
    assert flags["eviction-max-pod-grace-period"] == "60"
    assert (flags["image-gc-high-threshold"], flags["image-gc-low-threshold"]) == ("85", "80")
    assert flags["cpu-cfs-quota"] == "false"


def test_al2_bootstrap_sh_gets_the_cluster_dns_and_kubelet_flags(
    kubelet_rule: dict[str, Any],
) -> None:
    positional, named = options_of(bootstrap_sh_args(user_data("AL2", OPTIONS)))
    assert positional == [NAME]
    assert named["--apiserver-endpoint"] == ENDPOINT
    assert named["--b64-cluster-ca"] == CA
    assert named["--dns-cluster-ip"] == DNS
    assert named["--use-max-pods"] == "false"
    assert_kubelet_flags(named["--kubelet-extra-args"], kubelet_rule)


def test_al2_bootstrap_sh_gets_raid0_and_the_ipv6_family() -> None:
    positional, named = options_of(bootstrap_sh_args(user_data("AL2", RAID0_IPV6)))
    assert positional == [NAME]
    assert named["--local-disks"] == "raid0"
    assert named["--ip-family"] == "ipv6"
    assert named["--dns-cluster-ip"] == V6_DNS
    _, plain = options_of(bootstrap_sh_args(user_data("AL2", OPTIONS)))
    assert "--local-disks" not in plain and "--ip-family" not in plain


# -- Bottlerocket ------------------------------------------------------------------------------


def test_bottlerocket_settings_carry_the_kubelet_block(kubelet_rule: dict[str, Any]) -> None:
    settings = tomllib.loads(user_data("Bottlerocket", OPTIONS))["settings"]["kubernetes"]
    assert settings["cluster-name"] == NAME
    assert settings["api-server"] == ENDPOINT
    assert settings["cluster-certificate"] == CA
    assert settings["cluster-dns-ip"] == [DNS]
    assert settings["max-pods"] == 29
    assert {
        f"{key}={value}" if not value.startswith(":") else f"{key}{value}"
        for key, values in settings["node-taints"].items()
        for value in values
    } == EXPECTED_TAINTS
    assert_labels(dict(settings["node-labels"]), kubelet_rule)
    assert settings["kube-reserved"] == KUBELET["kubeReserved"]
    assert settings["system-reserved"] == KUBELET["systemReserved"]
    assert settings["eviction-hard"] == KUBELET["evictionHard"]
    assert settings["eviction-soft"] == KUBELET["evictionSoft"]
    assert settings["eviction-soft-grace-period"] == KUBELET["evictionSoftGracePeriod"]
    assert settings["eviction-max-pod-grace-period"] == 60
    assert settings["image-gc-high-threshold-percent"] == "85"
    assert settings["image-gc-low-threshold-percent"] == "80"
    assert settings["cpu-cfs-quota-enforced"] is False


def test_bottlerocket_sets_up_raid0_with_apiclient_at_every_boot() -> None:
    settings = tomllib.loads(user_data("Bottlerocket", RAID0_IPV6))["settings"]
    (command,) = settings["bootstrap-commands"].values()
    assert command["essential"] is True and command["mode"] == "always"
    init, bind = command["commands"]
    assert init == ["apiclient", "ephemeral-storage", "init"]
    assert bind[:4] == ["apiclient", "ephemeral-storage", "bind", "--dirs"]
    assert set(bind[4:]) == {"/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods"}
    assert settings["kubernetes"]["cluster-dns-ip"] == [V6_DNS]


# -- Windows -----------------------------------------------------------------------------------


def test_windows_start_eks_bootstrap_gets_the_cluster_dns_and_kubelet_flags(
    kubelet_rule: dict[str, Any],
) -> None:
    text = user_data("Windows2022", OPTIONS)
    body = re.fullmatch(r"<powershell>\n(.*)\n</powershell>", text, re.S)
    assert body is not None
    (call,) = [
        ln for ln in body.group(1).splitlines() if ln.startswith("& $EKSBootstrapScriptFile")
    ]
    args = shlex.split(call)[2:]
    named = dict(zip(args[::2], args[1::2], strict=True))
    assert named["-EKSClusterName"] == NAME
    assert named["-APIServerEndpoint"] == ENDPOINT
    assert named["-Base64ClusterCA"] == CA
    assert named["-DNSClusterIP"] == DNS
    assert_kubelet_flags(named["-KubeletExtraArgs"], kubelet_rule)
