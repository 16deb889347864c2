"""The kwok simulator as the kubelet of its nodes, in-process against the real control plane
with a fake clock: node Leases and status reports, kwok's stage conventions, a stopped
kubelet (the simulator's fault seam), and another kubelet (a kwok controller) that renews a
node's Lease, to which the simulator leaves the node."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from kubetest import async_wait_until

from karpy.apis.descriptors import NODECLAIMS
from karpy.apis.objects import format_time
from karpy.cloudprovider.kwok.heartbeat import micro_time, node_lease
from karpy.cloudprovider.kwok.instances import node_for
from karpy.cloudprovider.kwok.simulator import KwokSimulator
from karpy.kube import NODES, PODS, FakeClock
from karpy.kube.errors import NotFoundError
from karpy.kube.resources import LEASES
from tests.integration.provisioning.conftest import Env
from tests.integration.provisioning.support import condition
from tests.kit import pod

JSON = dict[str, Any]
LEASE_NS = "kube-node-lease"
CPU, MEMORY = 2000, 4 * 1024**3


class Kubelet:
    """A simulator on a fake clock, and the set of nodes whose kubelet a test stopped."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self.clock = FakeClock(wall_start=datetime.now(UTC))
        self.down: set[str] = set()
        self.sim = KwokSimulator(
            client=env.client,
            cache=env.cache,
            provider=env.kwok,
            nodeclaims=NODECLAIMS,
            clock=self.clock,
            kubelet_down=self.down.__contains__,
        )

    async def node(self, name: str, **labels: str) -> JSON:
        manifest = node_for(
            name=name,
            claim_uid="uid-" + name,
            node_labels=labels,
            capacity={"cpu": CPU, "memory": MEMORY, "pods": 10},
            allocatable={"cpu": CPU, "memory": MEMORY, "pods": 10},
            now=format_time(self.clock.wall()),
        )
        manifest["spec"]["taints"] = []
        node: JSON = await self.env.client.create(NODES, manifest)
        await self.cached(NODES, name, lambda n: True)
        return node

    async def cached(self, resource: Any, key: str, check: Callable[[JSON], bool]) -> JSON:
        informer = self.env.cache.informer(resource)

        async def probe() -> JSON | None:
            obj = informer.get(key)
            return obj if obj is not None and check(obj) else None

        found: JSON = await async_wait_until(probe, timeout=30, message=f"{key} in cache")
        return found

    async def lease(self, name: str) -> JSON:
        lease: JSON = await self.env.client.get(LEASES, name, namespace=LEASE_NS)
        return lease


@pytest.fixture
def kubelet(env: Env) -> Kubelet:
    return Kubelet(env)


async def test_a_kwok_node_gets_the_lease_a_kubelet_keeps(kubelet: Kubelet) -> None:
    node = await kubelet.node("beat-lease")
    assert await kubelet.sim.heartbeats.tick() == 1
    lease = await kubelet.lease("beat-lease")
    assert lease["spec"]["holderIdentity"] == "beat-lease"
    assert lease["spec"]["leaseDurationSeconds"] == 40
    assert lease["metadata"]["ownerReferences"] == [
        {"apiVersion": "v1", "kind": "Node", "name": "beat-lease", "uid": node["metadata"]["uid"]}
    ]
    first = lease["spec"]["renewTime"]
    assert first.startswith(kubelet.clock.wall().strftime("%Y-%m-%dT%H:%M:%S."))

    # The next renewal comes at the node's own moment in the 10 s period, at least half a period
    # after this first one (a first renewal happens at once, whatever the moment).
    renewed_at = None
    for second in range(1, 20):
        kubelet.clock.advance(1)
        if await kubelet.sim.heartbeats.tick():
            renewed_at = second
            break
    assert renewed_at is not None and 5 <= renewed_at <= 15
    assert (await kubelet.lease("beat-lease"))["spec"]["renewTime"] > first


async def test_a_kwok_node_reports_its_status_every_5_minutes(kubelet: Kubelet) -> None:
    await kubelet.node("beat-status")
    await kubelet.sim.heartbeats.tick()
    before = await kubelet.env.client.get(NODES, "beat-status")
    stamps = {c["type"]: c["lastHeartbeatTime"] for c in before["status"]["conditions"]}
    for _ in range(31):  # every 10 s for 5 minutes and a bit
        kubelet.clock.advance(10)
        await kubelet.sim.heartbeats.tick()
    after = await kubelet.env.client.get(NODES, "beat-status")
    for c in after["status"]["conditions"]:
        assert c["lastHeartbeatTime"] > stamps[c["type"]], c["type"]
        assert c["lastTransitionTime"] == before_transition(before, c["type"])
    assert condition(after, "Ready") == "True"


