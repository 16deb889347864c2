"""The raw-dict client against a real apiserver: every verb, typed errors, and retries that
never duplicate a create (faults injected by wrapping the real transport)."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from karpy.kube.client import Client, PatchType, RetryPolicy
from karpy.kube.clock import RealClock
from karpy.kube.config import load_config
from karpy.kube.errors import (
    AlreadyExistsError,
    ConflictError,
    ForbiddenError,
    InvalidError,
    NotFoundError,
    OutcomeUnknownError,
    TooManyRequestsError,
)
from karpy.kube.faults import FaultInjectingTransport, FaultKind
from karpy.kube.resources import PODDISRUPTIONBUDGETS, PODS, Resource
from tests.kit import pod

CONFIGMAPS = Resource("", "v1", "ConfigMap", "configmaps", namespaced=True)


class RecordingClock(RealClock):
    """Real time, but remembers every sleep the client asked for."""

    def __init__(self) -> None:
        self.sleeps: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        await super().sleep(seconds)


def configmap(name: str, namespace: str, **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace, "labels": {"test": "client"}},
        "data": data,
    }


# No scheduler binds these pods: they stay pending.
UNSCHEDULED = {"schedulerName": "none"}


async def faulty_client(
    kubeconfig: str, clock: RealClock | None = None
) -> tuple[Client, FaultInjectingTransport]:
    config = await load_config(kubeconfig=kubeconfig)
    transport = FaultInjectingTransport(config.transport())
    return Client(transport, clock=clock, retry=RetryPolicy(base_delay=0.05)), transport


async def test_crud_on_raw_dicts(client: Client, namespace: str) -> None:
    created = await client.create(CONFIGMAPS, configmap("a", namespace, k="1"), field_manager="t")
    assert created["metadata"]["uid"] and created["data"] == {"k": "1"}
    with pytest.raises(AlreadyExistsError):
        await client.create(CONFIGMAPS, configmap("a", namespace))
    got = await client.get(CONFIGMAPS, "a", namespace=namespace)
    got["data"]["k"] = "2"
    updated = await client.update(CONFIGMAPS, got)
    assert updated["data"]["k"] == "2"
    with pytest.raises(ConflictError):
        await client.update(CONFIGMAPS, got)  # stale resourceVersion
    merged = await client.patch(CONFIGMAPS, "a", {"data": {"m": "x"}}, namespace=namespace)
    assert merged["data"] == {"k": "2", "m": "x"}
    patched = await client.patch(
        CONFIGMAPS,
        "a",
        [{"op": "test", "path": "/data/m", "value": "x"}, {"op": "remove", "path": "/data/m"}],
        namespace=namespace,
        patch_type=PatchType.JSON,
    )
    assert patched["data"] == {"k": "2"}
    applied = await client.apply(
        CONFIGMAPS,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": namespace},
            "data": {"s": "y"},
        },
        field_manager="karpy-test",
    )
    assert applied["data"]["s"] == "y"
    with pytest.raises(ConflictError):
        await client.delete(CONFIGMAPS, "a", namespace=namespace, uid="not-the-uid")
    await client.delete(CONFIGMAPS, "a", namespace=namespace, uid=created["metadata"]["uid"])
    with pytest.raises(NotFoundError):
        await client.get(CONFIGMAPS, "a", namespace=namespace)


async def test_paginated_list_and_selectors(client: Client, namespace: str) -> None:
    for i in range(7):
        obj = configmap(f"p{i}", namespace)
        obj["metadata"]["labels"]["parity"] = "even" if i % 2 == 0 else "odd"
        await client.create(CONFIGMAPS, obj)
    pages = [
        len(items) async for items, _ in client.list_pages(CONFIGMAPS, namespace=namespace, limit=3)
    ]
    assert pages[:3] == [3, 3, 1] or sum(pages) >= 7
    listed = await client.list(
        CONFIGMAPS, namespace=namespace, label_selector={"parity": "even"}, limit=2
    )
    assert sorted(o["metadata"]["name"] for o in listed.items) == ["p0", "p2", "p4", "p6"]
    assert listed.resource_version
    by_field = await client.list(CONFIGMAPS, namespace=namespace, field_selector="metadata.name=p3")
    assert [o["metadata"]["name"] for o in by_field.items] == ["p3"]


async def test_list_pages_and_watch_trim_objects_as_they_are_decoded(
    client: Client, namespace: str
) -> None:
    for i in range(5):
        await client.create(CONFIGMAPS, configmap(f"t{i}", namespace, keep="k", drop="d" * 1000))

    def trim(obj: dict[str, Any]) -> dict[str, Any]:
        return {"metadata": obj["metadata"], "data": {"keep": obj["data"]["keep"]}}

    pages: list[list[dict[str, Any]]] = []
    versions: list[str] = []
    async for items, page_version in client.list_pages(
        CONFIGMAPS, namespace=namespace, limit=2, transform=trim
    ):
        pages.append(items)
        versions.append(page_version)
    assert [len(p) for p in pages] == [2, 2, 1]
    assert all(o["data"] == {"keep": "k"} for p in pages for o in p)

    await client.create(CONFIGMAPS, configmap("t5", namespace, keep="k5", drop="d"))
    added: list[dict[str, Any]] = []
    async for event in client.watch(
        CONFIGMAPS,
        namespace=namespace,
        resource_version=versions[-1],
        timeout_seconds=30,
        transform=trim,
    ):
        if event.type == "ADDED":
            added.append(event.object)
            break
    assert [(o["metadata"]["name"], o["data"]) for o in added] == [("t5", {"keep": "k5"})]


async def test_status_subresource_and_invalid_causes(client: Client, namespace: str) -> None:
    await client.create(PODS, pod("s", namespace, spec=UNSCHEDULED))
    patched = await client.patch_status(
        PODS,
        "s",
        {"status": {"conditions": [{"type": "Custom", "status": "True"}]}},
        namespace=namespace,
        patch_type=PatchType.STRATEGIC,
    )
    assert any(c["type"] == "Custom" for c in patched["status"]["conditions"])
    with pytest.raises(InvalidError) as info:
        await client.create(
            PODS,
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "bad", "namespace": namespace},
                "spec": {"containers": []},
            },
        )
    assert any(c.field.startswith("spec.containers") for c in info.value.causes)


async def test_eviction_respects_disruption_budgets(client: Client, namespace: str) -> None:
    await client.create(PODS, pod("free", namespace, spec=UNSCHEDULED))
    await client.evict("free", namespace=namespace)
    gone_or_terminating = True
    try:
        evicted = await client.get(PODS, "free", namespace=namespace)
        gone_or_terminating = bool(evicted["metadata"].get("deletionTimestamp"))
    except NotFoundError:
        pass
    assert gone_or_terminating
    await client.create(
        PODS, pod("guarded", namespace, labels={"app": "guarded"}, spec=UNSCHEDULED)
    )
    # pending pods may always be evicted: make it a running, ready pod
    await client.patch_status(
        PODS,
        "guarded",
        {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}},
        namespace=namespace,
        patch_type=PatchType.STRATEGIC,
    )
    await client.create(
        PODDISRUPTIONBUDGETS,
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": {"name": "guard", "namespace": namespace},
            "spec": {"maxUnavailable": 0, "selector": {"matchLabels": {"app": "guarded"}}},
        },
    )
    for _ in range(50):  # the disruption controller fills in the budget's status
        budget = await client.get(PODDISRUPTIONBUDGETS, "guard", namespace=namespace)
        status = budget.get("status", {})
        if status.get("observedGeneration") and status.get("expectedPods") == 1:
            break
        await RealClock().sleep(0.2)
    with pytest.raises(TooManyRequestsError):
        await client.evict("guarded", namespace=namespace)
    assert (await client.get(PODS, "guarded", namespace=namespace))["metadata"].get(
        "deletionTimestamp"
    ) is None


async def test_forbidden_is_typed(kubeconfig: str, namespace: str) -> None:
    config = await load_config(kubeconfig=kubeconfig)
    config.impersonate_user = "system:serviceaccount:default:nobody"
    async with Client(config.transport()) as nobody:
        with pytest.raises(ForbiddenError):
            await nobody.list(PODS, namespace=namespace)


async def test_reads_retry_on_429_honouring_retry_after(kubeconfig: str, namespace: str) -> None:
    clock = RecordingClock()
    client, transport = await faulty_client(kubeconfig, clock)
    async with client:
        transport.inject(
            FaultKind.STATUS, method="GET", status=429, headers={"Retry-After": "1"}, times=2
        )
        transport.inject(FaultKind.STATUS, method="GET", status=503, times=1)
        listed = await client.list(CONFIGMAPS, namespace=namespace)
        assert listed.resource_version
        assert len([r for r in transport.requests if r.method == "GET"]) == 4
        assert clock.sleeps[:2] == [1.0, 1.0]  # Retry-After honoured


async def test_create_is_never_repeated_once_it_may_have_happened(
    kubeconfig: str, namespace: str
) -> None:
    client, transport = await faulty_client(kubeconfig)
    async with client:
        transport.inject(FaultKind.LOSE_RESPONSE, method="POST")
        with pytest.raises(OutcomeUnknownError):
            await client.create(CONFIGMAPS, configmap("lost", namespace))
        assert len([r for r in transport.requests if r.method == "POST"]) == 1
        # it did happen: look, do not create again
        assert (await client.get(CONFIGMAPS, "lost", namespace=namespace))["metadata"]["uid"]

        transport.inject(FaultKind.STATUS, method="POST", status=500)
        with pytest.raises(OutcomeUnknownError):
            await client.create(CONFIGMAPS, configmap("five-hundred", namespace))
        assert len([r for r in transport.requests if r.method == "POST"]) == 2


async def test_create_is_retried_when_the_server_never_saw_it(
    kubeconfig: str, namespace: str
) -> None:
    client, transport = await faulty_client(kubeconfig)
    async with client:
        transport.inject(FaultKind.REFUSE, method="POST")
        transport.inject(FaultKind.STATUS, method="POST", status=429, headers={"Retry-After": "0"})
        created = await client.create(CONFIGMAPS, configmap("once", namespace))
        assert created["metadata"]["name"] == "once"
        listed = await client.list(
            CONFIGMAPS, namespace=namespace, field_selector="metadata.name=once"
        )
        assert len(listed.items) == 1


async def test_conditional_writes_retry_and_unconditional_json_patch_does_not(
    kubeconfig: str, namespace: str
) -> None:
    client, transport = await faulty_client(kubeconfig)
    async with client:
        obj = await client.create(CONFIGMAPS, configmap("w", namespace, n="0"))
        transport.inject(FaultKind.LOSE_RESPONSE, method="PUT")
        obj["data"]["n"] = "1"
        with pytest.raises(ConflictError):
            # the lost PUT was applied; its retry carries the old resourceVersion
            await client.update(CONFIGMAPS, obj)
        assert (await client.get(CONFIGMAPS, "w", namespace=namespace))["data"]["n"] == "1"

        transport.inject(FaultKind.STATUS, method="PATCH", status=503)
        patched = await client.patch(CONFIGMAPS, "w", {"data": {"n": "2"}}, namespace=namespace)
        assert patched["data"]["n"] == "2"

        transport.inject(FaultKind.LOSE_RESPONSE, method="PATCH")
        with pytest.raises(OutcomeUnknownError):
            await client.patch(
                CONFIGMAPS,
                "w",
                [{"op": "add", "path": "/data/extra", "value": "x"}],
                namespace=namespace,
                patch_type=PatchType.JSON,
            )
        patches = [r for r in transport.requests if r.method == "PATCH"]
        assert len(patches) == 3  # 503 + retry, then the lost JSON patch only once


async def test_a_precondition_older_than_an_own_write_is_refused_without_a_request(
    kubeconfig: str, namespace: str
) -> None:
    """A status-style patch on a view older than what this client wrote fails as the server
    would (409) but is not sent; on the newer view it is sent and applies."""
    client, transport = await faulty_client(kubeconfig)
    async with client:
        old = await client.create(CONFIGMAPS, configmap("s", namespace, n="0"))
        written = await client.patch(CONFIGMAPS, "s", {"data": {"n": "1"}}, namespace=namespace)
        sent = len(transport.requests)
        stale = {"metadata": {"resourceVersion": old["metadata"]["resourceVersion"]}}
        with pytest.raises(ConflictError, match="not sent"):
            await client.patch(CONFIGMAPS, "s", {**stale, "data": {"n": "2"}}, namespace=namespace)
        old["data"]["n"] = "2"
        with pytest.raises(ConflictError, match="not sent"):
            await client.update(CONFIGMAPS, old)
        assert len(transport.requests) == sent
        fresh = {"metadata": {"resourceVersion": written["metadata"]["resourceVersion"]}}
        patched = await client.patch(
            CONFIGMAPS, "s", {**fresh, "data": {"n": "3"}}, namespace=namespace
        )
        assert patched["data"]["n"] == "3" and len(transport.requests) == sent + 1
        # Another writer's change is only known to the server: sent, and refused there.
        other = await Client.connect(kubeconfig=kubeconfig)
        async with other:
            await other.patch(CONFIGMAPS, "s", {"data": {"n": "4"}}, namespace=namespace)
        latest = {"metadata": {"resourceVersion": patched["metadata"]["resourceVersion"]}}
        with pytest.raises(ConflictError) as refused:
            await client.patch(CONFIGMAPS, "s", {**latest, "data": {"n": "5"}}, namespace=namespace)
        assert "not sent" not in str(refused.value) and len(transport.requests) == sent + 2


async def test_client_side_qps_limit(kubeconfig: str, namespace: str) -> None:
    config = await load_config(kubeconfig=kubeconfig)
    async with Client(config.transport(), qps=5, burst=1) as slow:
        started = time.monotonic()
        for _ in range(6):
            await slow.list(CONFIGMAPS, namespace=namespace)
        assert time.monotonic() - started >= 0.9  # 5 tokens at 5 qps after the first


async def test_names_with_unusual_characters(client: Client, namespace: str) -> None:
    name = f"x.{uuid.uuid4().hex[:6]}"
    await client.create(CONFIGMAPS, configmap(name, namespace))
    assert (await client.get(CONFIGMAPS, name, namespace=namespace))["metadata"]["name"] == name
