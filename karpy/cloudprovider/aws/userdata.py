"""Node bootstrap user data per AMI family (reference §3.1): AL2023 `nodeadm` NodeConfig in a
MIME multipart archive, AL2 `/etc/eks/bootstrap.sh` in the same archive, Bottlerocket TOML
settings, Windows `Start-EKSBootstrap.ps1` in PowerShell, Custom passed through.

The user's `spec.userData` is kept: for AL2023 its MIME parts (or the whole text as one part)
come first and karpy's NodeConfig last, so nodeadm merges ours over theirs; for Bottlerocket
the user's TOML is parsed and karpy's `settings.kubernetes` keys win.

`instanceStorePolicy: RAID0` is set up by each family's own tool, as Karpenter asks for it:
nodeadm's `spec.instance.localStorage.strategy`, bootstrap.sh's `--local-disks raid0`,
Bottlerocket's `apiclient ephemeral-storage` bootstrap command. Windows has none (nor in
Karpenter). On IPv6 clusters AL2 gets `--ip-family ipv6`; nodeadm and Bottlerocket derive the
family from the service CIDR and the cluster DNS IP.
"""

from __future__ import annotations

import tomllib
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from email import message_from_string
from typing import Any, Final

import yaml

from karpy.apis.v1.labels import TAINT_UNREGISTERED_KEY
from karpy.cloudprovider.aws.kubeletlabels import kubelet_safe

__all__ = [
    "BootstrapOptions",
    "Taint",
    "al2_user_data",
    "al2023_user_data",
    "bottlerocket_user_data",
    "user_data",
    "windows_user_data",
]

MIME_BOUNDARY: Final = "//"
NODEADM_CONTENT_TYPE: Final = "application/node.eks.aws"
SHELL_CONTENT_TYPE: Final = 'text/x-shellscript; charset="us-ascii"'
LABEL_DO_NOT_SYNC_TAINTS: Final = "karpenter.sh/do-not-sync-taints"
INSTANCE_STORE_RAID0: Final = "RAID0"
BOTTLEROCKET_RAID0_COMMAND: Final = "000-mount-instance-storage"
"""The bootstrap command Karpenter names for Bottlerocket's instance-store setup."""
BOTTLEROCKET_EPHEMERAL_DIRS: Final = ("/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods")


@dataclass(frozen=True)
class Taint:
    key: str
    effect: str
    value: str | None = None


UNREGISTERED: Final = Taint(key=TAINT_UNREGISTERED_KEY, effect="NoExecute")


@dataclass(frozen=True)
class BootstrapOptions:
    """What a node needs to join: the cluster and the kubelet settings of its launch template."""

    cluster_name: str
    cluster_endpoint: str
    ca_bundle: str | None = None
    cluster_cidr: str | None = None
    max_pods: int | None = None
    cluster_dns: tuple[str, ...] = ()
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: Sequence[Taint] = ()
    kubelet: Mapping[str, Any] = field(default_factory=dict)
    """Further kubelet configuration keys (camelCase), e.g. kubeReserved, evictionHard."""
    custom_user_data: str | None = None
    instance_store_policy: str | None = None
    """`RAID0`: the instance-store disks become one RAID0 array under the kubelet's and the
    container runtime's directories (the capacity counts them as ephemeral storage)."""
    ip_family: str | None = None
    """`ipv6` on an IPv6 cluster (its service CIDR's family); None or `ipv4` otherwise."""


def _raid0(options: BootstrapOptions) -> bool:
    return options.instance_store_policy == INSTANCE_STORE_RAID0


def _ipv6(options: BootstrapOptions) -> bool:
    """An IPv6 cluster: the service CIDR says so, else the cluster DNS IP (Karpenter's rule)."""
    if options.ip_family:
        return options.ip_family == "ipv6"
    return bool(options.cluster_dns) and ":" in options.cluster_dns[0]


def _node_labels(options: BootstrapOptions) -> dict[str, str]:
    """The labels the kubelet accepts (the rest are set when the Node registers)."""
    return {**kubelet_safe(options.labels), LABEL_DO_NOT_SYNC_TAINTS: "true"}


def _taints(options: BootstrapOptions) -> list[Taint]:
    """The NodePool's taints and startupTaints, and the registration taint, which keeps pods
    off the node until karpy has synced it with its NodeClaim (Karpenter adds it always)."""
    taints = list(options.taints)
    if not any(t.key == UNREGISTERED.key and t.effect == UNREGISTERED.effect for t in taints):
        taints.append(UNREGISTERED)
    return taints