def before_transition(node: JSON, type_: str) -> str:
    return next(c["lastTransitionTime"] for c in node["status"]["conditions"] if c["type"] == type_)


async def test_a_stopped_kubelet_renews_nothing_until_it_is_back(kubelet: Kubelet) -> None:
    await kubelet.node("beat-down")
    await kubelet.node("beat-up")
    assert await kubelet.sim.heartbeats.tick() == 2
    stopped = (await kubelet.lease("beat-down"))["spec"]["renewTime"]
    kubelet.down.add("beat-down")
    for _ in range(30):
        kubelet.clock.advance(1)
        await kubelet.sim.heartbeats.tick()
    assert (await kubelet.lease("beat-down"))["spec"]["renewTime"] == stopped
    assert (await kubelet.lease("beat-up"))["spec"]["renewTime"] > stopped

    # A stopped kubelet does not make its node Ready again, nor run its pods.
    await kubelet.env.client.patch_status(
        NODES, "beat-down", {"status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}}
    )
    await kubelet.cached(NODES, "beat-down", lambda n: condition(n, "Ready") == "Unknown")
    await kubelet.sim.reconcile_node("beat-down")
    assert condition(await kubelet.env.client.get(NODES, "beat-down"), "Ready") == "Unknown"

    kubelet.down.discard("beat-down")
    kubelet.clock.advance(1)
    assert await kubelet.sim.heartbeats.tick() >= 1
    assert (await kubelet.lease("beat-down"))["spec"]["renewTime"] > stopped
    await kubelet.sim.reconcile_node("beat-down")
    assert condition(await kubelet.env.client.get(NODES, "beat-down"), "Ready") == "True"


TOLERATE_ALL = [{"operator": "Exists"}]


async def test_a_delete_delay_holds_the_pod_until_it_has_passed(kubelet: Kubelet) -> None:
    env = kubelet.env
    await kubelet.node("stage-delete")
    annotations = {"pod-delete.stage.kwok.x-k8s.io/delay": "20s"}
    await env.client.create(
        PODS,
        pod(
            "slow",
            env.namespace,
            node="stage-delete",
            tolerations=TOLERATE_ALL,
            annotations=annotations,
        ),
    )
    key = f"{env.namespace}/slow"
    await kubelet.cached(PODS, key, lambda p: True)
    await env.client.delete(PODS, "slow", namespace=env.namespace)
    deleting = await kubelet.cached(
        PODS, key, lambda p: bool(p["metadata"].get("deletionTimestamp"))
    )

    result = await kubelet.sim.reconcile_pod(key)
    assert result is not None and 18 <= (result.requeue_after or 0) <= 21
    assert await env.client.get(PODS, "slow", namespace=env.namespace)
    kubelet.clock.advance(21)
    assert await kubelet.sim.reconcile_pod(key) is None
    with pytest.raises(NotFoundError):
        await env.client.get(PODS, "slow", namespace=env.namespace)
    assert deleting["metadata"]["deletionGracePeriodSeconds"] == 30


async def test_unhealthy_pods_run_but_never_become_ready(kubelet: Kubelet) -> None:
    env = kubelet.env
    await kubelet.node("stage-pods")
    labels = {"kwok.x-k8s.io/stage": "unhealthy"}
    await env.client.create(
        PODS, pod("sick", env.namespace, node="stage-pods", tolerations=TOLERATE_ALL, labels=labels)
    )
    await env.client.create(
        PODS, pod("fine", env.namespace, node="stage-pods", tolerations=TOLERATE_ALL)
    )
    for name in ("sick", "fine"):
        await kubelet.cached(PODS, f"{env.namespace}/{name}", lambda p: True)
        await kubelet.sim.reconcile_pod(f"{env.namespace}/{name}")
    sick = await env.client.get(PODS, "sick", namespace=env.namespace)
    assert sick["status"]["phase"] == "Running" and sick["status"]["podIP"]
    assert condition(sick, "Ready") == "False" and condition(sick, "ContainersReady") == "False"
    assert not sick["status"]["containerStatuses"][0]["ready"]
    fine = await env.client.get(PODS, "fine", namespace=env.namespace)
    assert condition(fine, "Ready") == "True"

    version = sick["metadata"]["resourceVersion"]
    await kubelet.cached(
        PODS, f"{env.namespace}/sick", lambda p: p["metadata"]["resourceVersion"] == version
    )
    assert await kubelet.sim.reconcile_pod(f"{env.namespace}/sick") is None
    again = await env.client.get(PODS, "sick", namespace=env.namespace)
    assert again["metadata"]["resourceVersion"] == version, "left as it is, never made Ready"


async def test_an_unhealthy_node_keeps_the_conditions_a_test_wrote(kubelet: Kubelet) -> None:
    env = kubelet.env
    await kubelet.node("stage-node", **{"kwok.x-k8s.io/stage": "unhealthy"})
    not_ready = {"type": "Ready", "status": "False", "reason": "Injected", "message": "test"}
    await env.client.patch_status(NODES, "stage-node", {"status": {"conditions": [not_ready]}})
    await kubelet.cached(NODES, "stage-node", lambda n: condition(n, "Ready") == "False")
    await kubelet.sim.reconcile_node("stage-node")
    assert condition(await env.client.get(NODES, "stage-node"), "Ready") == "False"

    await env.client.patch(
        NODES, "stage-node", {"metadata": {"labels": {"kwok.x-k8s.io/stage": None}}}
    )
    await kubelet.cached(
        NODES, "stage-node", lambda n: "kwok.x-k8s.io/stage" not in n["metadata"]["labels"]
    )
    await kubelet.sim.reconcile_node("stage-node")
    assert condition(await env.client.get(NODES, "stage-node"), "Ready") == "True"


async def test_a_node_another_kubelet_renews_is_left_to_it(kubelet: Kubelet) -> None:
    """A kwok controller took over the Lease after karpy's first renewal: karpy's next renewal
    finds a renewTime it did not write and leaves the node, its status and its pods alone."""
    await kubelet.node("other-kubelet")
    assert await kubelet.sim.heartbeats.tick() == 1
    # the other kubelet renews (the same holder name, as a kubelet writes it)
    theirs = micro_time(kubelet.clock.wall() + timedelta(seconds=1))
    await kubelet.env.client.patch(
        LEASES, "other-kubelet", {"spec": {"renewTime": theirs}}, namespace=LEASE_NS
    )
    for _ in range(30):
        kubelet.clock.advance(1)
        await kubelet.sim.heartbeats.tick()
    assert (await kubelet.lease("other-kubelet"))["spec"]["renewTime"] == theirs
    assert "other-kubelet" in kubelet.sim.heartbeats.elsewhere
    node = await kubelet.env.client.get(NODES, "other-kubelet")
    assert not kubelet.sim.serves(node)
    # its status is the other kubelet's to write
    await kubelet.env.client.patch_status(
        NODES, "other-kubelet", {"status": {"conditions": [{"type": "Ready", "status": "False"}]}}
    )
    await kubelet.cached(NODES, "other-kubelet", lambda n: condition(n, "Ready") == "False")
    await kubelet.sim.reconcile_node("other-kubelet")
    assert condition(await kubelet.env.client.get(NODES, "other-kubelet"), "Ready") == "False"


async def test_a_node_whose_lease_another_holds_is_never_renewed(kubelet: Kubelet) -> None:
    """First sight of a Node whose fresh Lease another identity holds (a kwok controller that
    was there first, or Karpenter's dev setup): karpy renews nothing."""
    node = await kubelet.node("held-elsewhere")
    held = node_lease(
        name="held-elsewhere",
        uid=node["metadata"]["uid"],
        renew_time=micro_time(kubelet.clock.wall()),
    )
    held["spec"]["holderIdentity"] = "kwok-controller-7f9c"
    await kubelet.env.client.create(LEASES, held, namespace=LEASE_NS)
    assert await kubelet.sim.heartbeats.tick() == 0
    kubelet.clock.advance(10)
    assert await kubelet.sim.heartbeats.tick() == 0
    lease = await kubelet.lease("held-elsewhere")
    assert lease["spec"]["holderIdentity"] == "kwok-controller-7f9c"
    assert lease["spec"]["renewTime"] == held["spec"]["renewTime"]
    # a node next to it, with no other kubelet, is still karpy's
    await kubelet.node("held-here")
    assert await kubelet.sim.heartbeats.tick() == 1
    assert (await kubelet.lease("held-here"))["spec"]["holderIdentity"] == "held-here"
