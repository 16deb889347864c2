"""`autoscaling.x-k8s.io/v1beta1`: CapacityBuffer.

from karpy.apis.autoscaling.v1beta1 import CapacityBuffer, validate_capacitybuffer
"""

from __future__ import annotations

from karpy.apis.autoscaling.v1beta1.capacitybuffer import (
    ACTIVE_CAPACITY,
    API_VERSION,
    CAPACITYBUFFER,
    CONDITION_PROVISIONING,
    CONDITION_READY_FOR_PROVISIONING,
    GROUP,
    KIND,
    CapacityBuffer,
    CapacityBufferSpec,
    CapacityBufferStatus,
    LocalObjectRef,
    ScalableRef,
    validate_capacitybuffer,
)

__all__ = [
    "ACTIVE_CAPACITY",
    "API_VERSION",
    "CAPACITYBUFFER",
    "CONDITION_PROVISIONING",
    "CONDITION_READY_FOR_PROVISIONING",
    "GROUP",
    "KIND",
    "CapacityBuffer",
    "CapacityBufferSpec",
    "CapacityBufferStatus",
    "LocalObjectRef",
    "ScalableRef",
    "validate_capacitybuffer",
]
