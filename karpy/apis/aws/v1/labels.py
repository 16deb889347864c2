"""Well-known names of the AWS provider (`karpenter.k8s.aws`): labels, annotations, tags,
finalizer and the EC2NodeClass's status conditions, spelled as Karpenter's AWS provider spells them.
"""

from __future__ import annotations

from typing import Final

GROUP: Final = "karpenter.k8s.aws"

# The NodeClass label on NodeClaims and Nodes (`<group>/<lowercase kind>`).
LABEL_NODECLASS: Final = "karpenter.k8s.aws/ec2nodeclass"
LABEL_TOPOLOGY_ZONE_ID: Final = "topology.k8s.aws/zone-id"

# Instance-type labels (`karpenter.k8s.aws/<name>`).
LABEL_INSTANCE_CATEGORY: Final = "karpenter.k8s.aws/instance-category"
LABEL_INSTANCE_GENERATION: Final = "karpenter.k8s.aws/instance-generation"
LABEL_INSTANCE_FAMILY: Final = "karpenter.k8s.aws/instance-family"
LABEL_INSTANCE_SIZE: Final = "karpenter.k8s.aws/instance-size"
LABEL_INSTANCE_CAPABILITY_FLEX: Final = "karpenter.k8s.aws/instance-capability-flex"
LABEL_INSTANCE_CPU: Final = "karpenter.k8s.aws/instance-cpu"
LABEL_INSTANCE_CPU_MANUFACTURER: Final = "karpenter.k8s.aws/instance-cpu-manufacturer"
LABEL_INSTANCE_CPU_SUSTAINED_CLOCK_SPEED_MHZ: Final = (
    "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz"
)
LABEL_INSTANCE_MEMORY: Final = "karpenter.k8s.aws/instance-memory"
LABEL_INSTANCE_HYPERVISOR: Final = "karpenter.k8s.aws/instance-hypervisor"
LABEL_INSTANCE_ENCRYPTION_IN_TRANSIT_SUPPORTED: Final = (
    "karpenter.k8s.aws/instance-encryption-in-transit-supported"
)
LABEL_INSTANCE_EBS_BANDWIDTH: Final = "karpenter.k8s.aws/instance-ebs-bandwidth"
LABEL_INSTANCE_NETWORK_BANDWIDTH: Final = "karpenter.k8s.aws/instance-network-bandwidth"
LABEL_INSTANCE_LOCAL_NVME: Final = "karpenter.k8s.aws/instance-local-nvme"
LABEL_INSTANCE_GPU_NAME: Final = "karpenter.k8s.aws/instance-gpu-name"
LABEL_INSTANCE_GPU_MANUFACTURER: Final = "karpenter.k8s.aws/instance-gpu-manufacturer"
LABEL_INSTANCE_GPU_COUNT: Final = "karpenter.k8s.aws/instance-gpu-count"
LABEL_INSTANCE_GPU_MEMORY: Final = "karpenter.k8s.aws/instance-gpu-memory"
LABEL_INSTANCE_ACCELERATOR_NAME: Final = "karpenter.k8s.aws/instance-accelerator-name"
LABEL_INSTANCE_ACCELERATOR_MANUFACTURER: Final = (
    "karpenter.k8s.aws/instance-accelerator-manufacturer"
)
LABEL_INSTANCE_ACCELERATOR_COUNT: Final = "karpenter.k8s.aws/instance-accelerator-count"
LABEL_INSTANCE_TENANCY: Final = "karpenter.k8s.aws/instance-tenancy"
LABEL_CAPACITY_RESERVATION_ID: Final = "karpenter.k8s.aws/capacity-reservation-id"
LABEL_CAPACITY_RESERVATION_TYPE: Final = "karpenter.k8s.aws/capacity-reservation-type"
LABEL_CAPACITY_RESERVATION_INTERRUPTIBLE: Final = (
    "karpenter.k8s.aws/capacity-reservation-interruptible"
)
LABEL_PLACEMENT_GROUP_ID: Final = "karpenter.k8s.aws/placement-group-id"
LABEL_PLACEMENT_GROUP_PARTITION: Final = "karpenter.k8s.aws/placement-group-partition"

# Annotations.
ANNOTATION_EC2NODECLASS_HASH: Final = "karpenter.k8s.aws/ec2nodeclass-hash"
ANNOTATION_EC2NODECLASS_HASH_VERSION: Final = "karpenter.k8s.aws/ec2nodeclass-hash-version"
ANNOTATION_INSTANCE_PROFILE_NAME: Final = "karpenter.k8s.aws/instance-profile-name"

# Finalizer on EC2NodeClasses.
FINALIZER_TERMINATION: Final = "karpenter.k8s.aws/termination"

# EC2 tag keys karpy sets itself; users may not set them in spec.tags.
TAG_EKS_CLUSTER_NAME: Final = "eks:eks-cluster-name"
TAG_NODECLAIM: Final = "karpenter.sh/nodeclaim"
TAG_NODEPOOL: Final = "karpenter.sh/nodepool"
TAG_NODECLASS: Final = LABEL_NODECLASS
TAG_CLUSTER_PREFIX: Final = "kubernetes.io/cluster/"

# EC2NodeClass status conditions (Ready is the root condition).
CONDITION_AMIS_READY: Final = "AMIsReady"
CONDITION_SUBNETS_READY: Final = "SubnetsReady"
CONDITION_SECURITY_GROUPS_READY: Final = "SecurityGroupsReady"
CONDITION_INSTANCE_PROFILE_READY: Final = "InstanceProfileReady"
CONDITION_CAPACITY_RESERVATIONS_READY: Final = "CapacityReservationsReady"
CONDITION_PLACEMENT_GROUP_READY: Final = "PlacementGroupReady"
CONDITION_VALIDATION_SUCCEEDED: Final = "ValidationSucceeded"

REASON_AMI_NOT_FOUND: Final = "AMINotFound"
REASON_UNSUPPORTED_ALIAS: Final = "UnsupportedAlias"
REASON_SUBNETS_NOT_FOUND: Final = "SubnetsNotFound"
REASON_SECURITY_GROUPS_NOT_FOUND: Final = "SecurityGroupsNotFound"
REASON_PLACEMENT_GROUP_NOT_FOUND: Final = "PlacementGroupNotFound"
REASON_PLACEMENT_GROUP_RESOLUTION_FAILED: Final = "PlacementGroupResolutionFailed"
REASON_DEPENDENCIES_NOT_READY: Final = "DependenciesNotReady"
REASON_TAG_VALIDATION_FAILED: Final = "TagValidationFailed"
REASON_CLUSTER_CIDR_RESOLUTION_FAILED: Final = "ClusterCIDRResolutionFailed"
REASON_CREATE_LAUNCH_TEMPLATE_AUTH_CHECK_FAILED: Final = "CreateLaunchTemplateAuthCheckFailed"
REASON_CREATE_FLEET_AUTH_CHECK_FAILED: Final = "CreateFleetAuthCheckFailed"
REASON_RUN_INSTANCES_AUTH_CHECK_FAILED: Final = "RunInstancesAuthCheckFailed"
REASON_INSTANCE_PROFILE_NOT_FOUND: Final = "InstanceProfileNotFound"
REASON_USER_DATA_SIZE_LIMIT_EXCEEDED: Final = "UserDataSizeLimitExceeded"
REASON_UNSUPPORTED_KUBELET_CONFIGURATION: Final = "UnsupportedKubeletConfiguration"
