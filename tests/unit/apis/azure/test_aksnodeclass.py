"""AKSNodeClass: upstream's defaults, its example manifest admitted unchanged, and the Azure
provider's well-known labels usable in NodePool requirements."""

from __future__ import annotations

from typing import Any

import pytest

from karpy.apis.azure.v1beta1 import AKSNODECLASS, labels, validate_aksnodeclass
from karpy.apis.v1.nodepool import validate_nodepool
from karpy.apis.v1.nodepool_validation import runtime_validate
from tests import kit

# The AKSNodeClass of the upstream Azure provider's examples (examples/v1/general-purpose.yaml).
UPSTREAM_EXAMPLE: dict[str, Any] = {
    "apiVersion": "karpenter.azure.com/v1beta1",
    "kind": "AKSNodeClass",
    "metadata": {"name": "default"},
    "spec": {"imageFamily": "Ubuntu2204"},
}


def test_an_empty_spec_gets_upstreams_defaults() -> None:
    admitted = AKSNODECLASS.admit({**UPSTREAM_EXAMPLE, "spec": {}})
    assert admitted["spec"] == {"imageFamily": "Ubuntu", "osDiskSizeGB": 128}


def test_kubelet_defaults_are_upstreams() -> None:
    admitted = AKSNODECLASS.admit({**UPSTREAM_EXAMPLE, "spec": {"kubelet": {}}})
    assert admitted["spec"]["kubelet"] == {
        "cpuCFSQuota": True,
        "cpuCFSQuotaPeriod": "100ms",
        "cpuManagerPolicy": "none",
        "topologyManagerPolicy": "none",
        "containerLogMaxSize": "50Mi",
        "containerLogMaxFiles": 5,
    }


def test_the_upstream_example_is_admitted_unchanged() -> None:
    nodeclass = validate_aksnodeclass(UPSTREAM_EXAMPLE)
    assert nodeclass.spec.image_family == "Ubuntu2204"
    assert nodeclass.spec.os_disk_size_gb == 128
    assert not nodeclass.spec.is_windows()


def test_a_full_spec_round_trips() -> None:
    spec = {
        "vnetSubnetID": "/subscriptions/0000/resourceGroups/MC_rg_aks_westus2/providers/"
        "Microsoft.Network/virtualNetworks/aks-vnet-12345678/subnets/aks-subnet",
        "osDiskSizeGB": 64,
        "imageFamily": "AzureLinux",
        "fipsMode": "FIPS",
        "tags": {"team": "platform"},
        "maxPods": 110,
        "security": {"encryptionAtHost": True},
        "gpu": {"mode": "None"},
        "artifactStreaming": {"enabled": True},
        "kubelet": {"failSwapOn": False, "podPidsLimit": 4096},
        "linuxOSConfig": {"swapFileSize": "2Gi", "sysctls": {"vmMaxMapCount": 262144}},
    }
    nodeclass = validate_aksnodeclass({**UPSTREAM_EXAMPLE, "spec": spec})
    out = nodeclass.to_dict()["spec"]
    for key, value in spec.items():
        if key != "kubelet":
            assert out[key] == value, key
    assert out["kubelet"]["failSwapOn"] is False


@pytest.mark.parametrize(
    ("key", "values"),
    [
        (labels.LABEL_SKU_FAMILY, ["D", "E"]),
        (labels.LABEL_SKU_SERIES, ["Dsv5"]),
        (labels.LABEL_SKU_CPU, ["4", "8"]),
        (labels.LABEL_SKU_NAME, ["Standard_D4s_v5"]),
        (labels.LABEL_SKU_GPU_MANUFACTURER, ["nvidia"]),
        (labels.LABEL_SKU_ACCELERATED_NETWORKING, ["true"]),
        (labels.AKS_LABEL_OS_SKU, ["Ubuntu"]),
    ],
)
def test_sku_labels_are_allowed_in_nodepool_requirements(key: str, values: list[str]) -> None:
    manifest = kit.nodepool(
        "aks",
        kind="AKSNodeClass",
        group="karpenter.azure.com",
        requirements=[{"key": key, "operator": "In", "values": values}],
    )
    assert runtime_validate(validate_nodepool(manifest)) == []


def test_well_known_labels_are_upstreams() -> None:
    assert labels.LABEL_SKU_HYPERV_GENERATION not in labels.WELL_KNOWN_LABELS
    assert labels.LABEL_SKU_HYPERV_GENERATION in labels.RESTRICTED_LABELS
    assert {k for k in labels.WELL_KNOWN_LABELS if k.startswith("karpenter.azure.com/sku-")} == {
        "karpenter.azure.com/sku-name",
        "karpenter.azure.com/sku-family",
        "karpenter.azure.com/sku-series",
        "karpenter.azure.com/sku-version",
        "karpenter.azure.com/sku-cpu",
        "karpenter.azure.com/sku-memory",
        "karpenter.azure.com/sku-networking-accelerated",
        "karpenter.azure.com/sku-storage-premium-capable",
        "karpenter.azure.com/sku-storage-ephemeralos-maxsize",
        "karpenter.azure.com/sku-gpu-name",
        "karpenter.azure.com/sku-gpu-manufacturer",
        "karpenter.azure.com/sku-gpu-count",
    }


def test_a_nodepool_may_not_set_or_constrain_the_hyperv_generation() -> None:
    # Upstream restricts it (RestrictedLabels): it only matches node images to sizes.
    key = labels.LABEL_SKU_HYPERV_GENERATION
    required = kit.nodepool(
        "aks",
        kind="AKSNodeClass",
        group="karpenter.azure.com",
        requirements=[{"key": key, "operator": "In", "values": ["1"]}],
    )
    (error,) = runtime_validate(validate_nodepool(required))
    assert error.startswith("spec.template.spec.requirements[0].key")
    assert f"label {key} is restricted" in error
    labelled = kit.nodepool(
        "aks", kind="AKSNodeClass", group="karpenter.azure.com", labels={key: "2"}
    )
    (error,) = runtime_validate(validate_nodepool(labelled))
    assert error.startswith("spec.template.metadata.labels")
    assert f"label {key} is restricted" in error
