"""The models: exact round-trips of Kubernetes JSON, camelCase names, defaults that agree with
the CRD schema, and the helpers other packages use."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from karpy.apis.aws.v1 import EC2NODECLASS, EC2NodeClass, KubeletConfiguration, MetadataOptions
from karpy.apis.kwok.v1alpha1 import KWOKNODECLASS, KWOKNodeClass
from karpy.apis.resource import CustomResource
from karpy.apis.v1 import (
    NODECLAIM,
    NODEPOOL,
    NodeClaim,
    NodeClaimStatus,
    NodeClassReference,
    NodePool,
    find_condition,
    group_of_ref,
)
from karpy.apis.v1.common import IntQuantity
from tests.unit.apis.apis_invalid_cases import ec2nodeclass, kwoknodeclass, nodeclaim, nodepool

STORED_METADATA = {
    "name": "default",
    "uid": "8d8fe60a-ebc1-4a7b-9b29-5029e4229112",
    "resourceVersion": "229",
    "generation": 3,
    "creationTimestamp": "2026-11-29T17:27:08Z",
    "labels": {"team": "a"},
    "annotations": {"karpenter.sh/nodepool-hash": "123"},
    "finalizers": ["karpenter.sh/termination"],
    "managedFields": [{"manager": "kubectl", "operation": "Update"}],
}

CONDITION = {
    "type": "Ready",
    "status": "True",
    "reason": "Ready",
    "message": "",
    "lastTransitionTime": "2026-11-29T17:27:09Z",
    "observedGeneration": 3,
}

STORED_NODEPOOL: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": STORED_METADATA,
    "spec": {
        "template": {
            "metadata": {"labels": {"team": "a"}, "annotations": {"x": "y"}},
            "spec": {
                "nodeClassRef": {
                    "group": "karpenter.k8s.aws",
                    "kind": "EC2NodeClass",
                    "name": "default",
                },
                "requirements": [
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                    {
                        "key": "node.kubernetes.io/instance-type",
                        "operator": "In",
                        "values": ["m5.large", "m5.xlarge"],
                        "minValues": 2,
                    },
                    {"key": "example.com/gpu", "operator": "DoesNotExist"},
                ],
                "taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
                "startupTaints": [{"key": "cilium.io/agent-not-ready", "effect": "NoExecute"}],
                "expireAfter": "Never",
                "terminationGracePeriod": "48h",
            },
        },
        "disruption": {
            "consolidateAfter": "1m",
            "consolidationPolicy": "WhenEmptyOrUnderutilized",
            "budgets": [
                {"nodes": "10%"},
                {
                    "nodes": "0",
                    "schedule": "0 9 * * mon-fri",
                    "duration": "8h",
                    "reasons": ["Drifted", "Underutilized"],
                },
            ],
        },
        "limits": {"cpu": 1000, "memory": "4000Gi", "nodes": "10"},
        "weight": 10,
    },
    "status": {
        "resources": {"cpu": "8", "memory": "32Gi", "nodes": "2"},
        "nodes": 2,
        "nodeClassObservedGeneration": 1,
        "conditions": [CONDITION],
    },
}

STORED_NODECLAIM: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodeClaim",
    "metadata": {
        "name": "default-abcde",
        "labels": {"karpenter.sh/nodepool": "default"},
        "ownerReferences": [
            {
                "apiVersion": "karpenter.sh/v1",
                "kind": "NodePool",
                "name": "default",
                "uid": "8d8fe60a",
                "blockOwnerDeletion": True,
            }
        ],
    },
    "spec": {
        "nodeClassRef": {"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": "local"},
        "requirements": [
            {"key": "karpenter.sh/nodepool", "operator": "In", "values": ["default"]},
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
        ],
        "resources": {"requests": {"cpu": "1500m", "memory": "1Gi", "pods": "3"}},
        "expireAfter": "720h",
    },
    "status": {
        "nodeName": "kwok-default-abcde",
        "providerID": "kwok://kwok-default-abcde",
        "imageID": "ami-0123",
        "capacity": {"cpu": "2", "memory": "8Gi"},
        "allocatable": {"cpu": "1900m", "memory": "7Gi"},
        "lastPodEventTime": "2026-11-29T17:30:00Z",
        "conditions": [
            {"type": "Launched", "status": "True", "lastTransitionTime": "2026-11-29T17:27:10Z"},
            {
                "type": "Initialized",
                "status": "Unknown",
                "reason": "",
                "message": "",
                "lastTransitionTime": "2026-11-29T17:27:10Z",
            },
        ],
    },
}

STORED_EC2NODECLASS: dict[str, Any] = {
    "apiVersion": "karpenter.k8s.aws/v1",
    "kind": "EC2NodeClass",
    "metadata": {"name": "default"},
    "spec": {
        "amiFamily": "AL2023",
        "amiSelectorTerms": [{"name": "my-ami-*", "owner": "123456789012"}],
        "subnetSelectorTerms": [{"id": "subnet-0a"}, {"tags": {"tier": "private"}}],
        "securityGroupSelectorTerms": [{"name": "nodes"}],
        "capacityReservationSelectorTerms": [{"tags": {"team": "ml"}, "ownerID": "123456789012"}],
        "instanceProfile": "KarpenterNodeInstanceProfile",
        "associatePublicIPAddress": False,
        "ipPrefixCount": 1,
        "userData": "#!/bin/bash\necho hi\n",
        "tags": {"team": "a"},
        "kubelet": {
            "clusterDNS": ["10.0.0.10"],
            "maxPods": 110,
            "podsPerCore": 4,
            "systemReserved": {"cpu": "100m", "memory": "100Mi"},
            "kubeReserved": {"cpu": "200m", "ephemeral-storage": "1Gi"},
            "evictionHard": {"memory.available": "5%"},
            "evictionSoft": {"memory.available": "500Mi"},
            "evictionSoftGracePeriod": {"memory.available": "1m"},
            "evictionMaxPodGracePeriod": 60,
            "imageGCHighThresholdPercent": 85,
            "imageGCLowThresholdPercent": 80,
            "cpuCFSQuota": True,
        },
        "blockDeviceMappings": [
            {
                "deviceName": "/dev/xvda",
                "rootVolume": True,
                "ebs": {
                    "volumeSize": "100Gi",
                    "volumeType": "gp3",
                    "iops": 3000,
                    "throughput": 125,
                    "encrypted": True,
                    "deleteOnTermination": True,
                    "kmsKeyID": "arn:aws:kms:us-east-1:123456789012:key/x",
                },
            },
            {
                "deviceName": "/dev/xvdb",
                "ebs": {"snapshotID": "snap-0123", "volumeInitializationRate": 200},
            },
        ],
        "instanceStorePolicy": "RAID0",
        "detailedMonitoring": True,
        "metadataOptions": {
            "httpEndpoint": "enabled",
            "httpProtocolIPv6": "enabled",
            "httpPutResponseHopLimit": 2,
            "httpTokens": "required",
        },
        "context": "ctx",
        "placementGroupSelector": {"name": "cluster-pg"},
        "networkInterfaces": [
            {"networkCardIndex": 0, "deviceIndex": 0, "interfaceType": "interface"},
            {"networkCardIndex": 1, "deviceIndex": 0, "interfaceType": "efa-only"},
        ],
        "connectionTracking": {"tcpEstablishedTimeout": 3600},
        "cpuOptions": {"nestedVirtualization": "disabled"},
    },
    "status": {
        "subnets": [{"id": "subnet-0a", "zone": "us-east-1a", "zoneID": "use1-az1"}],
        "securityGroups": [{"id": "sg-01", "name": "nodes"}],
        "amis": [
            {
                "id": "ami-0123",
                "name": "my-ami-1",
                "deprecated": False,
                "requirements": [
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}
                ],
            }
        ],
        "capacityReservations": [
            {
                "id": "cr-0123",
                "availabilityZone": "us-east-1a",
                "instanceType": "p5.48xlarge",
                "instanceMatchCriteria": "targeted",
                "ownerID": "123456789012",
                "reservationType": "capacity-block",
                "interruptible": False,
                "state": "active",
                "endTime": "2026-12-01T00:00:00Z",
            }
        ],
        "instanceProfile": "KarpenterNodeInstanceProfile",
        "conditions": [CONDITION],
    },
}

STORED_KWOK: dict[str, Any] = {
    "apiVersion": "karpenter.kwok.sh/v1alpha1",
    "kind": "KWOKNodeClass",
    "metadata": {"name": "local"},
    "spec": {
        "nodeRegistrationDelay": "5s",
        "maxPods": 110,
        "reservedResources": {"cpu": "100m", "memory": "10Mi"},
    },
    "status": {"conditions": [CONDITION]},
}

ROUND_TRIPS: list[tuple[CustomResource[Any], dict[str, Any]]] = [
    (NODEPOOL, STORED_NODEPOOL),
    (NODECLAIM, STORED_NODECLAIM),
    (EC2NODECLASS, STORED_EC2NODECLASS),
    (KWOKNODECLASS, STORED_KWOK),
]


@pytest.mark.parametrize(("resource", "stored"), ROUND_TRIPS, ids=lambda v: getattr(v, "kind", ""))
def test_stored_objects_round_trip_exactly(
    resource: CustomResource[Any], stored: dict[str, Any]
) -> None:
    model = resource.model.model_validate(stored)
    assert model.to_dict() == stored
    assert model.model_dump(by_alias=True, exclude_none=True, mode="json") == stored


@pytest.mark.parametrize(("resource", "stored"), ROUND_TRIPS, ids=lambda v: getattr(v, "kind", ""))
def test_stored_objects_are_admitted_unchanged(
    resource: CustomResource[Any], stored: dict[str, Any]
) -> None:
    """Fully defaulted objects pass validation and gain nothing from defaulting."""
    assert resource.admit(stored) == stored
    assert resource.validate(stored, old=copy.deepcopy(stored)).to_dict() == stored


@pytest.mark.parametrize(
    ("resource", "minimal"),
    [
        (NODEPOOL, nodepool()),
        (NODECLAIM, nodeclaim()),
        (EC2NODECLASS, ec2nodeclass()),
        (KWOKNODECLASS, kwoknodeclass()),
    ],
    ids=lambda v: getattr(v, "kind", ""),
)
def test_model_defaults_agree_with_schema_defaults(
    resource: CustomResource[Any], minimal: dict[str, Any]
) -> None:
    """Parsing without the apiserver's defaulting gives what the apiserver would store."""
    assert resource.model.model_validate(minimal).to_dict() == resource.admit(minimal)


