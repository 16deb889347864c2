"""Capacity and overhead maths, checked on the reference's worked examples (§2.2)."""

from __future__ import annotations

import pytest

from karpy.apis.aws.v1 import EC2NodeClassSpec, KubeletConfiguration
from karpy.cloudprovider.aws.capacity import (
    EFA,
    MIB,
    NEURON,
    NEURON_CORE,
    CapacitySettings,
    capacity,
    capacity_settings_for,
    eni_limited_pods,
    eviction_threshold,
    kube_reserved_cpu,
    max_pods,
    memory_mib,
    overhead,
)
from karpy.scheduling.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, subtract
from tests.unit.cloudprovider.aws.shapes import (
    C6G_XLARGE,
    G4DN_XLARGE,
    INF2_XLARGE,
    M5_LARGE,
    P4D_24XLARGE,
)

GIB = 1024**3
DEFAULTS = CapacitySettings()


@pytest.mark.parametrize(
    ("cores", "millicores"),
    [(1, 60), (2, 70), (4, 80), (5, 82), (8, 90), (16, 110), (32, 150), (96, 310)],
)
def test_kube_reserved_cpu_bands(cores: int, millicores: int) -> None:
    assert kube_reserved_cpu(cores * 1000) == millicores


def test_m5_large_worked_example() -> None:
    """8192 - ceil(614.4) = 7577Mi; 3 x 9 + 2 = 29 pods; allocatable 6903Mi and 1930m."""
    cap = capacity(M5_LARGE, DEFAULTS)
    assert cap[MEMORY] == 7577 * MIB
    assert cap[PODS] == 29
    assert cap[CPU] == 2000
    assert cap[EPHEMERAL_STORAGE] == 20 * GIB
    allocatable = subtract(cap, overhead(M5_LARGE, cap, DEFAULTS))
    assert allocatable[MEMORY] == (7577 - (11 * 29 + 255) - 100) * MIB == 6903 * MIB
    assert allocatable[CPU] == 1930
    # 20Gi less 1Gi kube-reserved and ceil(10%) eviction.
    assert allocatable[EPHEMERAL_STORAGE] == 20 * GIB - GIB - -(-20 * GIB // 10)


def test_c6g_xlarge_arm64_loses_64mi_before_the_vm_overhead() -> None:
    """(8192 - 64) - ceil(8128 x 0.075 = 609.6) = 7518Mi; 4 x 14 + 2 = 58 pods."""
    assert memory_mib(C6G_XLARGE, 0.075) == 7518
    cap = capacity(C6G_XLARGE, DEFAULTS)
    assert cap[PODS] == 58
    allocatable = subtract(cap, overhead(C6G_XLARGE, cap, DEFAULTS))
    assert allocatable[MEMORY] == (7518 - (11 * 58 + 255) - 100) * MIB
    assert allocatable[CPU] == 3920


def test_gpu_type_has_the_gpu_resource() -> None:
    cap = capacity(G4DN_XLARGE, DEFAULTS)
    assert cap["nvidia.com/gpu"] == 1
    assert cap[MEMORY] == (16384 - 1229) * MIB
    assert cap[PODS] == 29


def test_only_the_default_network_card_counts_for_pods_and_efa_is_a_resource() -> None:
    assert eni_limited_pods(P4D_24XLARGE) == 15 * 49 + 2
    cap = capacity(P4D_24XLARGE, DEFAULTS)
    assert cap["nvidia.com/gpu"] == 8
    assert cap[EFA] == 4
    assert kube_reserved_cpu(cap[CPU]) == 310


def test_neuron_devices_and_cores() -> None:
    cap = capacity(INF2_XLARGE, DEFAULTS)
    assert (cap[NEURON], cap[NEURON_CORE]) == (1, 2)


def test_vm_memory_overhead_percent_is_a_setting() -> None:
    assert memory_mib(M5_LARGE, 0.0) == 8192
    assert (
        capacity(M5_LARGE, CapacitySettings(vm_memory_overhead_percent=0.1))[MEMORY]
        == (8192 - 820) * MIB
    )


def test_reserved_enis_reduce_pods_but_not_kube_reserved_memory() -> None:
    settings = CapacitySettings(reserved_enis=1)
    cap = capacity(M5_LARGE, settings)
    assert cap[PODS] == 2 * 9 + 2
    assert overhead(M5_LARGE, cap, settings)[MEMORY] == (11 * 29 + 255 + 100) * MIB
    assert eni_limited_pods(M5_LARGE, reserved_enis=3) == 0


def test_kubelet_max_pods_and_pods_per_core() -> None:
    kubelet = KubeletConfiguration.model_validate({"maxPods": 110})
    assert max_pods(M5_LARGE, CapacitySettings(kubelet=kubelet)) == 110
    # AL2023 sizes kube-reserved memory by the ENI count even with maxPods set ...
    cap = capacity(M5_LARGE, CapacitySettings(kubelet=kubelet))
    assert (
        overhead(M5_LARGE, cap, CapacitySettings(kubelet=kubelet))[MEMORY]
        == (11 * 29 + 255 + 100) * MIB
    )
    # ... Bottlerocket by the real pod count.
    bottlerocket = CapacitySettings(kubelet=kubelet, ami_family="Bottlerocket")
    assert overhead(M5_LARGE, cap, bottlerocket)[MEMORY] == (11 * 110 + 255 + 100) * MIB
    per_core = KubeletConfiguration.model_validate({"podsPerCore": 4})
    assert max_pods(M5_LARGE, CapacitySettings(kubelet=per_core)) == 8
    # Bottlerocket ignores podsPerCore; Windows is not ENI-limited.
    assert max_pods(M5_LARGE, CapacitySettings(kubelet=per_core, ami_family="Bottlerocket")) == 29
    assert max_pods(M5_LARGE, CapacitySettings(ami_family="Windows2022")) == 110
    windows = CapacitySettings(kubelet=per_core, ami_family="Windows2025")
    assert max_pods(M5_LARGE, windows) == 8


def test_kubelet_reservations_and_eviction_override_the_defaults() -> None:
    kubelet = KubeletConfiguration.model_validate(
        {
            "kubeReserved": {"cpu": "200m", "memory": "1Gi"},
            "systemReserved": {"memory": "500Mi"},
            "evictionHard": {"memory.available": "5%", "nodefs.available": "100%"},
        }
    )
    settings = CapacitySettings(kubelet=kubelet)
    cap = capacity(M5_LARGE, settings)
    over = overhead(M5_LARGE, cap, settings)
    assert over[CPU] == 200
    assert over[MEMORY] == GIB + 500 * MIB + -(-cap[MEMORY] * 5 // 100)
    assert over[EPHEMERAL_STORAGE] == GIB  # kube-reserved only: 100% eviction means none


def test_eviction_threshold_defaults() -> None:
    assert eviction_threshold(8 * GIB, 20 * GIB) == {
        MEMORY: 100 * MIB,
        EPHEMERAL_STORAGE: 2147483648,
    }


def test_nodeclass_root_volume_and_raid0() -> None:
    spec = EC2NodeClassSpec.model_validate(
        {
            "amiFamily": "AL2023",
            "role": "r",
            "subnetSelectorTerms": [{"id": "subnet-1"}],
            "securityGroupSelectorTerms": [{"id": "sg-1"}],
            "amiSelectorTerms": [{"alias": "al2023@latest"}],
            "blockDeviceMappings": [
                {"deviceName": "/dev/xvda", "ebs": {"volumeSize": "100Gi"}},
            ],
        }
    )
    settings = capacity_settings_for(spec, reserved_enis=1)
    assert (settings.ami_family, settings.reserved_enis) == ("AL2023", 1)
    assert capacity(M5_LARGE, settings)[EPHEMERAL_STORAGE] == 100 * GIB
    raid = CapacitySettings(instance_store_policy="RAID0")
    assert capacity(G4DN_XLARGE, raid)[EPHEMERAL_STORAGE] == 125 * 10**9
    # RAID0 without an instance store keeps the root volume.
    assert capacity(M5_LARGE, raid)[EPHEMERAL_STORAGE] == 20 * GIB


def test_windows_offers_private_ipv4_addresses_of_the_primary_interface() -> None:
    # m5.large: 10 IPv4 addresses per interface, one of them the interface's own.
    assert M5_LARGE["NetworkInfo"]["Ipv4AddressesPerInterface"] == 10
    windows = capacity(M5_LARGE, CapacitySettings(ami_family="Windows2022"))
    assert windows["vpc.amazonaws.com/PrivateIPv4Address"] == 9
    assert "vpc.amazonaws.com/PrivateIPv4Address" not in capacity(M5_LARGE, CapacitySettings())
