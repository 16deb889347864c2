"""`karpenter.k8s.aws/v1`: EC2NodeClass and the AWS provider's well-known names.

from karpy.apis.aws.v1 import EC2NodeClass, validate_ec2nodeclass
"""

from __future__ import annotations

from karpy.apis.aws.v1 import labels
from karpy.apis.aws.v1.ec2nodeclass import (
    ALIAS_FAMILIES,
    EC2NODECLASS,
    AMISelectorTerm,
    AMIStatus,
    BlockDevice,
    BlockDeviceMapping,
    CapacityReservationSelectorTerm,
    CapacityReservationStatus,
    ConnectionTracking,
    CPUOptions,
    EC2NodeClass,
    EC2NodeClassSpec,
    EC2NodeClassStatus,
    KubeletConfiguration,
    MetadataOptions,
    NetworkInterface,
    PlacementGroupSelector,
    SecurityGroupSelectorTerm,
    SecurityGroupStatus,
    SubnetSelectorTerm,
    SubnetStatus,
    validate_ec2nodeclass,
)

__all__ = [
    "ALIAS_FAMILIES",
    "EC2NODECLASS",
    "AMISelectorTerm",
    "AMIStatus",
    "BlockDevice",
    "BlockDeviceMapping",
    "CPUOptions",
    "CapacityReservationSelectorTerm",
    "CapacityReservationStatus",
    "ConnectionTracking",
    "EC2NodeClass",
    "EC2NodeClassSpec",
    "EC2NodeClassStatus",
    "KubeletConfiguration",
    "MetadataOptions",
    "NetworkInterface",
    "PlacementGroupSelector",
    "SecurityGroupSelectorTerm",
    "SecurityGroupStatus",
    "SubnetSelectorTerm",
    "SubnetStatus",
    "labels",
    "validate_ec2nodeclass",
]
