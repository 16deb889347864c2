"""EC2NodeClasses as read from the cluster, where the CRD may be newer than karpy's model.

A cluster may run the CRDs of a newer Karpenter release (its chart installs them) whose
EC2NodeClass has fields karpy does not know yet. Rejecting the whole object would leave every
NodePool on it without instances; karpy instead uses the fields it knows and warns once per
class and set of fields, naming them, so the user knows which settings are not applied.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from karpy.apis.aws.v1.ec2nodeclass import EC2NodeClass
from karpy.apis.schema import validate_known

__all__ = ["read_nodeclass"]

log = structlog.get_logger("karpy.cloudprovider.aws")

_warned: set[tuple[str, tuple[str, ...]]] = set()


def read_nodeclass(obj: Mapping[str, Any]) -> EC2NodeClass:
    """The EC2NodeClass in `obj`, without the fields karpy's model does not know."""
    nodeclass, ignored = validate_known(EC2NodeClass, obj)
    if ignored:
        key = (str(nodeclass.metadata.name), tuple(ignored))
        if key not in _warned:
            _warned.add(key)
            log.warning(
                "EC2NodeClass has fields karpy does not support; they are ignored",
                EC2NodeClass={"name": key[0]},
                fields=list(ignored),
            )
    return nodeclass
