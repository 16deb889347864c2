"""Which node labels a kubelet accepts in `--node-labels` (or Bottlerocket's `node-labels`).

The kubelet refuses to start when given a label in the `kubernetes.io` or `k8s.io` namespaces
(or their subdomains) that is not one it may set on its own Node: the keys of `KUBELET_LABELS`,
or a key whose namespace is, or ends in `.` and, one of `KUBELET_LABEL_NAMESPACES` (the rule of
`IsKubeletLabel` in the `k8s.io/kubelet` module, checked by the kubelet's flag validation; the
NodeRestriction admission plugin enforces the same). Such labels, `node-restriction.kubernetes.io/*`
among them, stay out of the user data and are set on the Node when it registers, as Karpenter does.
The tests compare these sets with the module's own (`hack/kubeletlabels`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

__all__ = [
    "KUBELET_LABELS",
    "KUBELET_LABEL_NAMESPACES",
    "is_kubelet_label",
    "kubelet_accepts",
    "kubelet_safe",
]

KUBELET_LABELS: Final = frozenset(
    {
        "beta.kubernetes.io/arch",
        "beta.kubernetes.io/instance-type",
        "beta.kubernetes.io/os",
        "failure-domain.beta.kubernetes.io/region",
        "failure-domain.beta.kubernetes.io/zone",
        "kubernetes.io/arch",
        "kubernetes.io/hostname",
        "kubernetes.io/os",
        "node.kubernetes.io/instance-type",
        "topology.kubernetes.io/region",
        "topology.kubernetes.io/zone",
    }
)
KUBELET_LABEL_NAMESPACES: Final = frozenset({"kubelet.kubernetes.io", "node.kubernetes.io"})
_KUBERNETES_NAMESPACES: Final = ("kubernetes.io", "k8s.io")


def _namespace(key: str) -> str:
    prefix, slash, _ = key.partition("/")
    return prefix if slash else ""


def _in(namespace: str, domain: str) -> bool:
    return namespace == domain or namespace.endswith("." + domain)


def is_kubelet_label(key: str) -> bool:
    """A label the kubelet may set on its own Node."""
    if key in KUBELET_LABELS:
        return True
    namespace = _namespace(key)
    return any(_in(namespace, allowed) for allowed in KUBELET_LABEL_NAMESPACES)


def kubelet_accepts(key: str) -> bool:
    """Whether the kubelet starts with this label in `--node-labels`."""
    namespace = _namespace(key)
    if not any(_in(namespace, domain) for domain in _KUBERNETES_NAMESPACES):
        return True
    return is_kubelet_label(key)


def kubelet_safe(labels: Mapping[str, str]) -> dict[str, str]:
    """The labels the kubelet accepts; the others are applied when the Node registers."""
    return {k: v for k, v in labels.items() if kubelet_accepts(k)}