def _node_config(options: BootstrapOptions) -> str:
    kubelet: dict[str, Any] = dict(options.kubelet)
    if options.max_pods is not None:
        kubelet["maxPods"] = options.max_pods
    if options.cluster_dns:
        kubelet["clusterDNS"] = list(options.cluster_dns)
    kubelet["registerWithTaints"] = [
        {"key": t.key, "effect": t.effect, **({"value": t.value} if t.value else {})}
        for t in _taints(options)
    ]
    labels = ",".join(f"{k}={v}" for k, v in sorted(_node_labels(options).items()))
    cluster: dict[str, Any] = {
        "name": options.cluster_name,
        "apiServerEndpoint": options.cluster_endpoint,
    }
    if options.ca_bundle:
        cluster["certificateAuthority"] = options.ca_bundle
    if options.cluster_cidr:
        cluster["cidr"] = options.cluster_cidr
    spec: dict[str, Any] = {
        "cluster": cluster,
        "kubelet": {"config": kubelet, "flags": [f"--node-labels={labels}"]},
    }
    if _raid0(options):
        # nodeadm's local-disk aspect builds the array and mounts it under /var/lib/kubelet,
        # /var/lib/containerd and /var/log/pods before the kubelet starts.
        spec["instance"] = {"localStorage": {"strategy": INSTANCE_STORE_RAID0}}
    doc = {"apiVersion": "node.eks.aws/v1alpha1", "kind": "NodeConfig", "spec": spec}
    text: str = yaml.safe_dump(doc, sort_keys=True, default_flow_style=False)
    return text


def _user_parts(custom: str | None) -> list[tuple[str, str]]:
    """(content type, body) of the user's own user data."""
    if not custom or not custom.strip():
        return []
    if custom.lstrip().startswith("MIME-Version"):
        message = message_from_string(custom)
        parts = []
        for part in message.walk():
            if part.is_multipart():
                continue
            payload = part.get_payload(decode=True)
            body = payload.decode() if isinstance(payload, bytes) else str(part.get_payload())
            parts.append((part.get_content_type(), body))
        return parts
    if custom.lstrip().startswith("#!"):
        return [(SHELL_CONTENT_TYPE, custom)]
    return [(NODEADM_CONTENT_TYPE, custom)]


def al2023_user_data(options: BootstrapOptions) -> str:
    """A MIME multipart archive: the user's parts, then karpy's NodeConfig."""
    return _mime(
        [*_user_parts(options.custom_user_data), (NODEADM_CONTENT_TYPE, _node_config(options))]
    )


