"""`karpenter.sh/v1alpha1`: NodeOverlay.

from karpy.apis.v1alpha1 import NodeOverlay, validate_nodeoverlay
"""

from __future__ import annotations

from karpy.apis.v1alpha1.nodeoverlay import (
    ANNOTATION_CAPACITY_OVERLAY_APPLIED,
    ANNOTATION_PRICE_OVERLAY_APPLIED,
    NODEOVERLAY,
    NodeOverlay,
    NodeOverlayRequirement,
    NodeOverlaySpec,
    NodeOverlayStatus,
    validate_nodeoverlay,
)
from karpy.apis.v1alpha1.nodeoverlay_validation import runtime_validate_overlay

__all__ = [
    "ANNOTATION_CAPACITY_OVERLAY_APPLIED",
    "ANNOTATION_PRICE_OVERLAY_APPLIED",
    "NODEOVERLAY",
    "NodeOverlay",
    "NodeOverlayRequirement",
    "NodeOverlaySpec",
    "NodeOverlayStatus",
    "runtime_validate_overlay",
    "validate_nodeoverlay",
]