def test_nodepool_without_disruption_defaults_like_the_schema() -> None:
    minimal = nodepool()
    del minimal["spec"]["disruption"]
    assert NodePool.model_validate(minimal).to_dict() == NODEPOOL.admit(minimal)


def test_fields_populate_by_python_name_and_dump_kubernetes_names() -> None:
    status = NodeClaimStatus(provider_id="aws:///us-east-1a/i-1", image_id="ami-1", node_name="n")
    assert status.to_dict() == {
        "providerID": "aws:///us-east-1a/i-1",
        "imageID": "ami-1",
        "nodeName": "n",
    }
    kubelet = KubeletConfiguration(
        cluster_dns=["10.0.0.10"],
        cpu_cfs_quota=False,
        image_gc_high_threshold_percent=90,
        image_gc_low_threshold_percent=70,
    )
    assert set(kubelet.to_dict()) == {
        "clusterDNS",
        "cpuCFSQuota",
        "imageGCHighThresholdPercent",
        "imageGCLowThresholdPercent",
    }
    assert "httpProtocolIPv6" in MetadataOptions().to_dict()


def test_quantities_stay_strings() -> None:
    pool = NodePool.model_validate(
        {**nodepool(), "spec": {**nodepool()["spec"], "limits": {"cpu": 1000, "memory": "1Ti"}}}
    )
    assert pool.spec.limits == {"cpu": "1000", "memory": "1Ti"}
    assert all(type(v) in (str, IntQuantity) for v in pool.spec.limits.values())
    # ...and an integer goes back out as the integer it was.
    assert pool.to_dict()["spec"]["limits"] == {"cpu": 1000, "memory": "1Ti"}


