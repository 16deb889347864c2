"""CapacityBuffers' `Provisioning` condition after a pass: Karpenter's reasons and messages,
from where the pass put each buffer's virtual pods."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

from karpy.controllers.provisioning.buffers import Placement, provisioning_condition, tally
from karpy.scheduling.engine.model import SchedulingResult
from tests.kit import capacitybuffer

JSON = dict[str, Any]


def buffer(name: str, *, ready: bool = True, replicas: int | None = 3) -> JSON:
    out = capacitybuffer(name, "ns", podTemplateRef={"name": "chunk"}, replicas=replicas)
    status: JSON = {
        "conditions": [{"type": "ReadyForProvisioning", "status": "True" if ready else "False"}]
    }
    if replicas is not None:
        status["replicas"] = replicas
    out["status"] = status
    return out


def view(key: str) -> Any:
    return SimpleNamespace(key=key)


def result(
    existing: dict[str, list[str]] | None = None,
    claims: list[list[str]] | None = None,
    errors: list[str] | None = None,
) -> SchedulingResult:
    return cast(
        SchedulingResult,
        SimpleNamespace(
            existing={n: [view(k) for k in keys] for n, keys in (existing or {}).items()},
            node_claims=[SimpleNamespace(pods=[view(k) for k in keys]) for keys in claims or []],
            errors=dict.fromkeys(errors or [], "no room"),
        ),
    )


def test_all_virtual_pods_on_existing_nodes_fit_existing_capacity() -> None:
    b = buffer("room")
    placed = result(
        existing={
            "n1": ["ns/capacitybuffer-room-0", "ns/capacitybuffer-room-1"],
            "n2": ["ns/capacitybuffer-room-2", "ns/web-1"],
        }
    )
    counts = tally([b], placed, real={"ns/web-1"})
    assert counts == {"ns/room": Placement(existing=3)}
    assert provisioning_condition(b, counts["ns/room"]) == (
        "True",
        "FitsExistingCapacity",
        "All 3 virtual pods fit on existing capacity",
    )


def test_any_virtual_pod_on_a_new_node_or_nowhere_requires_new_capacity() -> None:
    b = buffer("room")
    placed = result(
        existing={"n1": ["ns/capacitybuffer-room-0"]},
        claims=[["ns/capacitybuffer-room-1"]],
        errors=["ns/capacitybuffer-room-2"],
    )
    counts = tally([b], placed, real=())
    assert counts["ns/room"] == Placement(existing=1, new=1, failed=1)
    assert provisioning_condition(b, counts["ns/room"]) == (
        "False",
        "RequiresNewCapacity",
        "1/3 virtual pods required new capacity, 1 failed",
    )


def test_a_buffer_not_ready_or_empty_says_so_whatever_the_pass_did() -> None:
    assert provisioning_condition(buffer("b", ready=False), None) == (
        "False",
        "NotReadyForProvisioning",
        "Buffer is not ReadyForProvisioning",
    )
    for empty in (buffer("b", replicas=0), buffer("b", replicas=None)):
        assert provisioning_condition(empty, None) == (
            "False",
            "BufferEmpty",
            "Buffer has zero desired replicas",
        )


def test_a_ready_buffer_absent_from_the_pass_keeps_its_condition() -> None:
    assert provisioning_condition(buffer("b"), None) is None
    # some of its pods seen, all on existing nodes, but not all: nothing to say either
    assert provisioning_condition(buffer("b"), Placement(existing=2)) is None


def test_real_pods_and_other_buffers_pods_are_not_counted() -> None:
    room, other = buffer("room", replicas=1), buffer("room-1", replicas=1)
    placed = result(
        existing={"n1": ["ns/capacitybuffer-room-0", "ns/capacitybuffer-room-1-0"]},
        claims=[["ns/capacitybuffer-room-5", "other/capacitybuffer-room-0"]],
    )
    counts = tally([room, other], placed, real={"ns/capacitybuffer-room-1-0"})
    # room-1's only pod key belongs to a real pod of that name; room-5 is beyond room's replicas
    assert counts == {"ns/room": Placement(existing=1)}
