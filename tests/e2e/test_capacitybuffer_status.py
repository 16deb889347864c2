"""End to end: CapacityBuffers reach each of Karpenter's status reasons on a `karpy run`.

Scripts, alerts and `kubectl wait --for=condition=…` written against Karpenter read its reasons,
so karpy writes the same words. Four buffers on one `karpy run` (CapacityBuffer gate, kwok
nodes of one type, c-2x: 1.9 CPU allocatable):

- `room` (1 x 1 CPU on a PodTemplate): `Resolved`; once its node is launched the room exists
  (`FitsExistingCapacity`);
- `huge` (1 x 3 CPU, more than any node of the pool holds): `RequiresNewCapacity`, its pod
  fitting nowhere (`room`'s first pass says it too, until its node is in flight);
- `missing` names a PodTemplate that does not exist: `PodTemplateNotFound`, and the provisioner
  says `NotReadyForProvisioning`;
- `later` names a Deployment that does not exist yet: `ScalableRefNotFound`, then `Resolved` once
  the Deployment is created (the status controller looks again every 30 s);
- `empty` (0 replicas): `Resolved`, and `BufferEmpty`.

A background poll of the namespace's buffers records every (condition, reason) each buffer
showed, so the test checks every buffer's history once, whatever order the reasons came in.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any

import pytest
from kubetest import Kubectl

from tests.e2e.conftest import KarpyFactory, PoolFactory
from tests.e2e.support import wait_for
from tests.kit import LINUX_AMD64_ON_DEMAND, capacitybuffer, conditions, podtemplate

pytestmark = pytest.mark.timeout(600)
JSON = dict[str, Any]
POOL = "buffer-status"
TYPE = "c-2x-amd64-linux"
Seen = dict[str, set[tuple[str, str, str, str]]]
"""buffer name -> every (condition type, status, reason, message) it showed."""


@contextmanager
def recording(kubectl: Kubectl, namespace: str) -> Iterator[Seen]:
    seen: Seen = {}
    stop = threading.Event()

    def poll() -> None:
        while not stop.is_set():
            with suppress(Exception):  # a failed poll is just a missing sample
                listed = kubectl.json("get", "capacitybuffers", f"--namespace={namespace}")
                for buffer in listed["items"]:
                    record = seen.setdefault(buffer["metadata"]["name"], set())
                    for type_, c in conditions(buffer).items():
                        record.add((type_, c["status"], c["reason"], c.get("message", "")))
            stop.wait(0.5)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        stop.set()
        thread.join(15)


def _reasons(seen: Seen, name: str, type_: str) -> set[str]:
    return {reason for t, _s, reason, _m in seen.get(name, set()) if t == type_}


def _showed(seen: Seen, name: str, type_: str, reason: str) -> tuple[str, str] | None:
    """(status, message) of the first record of `reason` on `type_`, if the buffer showed it."""
    for t, status, r, message in seen.get(name, set()):
        if (t, r) == (type_, reason):
            return status, message
    return None


def _deployment(name: str, namespace: str) -> JSON:
    template = podtemplate(name, namespace, cpu="100m")["template"]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": template["metadata"]["labels"]},
            "template": template,
        },
    }


def test_buffers_reach_each_of_karpenters_status_reasons(
    kubectl: Kubectl, namespace: str, karpy_factory: KarpyFactory, kwok_pool: PoolFactory
) -> None:
    karpy_factory({"FEATURE_GATES": "CapacityBuffer=true"})
    kwok_pool(
        POOL,
        requirements=[
            *LINUX_AMD64_ON_DEMAND,
            {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": [TYPE]},
        ],
    )
    late_ref = {"apiGroup": "apps", "kind": "Deployment", "name": "late"}
    with recording(kubectl, namespace) as seen:
        kubectl.apply(podtemplate("chunk", namespace, cpu="1"))
        kubectl.apply(podtemplate("big", namespace, cpu="3"))
        for buffer in (
            capacitybuffer("room", namespace, podTemplateRef={"name": "chunk"}, replicas=1),
            capacitybuffer("missing", namespace, podTemplateRef={"name": "nope"}, replicas=1),
            capacitybuffer("later", namespace, scalableRef=late_ref, replicas=1),
            capacitybuffer("empty", namespace, podTemplateRef={"name": "chunk"}, replicas=0),
            capacitybuffer("huge", namespace, podTemplateRef={"name": "big"}, replicas=1),
        ):
            kubectl.apply(buffer)

        def settled() -> bool:
            return (
                "FitsExistingCapacity" in _reasons(seen, "room", "Provisioning")
                and "NotReadyForProvisioning" in _reasons(seen, "missing", "Provisioning")
                and "ScalableRefNotFound" in _reasons(seen, "later", "ReadyForProvisioning")
                and "BufferEmpty" in _reasons(seen, "empty", "Provisioning")
                and "RequiresNewCapacity" in _reasons(seen, "huge", "Provisioning")
            )

        wait_for(settled, timeout=240, message=f"the buffers' first reasons: {seen}")
        # the scalable ref appears: the buffer recovers
        kubectl.apply(_deployment("late", namespace))
        wait_for(
            lambda: "Resolved" in _reasons(seen, "later", "ReadyForProvisioning"),
            timeout=90,
            message=f"ScalableRefNotFound -> Resolved: {seen}",
        )

    resolved = ("True", "Pod template resolved successfully")
    assert _showed(seen, "room", "ReadyForProvisioning", "Resolved") == resolved, seen
    assert _showed(seen, "room", "Provisioning", "FitsExistingCapacity") == (
        "True",
        "All 1 virtual pods fit on existing capacity",
    ), seen
    assert _reasons(seen, "room", "Provisioning") <= {
        "RequiresNewCapacity",
        "FitsExistingCapacity",
    }, seen
    assert _showed(seen, "huge", "ReadyForProvisioning", "Resolved") == resolved, seen
    assert _showed(seen, "huge", "Provisioning", "RequiresNewCapacity") == (
        "False",
        "0/1 virtual pods required new capacity, 1 failed",
    ), seen
    assert _reasons(seen, "huge", "Provisioning") == {"RequiresNewCapacity"}, seen

    assert _showed(seen, "missing", "ReadyForProvisioning", "PodTemplateNotFound") == (
        "False",
        'podtemplates "nope" not found',
    ), seen
    assert _reasons(seen, "missing", "ReadyForProvisioning") == {"PodTemplateNotFound"}, seen
    assert _showed(seen, "missing", "Provisioning", "NotReadyForProvisioning") == (
        "False",
        "Buffer is not ReadyForProvisioning",
    ), seen

    assert _showed(seen, "later", "ReadyForProvisioning", "ScalableRefNotFound") == (
        "False",
        'deployments.apps "late" not found',
    ), seen
    assert _showed(seen, "later", "ReadyForProvisioning", "Resolved") == resolved, seen

    assert _showed(seen, "empty", "ReadyForProvisioning", "Resolved") == resolved, seen
    assert _showed(seen, "empty", "Provisioning", "BufferEmpty") == (
        "False",
        "Buffer has zero desired replicas",
    ), seen
    assert _reasons(seen, "empty", "Provisioning") == {"BufferEmpty"}, seen