def _go_quote(text: str) -> str:
    """Go's `%q` for the plain strings used here."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _joined(name: str, values: Mapping[str, Any], separator: str) -> str | None:
    if not values:
        return None
    pairs = ",".join(f"{k}{separator}{v}" for k, v in sorted(values.items()))
    return f"{name}={_go_quote(pairs)}"


def _kubelet_extra_args(options: BootstrapOptions) -> list[str]:
    """Karpenter's `kubeletExtraArgs`: labels, taints (always, maybe empty), then the kubelet
    settings as flags."""
    labels = ",".join(f"{k}={v}" for k, v in sorted(_node_labels(options).items()))
    taints = ",".join(
        f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}"
        for t in _taints(options)
    )
    kubelet = options.kubelet
    args: list[str | None] = [
        f"--node-labels={_go_quote(labels)}",
        f"--register-with-taints={_go_quote(taints)}",
    ]
    if options.max_pods is not None:
        args.append(f"--max-pods={options.max_pods}")
    if kubelet.get("podsPerCore") is not None:
        args.append(f"--pods-per-core={kubelet['podsPerCore']}")
    args += [
        _joined("--system-reserved", kubelet.get("systemReserved") or {}, "="),
        _joined("--kube-reserved", kubelet.get("kubeReserved") or {}, "="),
        _joined("--eviction-hard", kubelet.get("evictionHard") or {}, "<"),
        _joined("--eviction-soft", kubelet.get("evictionSoft") or {}, "<"),
        _joined("--eviction-soft-grace-period", kubelet.get("evictionSoftGracePeriod") or {}, "="),
    ]
    for key, flag in (
        ("evictionMaxPodGracePeriod", "--eviction-max-pod-grace-period"),
        ("imageGCHighThresholdPercent", "--image-gc-high-threshold"),
        ("imageGCLowThresholdPercent", "--image-gc-low-threshold"),
    ):
        if kubelet.get(key) is not None:
            args.append(f"{flag}={kubelet[key]}")
    if kubelet.get("cpuCFSQuota") is not None:
        args.append(f"--cpu-cfs-quota={'true' if kubelet['cpuCFSQuota'] else 'false'}")
    return [a for a in args if a]


def _al2_script(options: BootstrapOptions) -> str:
    ca = f"--b64-cluster-ca '{options.ca_bundle}'" if options.ca_bundle else ""
    lines = [
        "#!/bin/bash -xe",
        "exec > >(tee /var/log/user-data.log|logger -t user-data -s 2>/dev/console) 2>&1",
        f"/etc/eks/bootstrap.sh '{options.cluster_name}' "
        f"--apiserver-endpoint '{options.cluster_endpoint}' {ca}",
    ]
    flags: list[str] = []
    if _ipv6(options):
        flags.append("--ip-family ipv6")
    if options.cluster_dns:
        flags.append(f"--dns-cluster-ip '{options.cluster_dns[0]}'")
    if options.max_pods is not None:
        flags.append("--use-max-pods false")
    flags.append(f"--kubelet-extra-args '{' '.join(_kubelet_extra_args(options))}'")
    if _raid0(options):
        # bootstrap.sh's setup-local-disks: one RAID0 array of the NVMe instance-store disks
        # under the kubelet's, containerd's and the pod logs' directories.
        flags.append("--local-disks raid0")
    return lines[0] + "\n" + lines[1] + "\n" + " \\\n".join([lines[2], *flags])


def al2_user_data(options: BootstrapOptions) -> str:
    """A MIME multipart archive: the user's parts, then a script running the EKS AL2 AMI's
    `/etc/eks/bootstrap.sh` with the cluster, max pods, labels, taints and kubelet flags."""
    return _mime(
        [*_user_parts(options.custom_user_data), (SHELL_CONTENT_TYPE, _al2_script(options))]
    )


def windows_user_data(options: BootstrapOptions) -> str:
    """PowerShell: the user's script, then the EKS Windows AMI's `Start-EKSBootstrap.ps1`."""
    lines = ["<powershell>"]
    if options.custom_user_data:
        lines.append(options.custom_user_data)
    lines.append(
        '[string]$EKSBootstrapScriptFile = "$env:ProgramFiles\\Amazon\\EKS\\Start-EKSBootstrap.ps1"'
    )
    call = (
        f"& $EKSBootstrapScriptFile -EKSClusterName '{options.cluster_name}' "
        f"-APIServerEndpoint '{options.cluster_endpoint}'"
    )
    if options.ca_bundle:
        call += f" -Base64ClusterCA '{options.ca_bundle}'"
    call += f" -KubeletExtraArgs '{' '.join(_kubelet_extra_args(options))}'"
    if options.cluster_dns:
        call += f" -DNSClusterIP '{options.cluster_dns[0]}'"
    lines += [call, "</powershell>"]
    return "\n".join(lines)


def _mime(parts: Sequence[tuple[str, str]]) -> str:
    lines = [
        "MIME-Version: 1.0",
        f'Content-Type: multipart/mixed; boundary="{MIME_BOUNDARY}"',
        "",
    ]
    for content_type, body in parts:
        lines += [f"--{MIME_BOUNDARY}", f"Content-Type: {content_type}", "", body.rstrip("\n")]
    lines += [f"--{MIME_BOUNDARY}--", ""]
    return "\n".join(lines)


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    escaped = str(value).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def _toml_key(key: str) -> str:
    bare = key.replace("-", "").replace("_", "").isalnum()
    return key if bare else _toml_value(key)


def _toml(table: Mapping[str, Any], path: tuple[str, ...] = ()) -> list[str]:
    lines: list[str] = []
    scalars = {k: v for k, v in table.items() if not isinstance(v, Mapping)}
    tables = {k: v for k, v in table.items() if isinstance(v, Mapping)}
    if scalars and path:
        lines.append("[" + ".".join(_toml_key(p) for p in path) + "]")
    for key in sorted(scalars):
        lines.append(f"{_toml_key(key)} = {_toml_value(scalars[key])}")
    if scalars and path:
        lines.append("")
    for key in sorted(tables):
        lines += _toml(tables[key], (*path, key))
    return lines


def _merge(base: dict[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            base[key] = _merge(base[key], value)
        else:
            base[key] = value
    return base


BOTTLEROCKET_KUBELET_KEYS: Final = {
    "systemReserved": "system-reserved",
    "kubeReserved": "kube-reserved",
    "evictionHard": "eviction-hard",
    "evictionSoft": "eviction-soft",
    "evictionSoftGracePeriod": "eviction-soft-grace-period",
    "evictionMaxPodGracePeriod": "eviction-max-pod-grace-period",
    "imageGCHighThresholdPercent": "image-gc-high-threshold-percent",
    "imageGCLowThresholdPercent": "image-gc-low-threshold-percent",
    "cpuCFSQuota": "cpu-cfs-quota-enforced",
}
"""EC2NodeClass kubelet fields and the Bottlerocket `settings.kubernetes` keys that set them
(maxPods and clusterDNS are `max-pods` and `cluster-dns-ip`, set from the launch's values;
Bottlerocket has no pods-per-core setting, so podsPerCore acts through `max-pods`)."""
_BOTTLEROCKET_STRING_KEYS: Final = frozenset(
    {"image-gc-high-threshold-percent", "image-gc-low-threshold-percent"}
)


def _bottlerocket_kubelet(kubelet: Mapping[str, Any]) -> dict[str, Any]:
    """The EC2NodeClass's kubelet block as Bottlerocket settings (its image-GC thresholds
    are strings, as Karpenter writes them)."""
    out: dict[str, Any] = {}
    for field_name, key in BOTTLEROCKET_KUBELET_KEYS.items():
        value = kubelet.get(field_name)
        if value is None:
            continue
        if isinstance(value, Mapping):
            value = dict(sorted(value.items()))
        elif key in _BOTTLEROCKET_STRING_KEYS:
            value = str(value)
        out[key] = value
    return out


def bottlerocket_user_data(options: BootstrapOptions) -> str:
    """Bottlerocket TOML: the user's settings with karpy's `settings.kubernetes` over them."""
    user = tomllib.loads(options.custom_user_data) if options.custom_user_data else {}
    kubernetes: dict[str, Any] = {
        "cluster-name": options.cluster_name,
        "api-server": options.cluster_endpoint,
    }
    if options.ca_bundle:
        kubernetes["cluster-certificate"] = options.ca_bundle
    if options.max_pods is not None:
        kubernetes["max-pods"] = options.max_pods
    if options.cluster_dns:
        kubernetes["cluster-dns-ip"] = list(options.cluster_dns)
    kubernetes.update(_bottlerocket_kubelet(options.kubelet))
    kubernetes["node-labels"] = dict(sorted(_node_labels(options).items()))
    taints: dict[str, list[str]] = {}
    for t in _taints(options):
        taints.setdefault(t.key, []).append(f"{t.value or ''}:{t.effect}")
    kubernetes["node-taints"] = taints
    settings: dict[str, Any] = {"kubernetes": kubernetes}
    if _raid0(options):
        # Bottlerocket's apiclient builds the array of the instance-store disks and binds it
        # over the kubelet's, containerd's and the pod logs' directories, on every boot.
        settings["bootstrap-commands"] = {
            BOTTLEROCKET_RAID0_COMMAND: {
                "commands": [
                    ["apiclient", "ephemeral-storage", "init"],
                    [
                        "apiclient",
                        "ephemeral-storage",
                        "bind",
                        "--dirs",
                        *BOTTLEROCKET_EPHEMERAL_DIRS,
                    ],
                ],
                "essential": True,
                "mode": "always",
            }
        }
    merged = _merge(user, {"settings": settings})
    return "\n".join(_toml(merged)).rstrip("\n") + "\n"


_MEMO: OrderedDict[str, str] = OrderedDict()
MEMO_ENTRIES: Final = 64


def user_data(ami_family: str, options: BootstrapOptions) -> str:
    """The bootstrap for `ami_family`; Custom passes the user's text through. Remembered for
    the last `MEMO_ENTRIES` inputs: a hundred launches of one NodePool render the same YAML or
    TOML, and rendering it took tens of milliseconds of event-loop CPU each time."""
    key = repr((ami_family, options))
    found = _MEMO.get(key)
    if found is None:
        found = _MEMO[key] = _render(ami_family, options)
        while len(_MEMO) > MEMO_ENTRIES:
            _MEMO.popitem(last=False)
    _MEMO.move_to_end(key)
    return found


def _render(ami_family: str, options: BootstrapOptions) -> str:
    if ami_family == "AL2023":
        return al2023_user_data(options)
    if ami_family == "AL2":
        return al2_user_data(options)
    if ami_family == "Bottlerocket":
        return bottlerocket_user_data(options)
    if ami_family.startswith("Windows"):
        return windows_user_data(options)
    if ami_family == "Custom":
        return options.custom_user_data or ""
    raise ValueError(
        f"amiFamily {ami_family!r}: no user data for this family (AL2023, AL2, "
        "Bottlerocket, Windows2019/2022/2025 and Custom have it)"
    )
