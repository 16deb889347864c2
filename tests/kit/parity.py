"""The two ways karpy turns cluster objects into a plan, for tests that hold them to the same
answer: the provisioner (informer cache, gather, solve, with the kwok provider) and
`karpy simulate` (a scenario file, loaded and solved).

    from tests.kit.parity import provisioned, simulated

Both take the same API objects (raw dicts, as `tests.kit` builds them). Nothing is requested
from an API server: the cache is filled as its reflectors would fill it after a list, each
object through its informer's ingest transform, as a watch would deliver it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from karpy.apis.descriptors import (
    CAPACITYBUFFERS,
    KWOKNODECLASSES,
    NODECLAIMS,
    NODEOVERLAYS,
    NODEPOOLS,
    SCHEDULINGCONFIGS,
)
from karpy.cloudprovider.kwok.catalog import kwok_instance_types
from karpy.cloudprovider.kwok.provider import KwokCloudProvider
from karpy.controllers.provisioning.batcher import Batcher
from karpy.controllers.provisioning.provisioner import Provisioner
from karpy.kube.cache import Cache
from karpy.kube.client import Client
from karpy.kube.events import EventRecorder
from karpy.kube.resources import (
    DAEMONSETS,
    NAMESPACES,
    NODES,
    PERSISTENTVOLUMECLAIMS,
    PERSISTENTVOLUMES,
    PODS,
    PODTEMPLATES,
    STORAGECLASSES,
    Resource,
)
from karpy.kube.transport import AiohttpTransport
from karpy.scheduling.engine import SchedulingResult, schedule
from karpy.scheduling.instancetypes import InstanceType
from karpy.simulation.scenario import Scenario, load_scenario
from karpy.state import Cluster

JSON = dict[str, Any]

RESOURCES: dict[str, Resource] = {
    "Pod": PODS,
    "Node": NODES,
    "Namespace": NAMESPACES,
    "DaemonSet": DAEMONSETS,
    "PersistentVolumeClaim": PERSISTENTVOLUMECLAIMS,
    "PersistentVolume": PERSISTENTVOLUMES,
    "StorageClass": STORAGECLASSES,
    "NodePool": NODEPOOLS,
    "NodeClaim": NODECLAIMS,
    "KWOKNodeClass": KWOKNODECLASSES,
    "SchedulingConfig": SCHEDULINGCONFIGS,
    "NodeOverlay": NODEOVERLAYS,
    "CapacityBuffer": CAPACITYBUFFERS,
    "PodTemplate": PODTEMPLATES,
}
"""Every kind the two paths read; a kind a case leaves out is an empty (synced) informer."""

_TYPES: list[InstanceType] = []


def kwok_types() -> list[InstanceType]:
    """The built-in kwok catalogue, built once for the whole session."""
    if not _TYPES:
        _TYPES.extend(kwok_instance_types())
    return _TYPES


@dataclass(frozen=True)
class Simulated:
    scenario: Scenario
    result: SchedulingResult


def simulated(objects: Sequence[JSON], tmp_path: Path) -> Simulated:
    """`karpy simulate` on the objects, written to a scenario file (KWOKNodeClasses left out:
    simulate takes the catalogue, not the class)."""
    path = tmp_path / "scenario.yaml"
    path.write_text(yaml.safe_dump_all([o for o in objects if o["kind"] != "KWOKNodeClass"]))
    scenario = load_scenario([str(path)], instance_types=kwok_types())
    return Simulated(scenario, schedule(scenario.input))


async def provisioned(
    objects: Sequence[JSON], *, node_overlays: bool = False, capacity_buffers: bool = False
) -> SchedulingResult:
    """The provisioner's gather and solve steps on the objects; `node_overlays` and
    `capacity_buffers` are the NodeOverlay and CapacityBuffer feature gates."""
    client = Client(AiohttpTransport(base_url="http://127.0.0.1:1"))
    try:
        provisioner = provisioner_for(
            client, objects, node_overlays=node_overlays, capacity_buffers=capacity_buffers
        )
        batch = await provisioner.gather()
        assert batch is not None, "the provisioner found nothing to provision"
        result, _ = provisioner.solve(batch)
        return result
    finally:
        await client.close()


def provisioner_for(
    client: Client,
    objects: Sequence[JSON],
    *,
    node_overlays: bool = False,
    capacity_buffers: bool = False,
) -> Provisioner:
    """A provisioner over a cache holding the objects (for tests that go on to `apply`)."""
    cache = Cache(client)
    cluster = Cluster(cache, node_overlays=node_overlays, capacity_buffers=capacity_buffers)
    provider = KwokCloudProvider(client=client, cache=cache, instance_types=kwok_types())
    by_resource: dict[Resource, list[JSON]] = {r: [] for r in RESOURCES.values()}
    for obj in objects:
        by_resource[RESOURCES[obj["kind"]]].append(obj)
    for resource, items in by_resource.items():
        informer = cache.informer(resource)
        transform = informer.transform
        informer.replace([transform(dict(o)) if transform else dict(o) for o in items], "1")
    return Provisioner(
        client=client,
        cluster=cluster,
        cloud_provider=provider,
        events=EventRecorder(client),
        batcher=Batcher(idle=1.0, maximum=10.0),
    )
