"""`karpenter.kwok.sh/v1alpha1`: KWOKNodeClass.

from karpy.apis.kwok.v1alpha1 import KWOKNodeClass, validate_kwoknodeclass
"""

from __future__ import annotations

from karpy.apis.kwok.v1alpha1.kwoknodeclass import (
    GROUP,
    KWOKNODECLASS,
    LABEL_NODECLASS,
    KWOKNodeClass,
    KWOKNodeClassSpec,
    KWOKNodeClassStatus,
    validate_kwoknodeclass,
)

__all__ = [
    "GROUP",
    "KWOKNODECLASS",
    "LABEL_NODECLASS",
    "KWOKNodeClass",
    "KWOKNodeClassSpec",
    "KWOKNodeClassStatus",
    "validate_kwoknodeclass",
]
