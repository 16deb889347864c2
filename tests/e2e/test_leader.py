"""End to end: with two replicas only the elected leader provisions; the other takes over when
the leader stops."""

from __future__ import annotations

from kubetest import Kubectl

from tests.e2e.conftest import KarpyFactory, PoolFactory
from tests.e2e.karpy_process import Sample, cloudprovider_calls, metric_value
from tests.e2e.support import deployment, nodeclaims, wait_bound, wait_for

ELECTION = {"DISABLE_LEADER_ELECTION": "false"}
FAMILY = "karpenter.kwok.sh/instance-family"


def _created(samples: list[Sample]) -> float:
    return metric_value(samples, "karpenter_nodeclaims_created_total")


def test_only_the_leader_provisions(
    kubectl: Kubectl, namespace: str, karpy_factory: KarpyFactory, kwok_pool: PoolFactory
) -> None:
    first = karpy_factory(ELECTION)
    wait_for(first.is_leader, timeout=60, message="the first replica to lead")
    second = karpy_factory(ELECTION)
    assert not second.is_leader()
    kwok_pool("default")

    kubectl.apply(
        deployment("web", namespace, replicas=4, cpu="1", memory="1Gi", node_selector={FAMILY: "c"})
    )
    wait_bound(kubectl, namespace, 4, timeout=180)
    claims = len(nodeclaims(kubectl))
    assert _created(first.metrics()) == claims
    assert _created(second.metrics()) == 0
    assert cloudprovider_calls(second.metrics(), "create") == 0
    assert not second.log_lines("created nodeclaim")
    assert not second.is_leader()

    # The leader steps down (releasing its lease); the standby takes over and provisions.
    first.stop()
    wait_for(second.is_leader, timeout=60, message="the second replica to lead")
    # Pods of another instance family: they need new nodes.
    kubectl.apply(
        deployment(
            "more", namespace, replicas=2, cpu="1", memory="1Gi", node_selector={FAMILY: "m"}
        )
    )
    wait_bound(kubectl, namespace, 6, timeout=180)
    assert _created(second.metrics()) == len(nodeclaims(kubectl)) - claims > 0
