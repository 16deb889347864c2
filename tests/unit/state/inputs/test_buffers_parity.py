"""CapacityBuffers plan alike in `karpy run` and `karpy simulate`: the provisioner (buffers
and PodTemplates in the informer cache, the status the controller writes) and a scenario file
(the status computed on load) give the same plan, and the buffer's room is what it asks for."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from karpy.kube.client import Client
from karpy.kube.transport import AiohttpTransport
from karpy.simulation.scenario import load_scenario
from karpy.state.inputs import resolve, with_status
from tests.kit import capacitybuffer, podtemplate, served
from tests.kit.parity import kwok_types, provisioned, provisioner_for, simulated
from tests.unit.state.inputs.test_builder_parity import (
    NAMESPACE,
    NODECLASS,
    NS,
    node,
    nodepool,
    plan_of,
    pod,
)

JSON = dict[str, Any]


def _controller_status(buffer: JSON, templates: Sequence[JSON]) -> JSON:
    """The buffer as `capacitybuffer.status` leaves it (a PodTemplate buffer)."""
    by_name = {(t["metadata"]["namespace"], t["metadata"]["name"]): t for t in templates}
    resolution = resolve(
        buffer,
        pod_template=lambda ns, name: by_name.get((ns, name)),
        workload=lambda *_: None,
    )
    assert resolution.error is None, resolution.error
    resolved, _ = with_status(buffer, resolution)
    return dict(resolved)


def _objects(replicas: int, *, pending: bool) -> tuple[list[JSON], JSON]:
    template = served(podtemplate("chunk", NS, cpu="1"), uid="uid-chunk")
    buffer = served(
        capacitybuffer("room", NS, podTemplateRef={"name": "chunk"}, replicas=replicas),
        uid="uid-room",
    )
    objects = [
        NAMESPACE,
        NODECLASS,
        nodepool(),
        node("n1", zone="test-zone-a", cpu="4"),
        pod("busy-0", node="n1"),
        template,
    ]
    if pending:
        objects.append(pod("web-0", cpu="2"))
    return objects, buffer


@pytest.mark.parametrize(
    ("replicas", "pending", "on_n1", "new_chunks"),
    [
        (3, False, 3, 0),  # 3 CPU free on n1: the buffer's room is there already
        (5, False, 3, 2),  # two more chunks need a new node
        (2, True, 1, 1),  # the pending pod takes 2 of n1's 3 free CPU, the buffer the rest
    ],
)
def test_buffers_plan_alike_in_run_and_simulate(
    tmp_path: Path, replicas: int, pending: bool, on_n1: int, new_chunks: int
) -> None:
    objects, buffer = _objects(replicas, pending=pending)
    templates = [o for o in objects if o["kind"] == "PodTemplate"]
    run = plan_of(
        asyncio.run(
            provisioned([*objects, _controller_status(buffer, templates)], capacity_buffers=True)
        )
    )
    assert run == plan_of(simulated([*objects, buffer], tmp_path).result)
    chunks = [p for p in run.on("n1") if "capacitybuffer-room-" in p]
    assert len(chunks) == on_n1
    new = [p for p in run.new_pods() if "capacitybuffer-room-" in p]
    assert len(new) == new_chunks
    assert run.errors == ()


def test_simulate_resolves_a_workload_buffer_and_warns_about_a_broken_one(tmp_path: Path) -> None:
    web = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": NS},
        "spec": {
            "replicas": 4,
            "selector": {"matchLabels": {"app": "web"}},
            "template": podtemplate("web", NS, cpu="500m")["template"],
        },
    }
    scalable = capacitybuffer(
        "half",
        NS,
        scalableRef={"apiGroup": "apps", "kind": "Deployment", "name": "web"},
        percentage=50,
    )
    broken = capacitybuffer("broken", NS, podTemplateRef={"name": "missing"}, replicas=1)
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump_all([NAMESPACE, nodepool(), web, scalable, broken]))
    scenario = load_scenario([str(path)], instance_types=kwok_types())
    keys = sorted(p.key for p in scenario.input.pods)
    assert keys == [
        f"{NS}/capacitybuffer-half-0",
        f"{NS}/capacitybuffer-half-1",
        *(f"{NS}/web-{i}" for i in range(4)),
    ]
    half = next(p for p in scenario.input.pods if p.key.endswith("half-0"))
    assert half.requests["cpu"] == 500
    assert any(
        "CapacityBuffer 'broken'" in w and "PodTemplate apps/missing not found" in w
        for w in scenario.warnings
    ), scenario.warnings


def test_a_chunk_no_type_fits_is_logged_never_an_event() -> None:
    from structlog.testing import capture_logs

    template = served(podtemplate("huge", NS, cpu="1000"), uid="uid-huge")
    buffer = served(
        capacitybuffer("huge", NS, podTemplateRef={"name": "huge"}, replicas=1), uid="uid-hb"
    )
    objects = [NAMESPACE, NODECLASS, nodepool(), template]

    async def run() -> list[dict[str, Any]]:
        client = Client(AiohttpTransport(base_url="http://127.0.0.1:1"))
        try:
            provisioner = provisioner_for(
                client, [*objects, _controller_status(buffer, [template])], capacity_buffers=True
            )
            batch = await provisioner.gather()
            assert batch is not None and batch.pods == ()  # the buffer alone makes a pass
            result, _ = provisioner.solve(batch)
            assert f"{NS}/capacitybuffer-huge-0" in result.errors
            with capture_logs() as logs:
                assert await provisioner.apply(batch, result) == []
            return logs
        finally:
            await client.close()

    logs = asyncio.run(run())
    (record,) = [r for r in logs if r["event"].startswith("could not keep room")]
    assert f"{NS}/capacitybuffer-huge-0" in record["errors"]
    assert not [r for r in logs if r["event"] == "could not schedule pod"]
