"""karpy's API: pydantic models of the Karpenter custom resources, the CRDs generated from them,
and validation that rejects exactly what those CRDs make the apiserver reject.

Kinds live in `karpy.apis.v1` (NodePool, NodeClaim), `karpy.apis.aws.v1` (EC2NodeClass) and
`karpy.apis.kwok.v1alpha1` (KWOKNodeClass); `karpy.apis.registry` dispatches by apiVersion/kind.
"""

from __future__ import annotations

from karpy.apis.errors import FieldError, ValidationError

__all__ = ["FieldError", "ValidationError"]
