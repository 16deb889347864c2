"""Where karpy's custom resources live in the API, as `karpy.kube` resource descriptors.

The one place they are defined: derived from each kind's `CustomResource`, so the informers,
the client, the providers and the controllers all use the same descriptor. The models
themselves stay free of the controller runtime; only this module imports its plain
`Resource` type, and nothing in `karpy.apis` imports this module.
"""

from __future__ import annotations

from typing import Any, Final

from karpy.apis.autoscaling.v1beta1 import CAPACITYBUFFER
from karpy.apis.aws.v1.ec2nodeclass import EC2NODECLASS
from karpy.apis.azure.v1beta1.aksnodeclass import AKSNODECLASS
from karpy.apis.kwok.v1alpha1 import KWOKNODECLASS
from karpy.apis.resource import CustomResource
from karpy.apis.v1 import NODECLAIM, NODEPOOL, SCHEDULINGCONFIG
from karpy.apis.v1alpha1 import NODEOVERLAY
from karpy.kube.resources import Resource

__all__ = [
    "AKSNODECLASSES",
    "CAPACITYBUFFERS",
    "CRD_RESOURCES",
    "EC2NODECLASSES",
    "KWOKNODECLASSES",
    "NODECLAIMS",
    "NODEOVERLAYS",
    "NODEPOOLS",
    "SCHEDULINGCONFIGS",
    "of",
]


def of(custom: CustomResource[Any]) -> Resource:
    """The kube `Resource` of a custom resource kind (equal descriptors share one informer);
    karpy's extension kinds are `optional`: a cluster may lack their CRDs."""
    return Resource(
        custom.group,
        custom.version,
        custom.kind,
        custom.plural,
        namespaced=custom.scope == "Namespaced",
        optional=custom.optional,
    )


NODEPOOLS: Final = of(NODEPOOL)
NODECLAIMS: Final = of(NODECLAIM)
KWOKNODECLASSES: Final = of(KWOKNODECLASS)
EC2NODECLASSES: Final = of(EC2NODECLASS)
AKSNODECLASSES: Final = of(AKSNODECLASS)
SCHEDULINGCONFIGS: Final = of(SCHEDULINGCONFIG)
NODEOVERLAYS: Final = of(NODEOVERLAY)
CAPACITYBUFFERS: Final = of(CAPACITYBUFFER)
CRD_RESOURCES: Final = (
    NODEPOOLS,
    NODECLAIMS,
    KWOKNODECLASSES,
    EC2NODECLASSES,
    SCHEDULINGCONFIGS,
    NODEOVERLAYS,
    CAPACITYBUFFERS,
)