def test_unknown_fields_are_refused_by_the_models_too() -> None:
    obj = nodepool()
    obj["spec"]["surprise"] = 1
    with pytest.raises(ValueError, match="surprise"):
        NodePool.model_validate(obj)


def test_metadata_keeps_fields_it_does_not_model() -> None:
    claim = NodeClaim.model_validate(STORED_NODECLAIM)
    assert claim.metadata.owner_references is not None
    assert claim.metadata.owner_references[0].block_owner_deletion is True
    pool = NodePool.model_validate(STORED_NODEPOOL)
    assert pool.metadata.model_extra == {"managedFields": STORED_METADATA["managedFields"]}


def test_node_class_reference_group_name() -> None:
    assert NodeClassReference(group="g.io", kind="K", name="n").group_name() == "g.io"
    legacy = NodeClassReference(api_version="karpenter.k8s.aws/v1", kind="EC2NodeClass", name="n")
    assert legacy.group_name() == "karpenter.k8s.aws"
    assert legacy.to_dict() == {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "name": "n",
    }
    assert NodeClassReference(kind="K", name="n").group_name() == ""
    assert group_of_ref({"apiVersion": "karpenter.kwok.sh/v1alpha1"}) == "karpenter.kwok.sh"
    assert group_of_ref({"group": "a.io", "apiVersion": "b.io/v1"}) == "a.io"


def test_kind_helpers() -> None:
    pool = NodePool.model_validate(STORED_NODEPOOL)
    assert pool.name == "default"
    assert not pool.is_static
    assert pool.nodeclass_label() == ("karpenter.k8s.aws/ec2nodeclass", "default")
    assert pool.nodepool_label() == ("karpenter.sh/nodepool", "default")
    tpl = pool.spec.template.spec
    assert tpl.expire_after_duration() is None
    assert tpl.termination_grace_period_duration() is not None
    assert tpl.termination_grace_period_duration().total_seconds() == 48 * 3600  # type: ignore[union-attr]
    assert pool.spec.disruption.consolidate_after_duration() is not None
    claim = NodeClaim.model_validate(STORED_NODECLAIM)
    assert claim.nodepool_name == "default"
    launched = claim.condition("Launched")
    assert launched is not None and launched.is_true
    assert claim.condition("Drifted") is None
    assert find_condition(STORED_NODECLAIM["status"]["conditions"], "Initialized") is not None
    nodeclass = EC2NodeClass.model_validate(STORED_EC2NODECLASS)
    assert nodeclass.spec.alias() is None
    assert nodeclass.spec.resolved_ami_family() == "AL2023"
    kwok = KWOKNodeClass.model_validate(STORED_KWOK)
    assert kwok.spec.registration_delay().total_seconds() == 5
