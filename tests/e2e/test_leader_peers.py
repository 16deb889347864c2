"""karpy next to another NodeClaim controller (Karpenter, or another karpy), as during a
migration. Both use Karpenter's leader Lease name, `karpenter-leader-election`, in their own
namespace: in one namespace they share the Lease and only its holder acts; in two namespaces
each leads its own, so karpy warns at start-up that it sees the other's Lease."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kubetest import Kubectl, delete_namespace, micro_time

from tests.e2e.conftest import KarpyFactory
from tests.e2e.support import wait_for

LEASE = "karpenter-leader-election"
WARNING = "found another NodeClaim controller's leader Lease in another namespace"


@pytest.fixture
def two_namespaces(kubectl: Kubectl) -> Iterator[tuple[str, str]]:
    """(karpy's namespace, the other controller's namespace)."""
    suffix = uuid.uuid4().hex[:6]
    names = (f"karpy-{suffix}", f"karpenter-{suffix}")
    for name in names:
        kubectl("create", "namespace", name)
    yield names
    for name in names:
        delete_namespace(kubectl, name)


def other_controllers_lease(namespace: str, holder: str) -> dict[str, Any]:
    """The leader Lease as Karpenter's controller-runtime writes it while it leads."""
    now = micro_time()
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": LEASE, "namespace": namespace},
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": 15,
            "acquireTime": now,
            "renewTime": now,
            "leaseTransitions": 0,
        },
    }


def renew(kubectl: Kubectl, namespace: str) -> None:
    patch = json.dumps({"spec": {"renewTime": micro_time()}})
    kubectl("patch", "lease", LEASE, "-n", namespace, "--type=merge", "-p", patch)


def test_in_another_namespace_karpy_leads_and_warns(
    kubectl: Kubectl, karpy_factory: KarpyFactory, two_namespaces: tuple[str, str]
) -> None:
    ours, theirs = two_namespaces
    kubectl.apply(other_controllers_lease(theirs, "karpenter-5d8c9-x7k2p_0c1d"))
    karpy = karpy_factory({"DISABLE_LEADER_ELECTION": "false", "SYSTEM_NAMESPACE": ours})
    wait_for(karpy.is_leader, timeout=90, message="karpy to lead its own Lease")
    lease = kubectl.json("get", "lease", LEASE, "-n", ours)
    assert lease["spec"]["holderIdentity"].startswith(karpy.name)
    # Leases other tests left in namespaces still being deleted are warned about too; this
    # test's own pair of namespaces gets exactly one warning, about the other controller's
    warnings = [
        w
        for w in karpy.log_lines(WARNING)
        if f'"lease": "{theirs}/' in w or f'"lease": "{ours}/' in w
    ]
    assert len(warnings) == 1, karpy.log_tail()
    assert f"{theirs}/{LEASE}" in warnings[0]
    assert "karpenter-5d8c9-x7k2p_0c1d" in warnings[0]
    # the other controller's Lease is not touched
    assert kubectl.json("get", "lease", LEASE, "-n", theirs)["spec"]["holderIdentity"] == (
        "karpenter-5d8c9-x7k2p_0c1d"
    )


def test_in_the_same_namespace_only_the_holder_acts(
    kubectl: Kubectl, karpy_factory: KarpyFactory, two_namespaces: tuple[str, str]
) -> None:
    ours, _ = two_namespaces
    kubectl.apply(other_controllers_lease(ours, "karpenter-5d8c9-x7k2p_0c1d"))
    karpy = karpy_factory({"DISABLE_LEADER_ELECTION": "false", "SYSTEM_NAMESPACE": ours})
    # while the other controller renews its Lease (every 2 s, as controller-runtime), karpy
    # waits as a standby; its leader-only controllers never start
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        renew(kubectl, ours)
        assert not karpy.is_leader(), karpy.log_tail()
        time.sleep(2)
    # no warning about the Lease it shares (other tests' Leases in namespaces still being
    # deleted may be warned about)
    assert not [w for w in karpy.log_lines(WARNING) if f'"lease": "{ours}/' in w], karpy.log_tail()
    lease = kubectl.json("get", "lease", LEASE, "-n", ours)
    assert lease["spec"]["holderIdentity"] == "karpenter-5d8c9-x7k2p_0c1d"
    # the other controller stops (no release, as a crash): karpy takes over once the Lease
    # has not changed for its duration
    wait_for(karpy.is_leader, timeout=90, message="karpy to take the Lease over")
    taken = kubectl.json("get", "lease", LEASE, "-n", ours)["spec"]
    assert taken["holderIdentity"].startswith(karpy.name)
    assert taken["leaseTransitions"] >= 1
