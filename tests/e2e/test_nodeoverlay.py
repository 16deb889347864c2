"""End to end: NodeOverlays on a running `karpy run` (NodeOverlay feature gate) with kwok nodes.

A discount on the `m` family makes karpy launch `m` nodes where `c` nodes are otherwise the
cheapest, the NodeClaims say an overlay priced them, and an overlay of the same weight that
touches the same prices is reported as a conflict and ignored.
"""

from __future__ import annotations

from typing import Any

import pytest
from kubetest import Kubectl

from tests.e2e.conftest import KarpyFactory, PoolFactory
from tests.e2e.support import deployment, nodeclaims, wait_bound, wait_for
from tests.kit import LINUX_AMD64_ON_DEMAND, nodeoverlay

pytestmark = pytest.mark.timeout(600)
FAMILY = "karpenter.kwok.sh/instance-family"
INSTANCE_TYPE = "node.kubernetes.io/instance-type"


def _condition(kubectl: Kubectl, name: str, status: str) -> dict[str, Any]:
    """Until the overlay's ValidationSucceeded has `status`; returns that condition."""

    def check() -> dict[str, Any] | None:
        overlay = kubectl.json("get", "nodeoverlays.karpenter.sh", name)
        for c in (overlay.get("status") or {}).get("conditions") or ():
            if c["type"] == "ValidationSucceeded" and c["status"] == status:
                return dict(c)
        return None

    found: dict[str, Any] = wait_for(check, timeout=90, message=f"NodeOverlay {name} {status}")
    return found


def test_a_discounted_family_is_launched(
    kubectl: Kubectl, namespace: str, karpy_factory: KarpyFactory, kwok_pool: PoolFactory
) -> None:
    karpy_factory({"FEATURE_GATES": "NodeOverlay=true"})
    kwok_pool("default", requirements=LINUX_AMD64_ON_DEMAND)
    m_family = {"key": FAMILY, "operator": "In", "values": ["m"]}
    kubectl.apply(
        nodeoverlay("zz-m-discount", requirements=[m_family], priceAdjustment="-50%", weight=10)
    )
    kubectl.apply(
        nodeoverlay("aa-m-surcharge", requirements=[m_family], priceAdjustment="+50%", weight=10)
    )
    _condition(kubectl, "zz-m-discount", "True")
    conflict = _condition(kubectl, "aa-m-surcharge", "False")
    assert conflict["reason"] == "Conflict"

    kubectl.apply(deployment("web", namespace, replicas=3, cpu="1"))
    wait_bound(kubectl, namespace, 3, selector="app=web")
    claims = nodeclaims(kubectl)
    assert claims
    for claim in claims:
        assert claim["metadata"]["labels"][INSTANCE_TYPE].startswith("m-"), claim["metadata"]
        assert claim["metadata"]["annotations"]["karpenter.sh/price-overlay-applied"] == "true"
