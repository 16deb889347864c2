"""Karpenter's runtime validation of a NodeOverlay (reason `RuntimeValidation` of its
`ValidationSucceeded` condition): what the CRD cannot express about its requirements."""

from __future__ import annotations

from karpy.apis.v1 import labels
from karpy.apis.v1.nodepool_validation import (
    label_value_error,
    qualified_name_error,
    restricted_label_error,
)
from karpy.apis.v1alpha1.nodeoverlay import NodeOverlay

__all__ = ["runtime_validate_overlay"]


def runtime_validate_overlay(overlay: NodeOverlay) -> list[str]:
    """Every problem of the overlay's requirements, each naming its field; empty when valid.
    Unlike a NodePool, an overlay may select on `karpenter.sh/nodepool`."""
    errors: list[str] = []
    for index, req in enumerate(overlay.spec.requirements):
        path = f"spec.requirements[{index}]"
        reason = qualified_name_error(req.key)
        if reason is None and req.key != labels.LABEL_NODEPOOL:
            reason = restricted_label_error(req.key)
        if reason:
            errors.append(f"{path}.key: invalid key {req.key!r}: {reason}")
        for value in req.values or ():
            why = label_value_error(value)
            if why:
                errors.append(f"{path}.values: invalid value {value!r}: {why}")
        if req.key == labels.LABEL_CAPACITY_TYPE and req.operator == "In":
            known = [v for v in req.values or () if v in labels.CAPACITY_TYPES]
            if not known:
                errors.append(
                    f"{path}.values: no valid capacity type in {req.values}, expected one of "
                    f"{', '.join(labels.CAPACITY_TYPES)}"
                )
    return errors
