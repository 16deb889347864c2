"""Instance-type labels (reference §2.3) on real shapes."""

from __future__ import annotations

from karpy.apis.aws.v1 import labels as aws
from karpy.apis.v1.labels import LABEL_ARCH, LABEL_OS, LABEL_TOPOLOGY_REGION
from karpy.cloudprovider.aws.labels import instance_type_labels, requirements
from karpy.scheduling.requirements import Requirements
from tests.unit.cloudprovider.aws.shapes import C6G_XLARGE, G4DN_XLARGE, INF2_XLARGE, M5_LARGE


def test_m5_large_labels() -> None:
    assert instance_type_labels(M5_LARGE) == {
        aws.LABEL_INSTANCE_CATEGORY: "m",
        aws.LABEL_INSTANCE_GENERATION: "5",
        aws.LABEL_INSTANCE_FAMILY: "m5",
        aws.LABEL_INSTANCE_SIZE: "large",
        aws.LABEL_INSTANCE_CAPABILITY_FLEX: "false",
        aws.LABEL_INSTANCE_CPU: "2",
        aws.LABEL_INSTANCE_CPU_MANUFACTURER: "intel",
        aws.LABEL_INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ: "3100",
        aws.LABEL_INSTANCE_MEMORY: "8192",
        aws.LABEL_INSTANCE_HYPERVISOR: "nitro",
        aws.LABEL_INSTANCE_ENCRYPTION_IN_TRANSIT_SUPPORTED: "false",
        aws.LABEL_INSTANCE_EBS_BANDWIDTH: "4750",
        aws.LABEL_INSTANCE_NETWORK_BANDWIDTH: "750",
    }


def test_graviton_is_arm64_made_by_aws() -> None:
    labels = instance_type_labels(C6G_XLARGE)
    assert labels[aws.LABEL_INSTANCE_CPU_MANUFACTURER] == "aws"
    assert labels[aws.LABEL_INSTANCE_CATEGORY] == "c"
    assert labels[aws.LABEL_INSTANCE_GENERATION] == "6"
    reqs = Requirements(requirements(C6G_XLARGE))
    assert reqs[LABEL_ARCH].values == {"arm64"}


def test_gpu_labels_and_local_nvme() -> None:
    labels = instance_type_labels(G4DN_XLARGE)
    assert labels[aws.LABEL_INSTANCE_GPU_NAME] == "t4"
    assert labels[aws.LABEL_INSTANCE_GPU_MANUFACTURER] == "nvidia"
    assert labels[aws.LABEL_INSTANCE_GPU_COUNT] == "1"
    assert labels[aws.LABEL_INSTANCE_GPU_MEMORY] == "16384"
    assert labels[aws.LABEL_INSTANCE_LOCAL_NVME] == "125"
    assert labels[aws.LABEL_INSTANCE_ENCRYPTION_IN_TRANSIT_SUPPORTED] == "true"


def test_neuron_accelerator_labels() -> None:
    labels = instance_type_labels(INF2_XLARGE)
    assert labels[aws.LABEL_INSTANCE_ACCELERATOR_NAME] == "inferentia2"
    assert labels[aws.LABEL_INSTANCE_ACCELERATOR_MANUFACTURER] == "aws"
    assert labels[aws.LABEL_INSTANCE_ACCELERATOR_COUNT] == "1"


def test_flex_and_multi_part_names() -> None:
    info = {**M5_LARGE, "InstanceType": "m7i-flex.xlarge"}
    labels = instance_type_labels(info)
    assert labels[aws.LABEL_INSTANCE_FAMILY] == "m7i-flex"
    assert labels[aws.LABEL_INSTANCE_CAPABILITY_FLEX] == "true"
    assert labels[aws.LABEL_INSTANCE_GENERATION] == "7"
    high_memory = instance_type_labels({**M5_LARGE, "InstanceType": "u-6tb1.56xlarge"})
    assert high_memory[aws.LABEL_INSTANCE_CATEGORY] == "u"
    assert high_memory[aws.LABEL_INSTANCE_GENERATION] == "1"


def test_labels_that_do_not_apply_are_does_not_exist() -> None:
    reqs = Requirements(
        requirements(M5_LARGE, region="us-east-1", zone_ids=["use1-az6", "use1-az1"])
    )
    gpu = reqs[aws.LABEL_INSTANCE_GPU_COUNT]
    assert not gpu.complement and not gpu.values  # DoesNotExist
    assert reqs[LABEL_OS].values == {"linux"}
    assert reqs[LABEL_TOPOLOGY_REGION].values == {"us-east-1"}
    assert reqs[aws.LABEL_TOPOLOGY_ZONE_ID].values == {"use1-az1", "use1-az6"}
    # A pod asking for a GPU cannot land on m5.large; one asking for none can.
    wants_gpu = Requirements.from_node_selector_terms(
        [{"key": aws.LABEL_INSTANCE_GPU_COUNT, "operator": "Exists"}]
    )
    assert reqs.intersects(wants_gpu) is not None
    windows = Requirements(requirements(M5_LARGE, os_name="windows"))
    assert windows[LABEL_OS].values == {"windows"}
