"""The EC2NodeClass hash stamped as `karpenter.k8s.aws/ec2nodeclass-hash`.

It covers the spec minus the fields Karpenter tags `hash:"ignore"` (the selector terms, `role`,
`instanceProfile`): what would change a launched instance, not where it is discovered. The value
is karpy's own (SHA-256 of the canonical JSON, as a decimal 64-bit number), not the Go
`hashstructure` value Karpenter computes, so it carries its own version: a NodeClaim stamped by
Karpenter (`v6`) has another version and is never compared with it.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Final

from karpy.apis.aws.v1.ec2nodeclass import EC2NodeClass
from karpy.apis.aws.v1.labels import (
    ANNOTATION_EC2NODECLASS_HASH,
    ANNOTATION_EC2NODECLASS_HASH_VERSION,
)

__all__ = ["HASH_IGNORED", "NODECLASS_HASH_VERSION", "hash_annotations", "nodeclass_hash"]

NODECLASS_HASH_VERSION: Final = "karpy-v1"
HASH_IGNORED: Final = frozenset(
    {
        "subnetSelectorTerms",
        "securityGroupSelectorTerms",
        "capacityReservationSelectorTerms",
        "amiSelectorTerms",
        "role",
        "instanceProfile",
    }
)


def nodeclass_hash(nodeclass: EC2NodeClass) -> str:
    spec: dict[str, Any] = {
        k: v for k, v in nodeclass.spec.to_dict().items() if k not in HASH_IGNORED
    }
    canonical = json.dumps(spec, sort_keys=True, separators=(",", ":"))
    return str(int.from_bytes(hashlib.sha256(canonical.encode()).digest()[:8], "big"))


def hash_annotations(nodeclass: EC2NodeClass) -> dict[str, str]:
    return {
        ANNOTATION_EC2NODECLASS_HASH: nodeclass_hash(nodeclass),
        ANNOTATION_EC2NODECLASS_HASH_VERSION: NODECLASS_HASH_VERSION,
    }
