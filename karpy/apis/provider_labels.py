"""Label keys the cloud providers' instance types carry for the provider's own use, which no pod
may select on and no NodePool may set or constrain.

The upstream Azure provider registers `karpenter.azure.com/sku-hyperv-generation` in Karpenter's
`RestrictedLabels`: its instance types carry it so that each size gets a node image it boots,
but Karpenter refuses a pod or NodePool that names it. karpy lets pods select on every key the
instance types define (kwok's, AWS's and Azure's SKU labels, whose domains are otherwise
restricted); these keys are the exceptions, so such a pod is refused as Karpenter refuses it.
"""

from __future__ import annotations

from typing import Final

from karpy.apis.azure.v1beta1 import labels as azure

__all__ = ["INSTANCE_TYPE_RESTRICTED_LABELS"]

INSTANCE_TYPE_RESTRICTED_LABELS: Final = frozenset({azure.LABEL_SKU_HYPERV_GENERATION})
