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
    REASON_BUFFER_EMPTY,
    REASON_FITS_EXISTING_CAPACITY,
    REASON_NOT_READY_FOR_PROVISIONING,
    REASON_POD_TEMPLATE_NOT_FOUND,
    REASON_REQUIRES_NEW_CAPACITY,
    REASON_RESOLUTION_FAILED,
    REASON_RESOLVED,
    REASON_SCALABLE_REF_NOT_FOUND,
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
    "REASON_BUFFER_EMPTY",
    "REASON_FITS_EXISTING_CAPACITY",
    "REASON_NOT_READY_FOR_PROVISIONING",
    "REASON_POD_TEMPLATE_NOT_FOUND",
    "REASON_REQUIRES_NEW_CAPACITY",
    "REASON_RESOLUTION_FAILED",
    "REASON_RESOLVED",
    "REASON_SCALABLE_REF_NOT_FOUND",
    "CapacityBuffer",
    "CapacityBufferSpec",
    "CapacityBufferStatus",
    "LocalObjectRef",
    "ScalableRef",
    "validate_capacitybuffer",
]
