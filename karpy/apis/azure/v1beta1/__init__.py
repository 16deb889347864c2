"""`karpenter.azure.com/v1beta1`: AKSNodeClass and the Azure provider's well-known names.

from karpy.apis.azure.v1beta1 import AKSNodeClass, validate_aksnodeclass
"""

from __future__ import annotations

from karpy.apis.azure.v1beta1 import labels
from karpy.apis.azure.v1beta1.aksnodeclass import (
    AKSNODECLASS,
    AKSNodeClass,
    AKSNodeClassSpec,
    AKSNodeClassStatus,
    KubeletConfiguration,
    LinuxOSConfig,
    LocalDNS,
    LocalDNSZoneOverride,
    NodeImage,
    Sysctls,
    validate_aksnodeclass,
)

__all__ = [
    "AKSNODECLASS",
    "AKSNodeClass",
    "AKSNodeClassSpec",
    "AKSNodeClassStatus",
    "KubeletConfiguration",
    "LinuxOSConfig",
    "LocalDNS",
    "LocalDNSZoneOverride",
    "NodeImage",
    "Sysctls",
    "labels",
    "validate_aksnodeclass",
]
