"""End to end: karpy killed (`kill -9`) at the worst moments launches nothing twice.

After each restart there is exactly one instance (kwok Node) per NodeClaim, and the flow
completes: every pod ends up bound.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from kubetest import Kubectl

from tests.e2e.conftest import KarpyFactory, PoolFactory
from tests.e2e.karpy_process import cloudprovider_calls
from tests.e2e.support import deployment, nodeclaims, nodes, wait_bound, wait_for

FAULTS = "KARPY_TEST_PROVIDER_FAULTS"


def _one_instance_per_claim(kubectl: Kubectl) -> list[dict[str, Any]]:
    claims = nodeclaims(kubectl)
    instances = [
        n for n in nodes(kubectl, None) if n["spec"].get("providerID", "").startswith("kwok://")
    ]
    ids = Counter(n["spec"]["providerID"] for n in instances)
    assert all(count == 1 for count in ids.values()), ids
    assert len(instances) == len(claims), (len(instances), len(claims))
    claimed = {c["status"].get("providerID") for c in claims}
    assert claimed == set(ids), (claimed, set(ids))
    return claims


def _launched(claim: dict[str, Any]) -> bool:
    return bool((claim.get("status") or {}).get("providerID"))


def test_kill_after_nodeclaim_created_before_launch(
    kubectl: Kubectl, namespace: str, karpy_factory: KarpyFactory, kwok_pool: PoolFactory
) -> None:
    # Every launch fails in the first process, so its NodeClaims stay created-but-unlaunched.
    first = karpy_factory({FAULTS: "create-error=1000"})
    kwok_pool("default")
    kubectl.apply(deployment("web", namespace, replicas=3, cpu="1", memory="1Gi"))
    claims = wait_for(lambda: nodeclaims(kubectl), timeout=90, message="a NodeClaim")
    assert not any(_launched(c) for c in claims)
    first.kill()

    second = karpy_factory()
    wait_bound(kubectl, namespace, 3, timeout=180)
    claims = _one_instance_per_claim(kubectl)
    assert all(_launched(c) for c in claims)
    created = cloudprovider_calls(second.metrics(), "create", "success")
    assert created == len(claims)


def test_kill_after_launch_before_the_node_exists(
    kubectl: Kubectl, namespace: str, karpy_factory: KarpyFactory, kwok_pool: PoolFactory
) -> None:
    # The kwok instance boots for 8 s: kill karpy once the NodeClaim is launched, before then.
    first = karpy_factory()
    kwok_pool("default", delay="8s")
    kubectl.apply(deployment("web", namespace, replicas=2, cpu="1", memory="1Gi"))
    wait_for(
        lambda: (c := nodeclaims(kubectl)) and all(_launched(x) for x in c),
        timeout=90,
        message="launched NodeClaims",
    )
    first.kill()
    assert not nodes(kubectl, None), "the instance was not supposed to exist yet"

    second = karpy_factory()
    wait_bound(kubectl, namespace, 2, timeout=180)
    _one_instance_per_claim(kubectl)
    # The restarted process launched nothing: the NodeClaims were launched already.
    assert cloudprovider_calls(second.metrics(), "create") == 0


def test_instance_created_but_launch_not_recorded(
    kubectl: Kubectl, namespace: str, karpy_factory: KarpyFactory, kwok_pool: PoolFactory
) -> None:
    """The state a crash between the provider call and the status write leaves behind: the
    instance exists, the NodeClaim does not say so. The next launch must find it."""
    first = karpy_factory()
    kwok_pool("default")
    kubectl.apply(deployment("web", namespace, replicas=1, cpu="1", memory="1Gi"))
    wait_bound(kubectl, namespace, 1, timeout=120)
    first.kill()
    # Forget the launch on every NodeClaim (status written by the lost reconcile).
    for claim in nodeclaims(kubectl):
        kubectl(
            "patch",
            "nodeclaim",
            claim["metadata"]["name"],
            "--subresource=status",
            "--type=merge",
            "--patch",
            json.dumps({"status": None}),
        )
    assert not any(_launched(c) for c in nodeclaims(kubectl))

    second = karpy_factory()
    wait_for(
        lambda: (c := nodeclaims(kubectl)) and all(_launched(x) for x in c),
        timeout=90,
        message="NodeClaims launched again",
    )
    _one_instance_per_claim(kubectl)
    assert cloudprovider_calls(second.metrics(), "create", "success") == len(nodeclaims(kubectl))
    wait_bound(kubectl, namespace, 1, timeout=60)
