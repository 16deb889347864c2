"""The custom data a VM boots with, and the AKSNodeClass hash stamped on its NodeClaim.

Custom data: a shell script (base64, as ARM's `osProfile.customData` takes it) that writes the
kubelet's join settings to `/etc/default/kubelet-karpy` for the node image's boot service: the API
server, the bootstrap token, the node labels the kubelet may set itself, and the
`karpenter.sh/unregistered:NoExecute` taint every NodeClaim's node joins with (Karpenter removes it
once the Node is registered). Labels in the `kubernetes.io` and `k8s.io` domains that the
NodeRestriction admission plugin forbids a kubelet to set are left out; Karpenter puts them on the
Node after it registers. This is karpy's own small format, not yet AKS's full "aksscriptless"
node bootstrapping (see `docs/getting-started/azure.md`).

Hash: karpy's own value of the AKSNodeClass spec, with its own hash version, so a NodeClaim
launched by the upstream provider (another version) is re-stamped, never found drifted.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shlex
from collections.abc import Mapping, Sequence
from typing import Final

from karpy.apis.azure.v1beta1 import AKSNodeClass
from karpy.apis.v1.labels import TAINT_EFFECT_NO_EXECUTE, TAINT_UNREGISTERED_KEY

__all__ = [
    "HASH_VERSION",
    "custom_data",
    "kubelet_labels",
    "nodeclass_hash",
    "read_custom_data",
]

HASH_VERSION: Final = "karpy-v1"
ENV_FILE: Final = "/etc/default/kubelet-karpy"

# Labels in the kubernetes.io / k8s.io domains a kubelet may still set on its own Node.
_KUBELET_ALLOWED: Final = frozenset(
    {
        "kubernetes.io/hostname",
        "kubernetes.io/arch",
        "kubernetes.io/os",
        "beta.kubernetes.io/arch",
        "beta.kubernetes.io/os",
        "beta.kubernetes.io/instance-type",
        "node.kubernetes.io/instance-type",
        "topology.kubernetes.io/region",
        "topology.kubernetes.io/zone",
        "failure-domain.beta.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
    }
)
_KUBELET_ALLOWED_PREFIXES: Final = ("kubelet.kubernetes.io/", "node.kubernetes.io/")


def _restricted_domain(key: str) -> bool:
    domain = key.partition("/")[0] if "/" in key else ""
    return any(domain == d or domain.endswith("." + d) for d in ("kubernetes.io", "k8s.io"))


def kubelet_labels(labels: Mapping[str, str]) -> dict[str, str]:
    """The labels a kubelet may register its Node with (NodeRestriction's rules)."""
    return {
        k: v
        for k, v in labels.items()
        if not _restricted_domain(k)
        or k in _KUBELET_ALLOWED
        or k.startswith(_KUBELET_ALLOWED_PREFIXES)
    }


def custom_data(
    *,
    api_server: str,
    bootstrap_token: str,
    labels: Mapping[str, str],
    max_pods: int,
    taints: Sequence[str] = (),
    kubelet_flags: Sequence[str] = (),
) -> str:
    """The base64 custom data of a node: its join settings as a shell script."""
    node_labels = ",".join(f"{k}={v}" for k, v in sorted(kubelet_labels(labels).items()))
    all_taints = [f"{TAINT_UNREGISTERED_KEY}:{TAINT_EFFECT_NO_EXECUTE}", *taints]
    settings = {
        "KUBE_API_SERVER": api_server,
        "KUBELET_BOOTSTRAP_TOKEN": bootstrap_token,
        "KUBELET_NODE_LABELS": node_labels,
        "KUBELET_REGISTER_WITH_TAINTS": ",".join(all_taints),
        "KUBELET_MAX_PODS": str(max_pods),
        "KUBELET_EXTRA_FLAGS": " ".join(kubelet_flags),
    }
    lines = ["#!/bin/bash", "set -euo pipefail", f"cat > {ENV_FILE} <<'KARPY'"]
    lines += [f"{key}={shlex.quote(value)}" for key, value in settings.items()]
    lines += ["KARPY", f"chmod 0600 {ENV_FILE}", ""]
    return base64.b64encode("\n".join(lines).encode()).decode()


def read_custom_data(data: str) -> dict[str, str]:
    """The settings a node reads from its custom data (the inverse of `custom_data`)."""
    script = base64.b64decode(data).decode()
    body = script.split("<<'KARPY'\n", 1)[1].split("\nKARPY\n", 1)[0]
    out: dict[str, str] = {}
    for line in body.splitlines():
        key, _, value = line.partition("=")
        parts = shlex.split(value)
        out[key] = parts[0] if parts else ""
    return out


def nodeclass_hash(nodeclass: AKSNodeClass) -> str:
    """A stable hash of the spec (key order and defaults as the model writes them)."""
    spec = nodeclass.spec.to_dict()
    text = json.dumps(spec, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]
