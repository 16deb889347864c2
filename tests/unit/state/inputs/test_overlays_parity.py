"""NodeOverlays give the same plan to the provisioner (informer cache, NodeOverlay gate on) and
to `karpy simulate` (scenario file): the same instance types at the same adjusted prices. Each
case also checks the outcome it is about, so overlays ignored on both paths would fail."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
import yaml

from karpy.apis.descriptors import NODEOVERLAYS
from karpy.cloudprovider.kwok.catalog import KWOK_LABEL_FAMILY
from karpy.cloudprovider.kwok.provider import KwokCloudProvider
from karpy.controllers.provisioning.batcher import Batcher
from karpy.controllers.provisioning.provisioner import Provisioner
from karpy.kube.cache import Cache
from karpy.kube.client import Client
from karpy.kube.events import EventRecorder
from karpy.kube.resources import Resource
from karpy.kube.transport import AiohttpTransport
from karpy.scheduling.engine import SchedulingResult, schedule
from karpy.simulation.scenario import load_scenario
from karpy.state import Cluster
from tests.kit import nodeoverlay
from tests.unit.state.inputs.test_builder_parity import (
    JSON,
    KINDS,
    NAMESPACE,
    NODECLASS,
    NS,
    nodepool,
    pod,
    types,
)

RESOURCES: dict[str, Resource] = {**KINDS, "NodeOverlay": NODEOVERLAYS}
Launch = tuple[str, float, tuple[str, ...]]
"""(cheapest instance type, its price, pods) of one planned NodeClaim."""


def launches(result: SchedulingResult) -> list[Launch]:
    out = []
    for claim in result.node_claims:
        assert claim.offering is not None
        best = min(claim.instance_types, key=lambda t: (t.price(claim.requirements), t.name))
        out.append(
            (best.name, round(claim.offering.price, 6), tuple(sorted(p.key for p in claim.pods)))
        )
    return sorted(out)


def simulated(objects: Sequence[JSON], tmp_path: Path) -> list[Launch]:
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump_all([o for o in objects if o["kind"] != "KWOKNodeClass"]))
    scenario = load_scenario([str(path)], instance_types=types())
    return launches(schedule(scenario.input))


async def live(objects: Sequence[JSON]) -> list[Launch]:
    client = Client(AiohttpTransport(base_url="http://127.0.0.1:1"))
    cache = Cache(client)
    cluster = Cluster(cache, node_overlays=True)
    provider = KwokCloudProvider(client=client, cache=cache, instance_types=types())
    by_resource: dict[Resource, list[JSON]] = {r: [] for r in RESOURCES.values()}
    for obj in objects:
        by_resource[RESOURCES[obj["kind"]]].append(obj)
    for resource, items in by_resource.items():
        informer = cache.informer(resource)
        transform = informer.transform
        informer.replace([transform(dict(o)) if transform else dict(o) for o in items], "1")
    provisioner = Provisioner(
        client=client,
        cluster=cluster,
        cloud_provider=provider,
        events=EventRecorder(client),
        batcher=Batcher(idle=1.0, maximum=10.0),
    )
    try:
        batch = await provisioner.gather()
        assert batch is not None, "the provisioner found nothing to provision"
        result, _ = provisioner.solve(batch)
        assert not result.errors
        return launches(result)
    finally:
        await client.close()


def _family(name: str) -> JSON:
    return {"key": KWOK_LABEL_FAMILY, "operator": "In", "values": [name]}


BASE = [nodepool(), NODECLASS, NAMESPACE, *(pod(f"web-{i}") for i in range(3))]


@pytest.mark.parametrize(
    ("overlays", "family"),
    [
        ([], "c"),
        ([nodeoverlay("m-half", requirements=[_family("m")], priceAdjustment="-50%")], "m"),
        ([nodeoverlay("s-cheap", requirements=[_family("s")], price="0.01")], "s"),
        (
            [
                nodeoverlay("zz-m", requirements=[_family("m")], priceAdjustment="-50%", weight=2),
                nodeoverlay("aa-m", requirements=[_family("m")], priceAdjustment="+80%", weight=2),
            ],
            "m",
        ),
    ],
    ids=["none", "discount", "price", "conflict"],
)
async def test_provisioner_and_simulate_price_alike(
    overlays: list[JSON], family: str, tmp_path: Path
) -> None:
    objects = [*BASE, *overlays]
    on_cluster = await live(objects)
    assert on_cluster == simulated(objects, tmp_path)
    assert {name.split("-", 1)[0] for name, _, _ in on_cluster} == {family}
    assert sorted(p for _, _, pods in on_cluster for p in pods) == [
        f"{NS}/web-{i}" for i in range(3)
    ]
