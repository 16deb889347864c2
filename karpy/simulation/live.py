"""`karpy simulate --from-cluster`: the cluster snapshot read from a live cluster.

The apiserver is the one `karpy run` would talk to (`--kubeconfig`, else `$KUBECONFIG`,
in-cluster configuration or `~/.kube/config`; `--context` picks a kubeconfig context), and
the objects are those `karpy run`'s informers hold: NodePools, NodeClaims, Nodes, Pods,
PodDisruptionBudgets, DaemonSets, Namespaces, LimitRanges, PodTemplates,
PersistentVolumeClaims, PersistentVolumes, StorageClasses, and where their CRDs are installed
SchedulingConfigs, NodeOverlays, CapacityBuffers and AKSNodeClasses (whose `maxPods` and
`osDiskSizeGB` size the nodes of their NodePools, as in scenario files) (taken with the status
`capacitybuffer.status` wrote, as `karpy run` takes them). Each kind is listed once, read
only. The replay then turns them into the engine's input with the same builder as
`karpy run` (`karpy.state.inputs`).

Pods: those bound to a listed node and still active, plus the pending pods `karpy run` would
provision for (kube-scheduler gave up on them: `is_provisionable`), which each simulation places
along with the pods it moves. NodeClaims keep their live status: a node whose `consolidateAfter`
has not passed is not `Consolidatable` yet, and the plan says so instead of acting on it. The
instance types follow the NodePools' NodeClass kinds (`karpy.simulation.catalogchoice`), as
the cloud provider's catalogue is not read from the cluster. Without `--disruption` the plan is
the one for the pending pods (`pending_plan_input`), with `--disruption` what voluntary
disruption would do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from karpy.apis.descriptors import (
    AKSNODECLASSES,
    CAPACITYBUFFERS,
    NODECLAIMS,
    NODEOVERLAYS,
    NODEPOOLS,
    SCHEDULINGCONFIGS,
)
from karpy.apis.errors import ValidationError
from karpy.apis.v1 import NodePool, validate_nodepool
from karpy.kube import NODES, PODS, Client, NotFoundError
from karpy.kube.resources import (
    DAEMONSETS,
    LIMITRANGES,
    NAMESPACES,
    PERSISTENTVOLUMECLAIMS,
    PERSISTENTVOLUMES,
    PODDISRUPTIONBUDGETS,
    PODTEMPLATES,
    STORAGECLASSES,
    Resource,
)
from karpy.scheduling import InstanceType, TaintError
from karpy.scheduling.engine import NodePoolTemplate
from karpy.scheduling.engine.model import MinValuesPolicy, PreferencePolicy
from karpy.simulation.catalogchoice import sized_for_nodepool
from karpy.simulation.scenario import ScenarioObjects
from karpy.state import pods as podutil
from karpy.state.inputs import (
    ClusterObjects,
    Inputs,
    NodeClassKey,
    build_input,
    nodepool_nodeclass,
    state_nodes,
)

__all__ = ["list_cluster", "nodeclass_kinds", "objects_from_cluster", "pending_plan_input"]

JSON = dict[str, Any]
OPTIONAL = frozenset(
    {
        SCHEDULINGCONFIGS.plural,
        NODEOVERLAYS.plural,
        CAPACITYBUFFERS.plural,
        AKSNODECLASSES.plural,
    }
)
"""Kinds whose CRDs a cluster may not have installed (read as none)."""


async def _list(client: Client, resource: Resource) -> list[JSON]:
    try:
        listed = await client.list(resource)
    except NotFoundError:
        if resource.plural in OPTIONAL:
            return []
        raise
    return list(listed.items)


def _name(obj: JSON) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _aks_sizes(
    nodeclasses: Sequence[JSON], warnings: list[str]
) -> dict[str, tuple[int | None, int]]:
    """The cluster's AKSNodeClasses' `maxPods` and `osDiskSizeGB` (defaulted), by name."""
    if not nodeclasses:
        return {}
    from pydantic import ValidationError as ModelError

    from karpy.apis.azure.v1beta1 import AKSNodeClass

    out: dict[str, tuple[int | None, int]] = {}
    for raw in nodeclasses:
        try:
            spec = AKSNodeClass.model_validate(raw).spec
        except ModelError as err:
            warnings.append(f"AKSNodeClass {_name(raw)}: its nodes are not sized by it: {err}")
            continue
        out[_name(raw)] = (spec.max_pods, spec.os_disk_size_gb)
    return out


def objects_from_cluster(
    listed: dict[str, list[JSON]],
    *,
    instance_types: Sequence[InstanceType],
    warnings: list[str],
) -> ScenarioObjects:
    """The scenario of the listed objects (kind plural -> items): NodePools validated (an
    invalid one is skipped with a warning, as the provisioner skips it), pods filtered as
    `karpy run` sees them."""
    models: list[NodePool] = []
    templates: list[NodePoolTemplate] = []
    nodeclasses: dict[str, NodeClassKey | None] = {}
    sizes = _aks_sizes(listed.get(AKSNODECLASSES.plural, []), warnings)
    sized: dict[tuple[int | None, int], Sequence[InstanceType]] = {}
    for raw in listed[NODEPOOLS.plural]:
        try:
            model = validate_nodepool(raw)
            types = sized_for_nodepool(instance_types, nodepool_nodeclass(raw), sizes, sized)
            template = (
                None if model.is_static else NodePoolTemplate.from_nodepool(model.to_dict(), types)
            )
        except (ValidationError, ValueError, TaintError) as err:
            warnings.append(f"NodePool {_name(raw)}: skipped: {err}")
            continue
        models.append(model)
        nodeclasses[model.name] = nodepool_nodeclass(raw)
        if template is not None:
            templates.append(template)
    if not models:
        warnings.append("no NodePool in the cluster: nothing can be disrupted or launched")
    nodes = listed[NODES.plural]
    names = {_name(n) for n in nodes}
    pods: list[JSON] = []
    for pod in listed[PODS.plural]:
        bound = podutil.node_name(pod)
        if bound:
            if bound in names and podutil.is_active(pod):
                pods.append(pod)
        elif podutil.is_provisionable(pod):
            pods.append(pod)
    return ScenarioObjects(
        nodepools=models,
        templates=templates,
        nodes=nodes,
        nodeclaims=listed[NODECLAIMS.plural],
        pods=pods,
        pdbs=listed[PODDISRUPTIONBUDGETS.plural],
        daemonsets=listed[DAEMONSETS.plural],
        namespaces={
            _name(ns): dict((ns.get("metadata") or {}).get("labels") or {})
            for ns in listed[NAMESPACES.plural]
        },
        configs=listed[SCHEDULINGCONFIGS.plural],
        nodeclasses=nodeclasses,
        overlays=listed[NODEOVERLAYS.plural],
        buffers=listed.get(CAPACITYBUFFERS.plural, []),
        pod_templates={
            (str((t.get("metadata") or {}).get("namespace") or ""), _name(t)): t
            for t in listed.get(PODTEMPLATES.plural, [])
        },
        limit_ranges=list(listed.get(LIMITRANGES.plural, [])),
        claims=list(listed.get(PERSISTENTVOLUMECLAIMS.plural, [])),
        volumes=list(listed.get(PERSISTENTVOLUMES.plural, [])),
        storage_classes=list(listed.get(STORAGECLASSES.plural, [])),
    )


KINDS = (
    NODEPOOLS,
    NODECLAIMS,
    NODES,
    PODS,
    PODDISRUPTIONBUDGETS,
    DAEMONSETS,
    NAMESPACES,
    SCHEDULINGCONFIGS,
    NODEOVERLAYS,
    CAPACITYBUFFERS,
    PODTEMPLATES,
    LIMITRANGES,
    PERSISTENTVOLUMECLAIMS,
    PERSISTENTVOLUMES,
    STORAGECLASSES,
)
LISTED = (*KINDS, AKSNODECLASSES)
"""What `list_cluster` lists: `KINDS` (which `karpy top` watches) and the AKSNodeClasses that
size the nodes of their NodePools."""


async def list_cluster(
    *, kubeconfig: str | None = None, context: str | None = None
) -> dict[str, list[JSON]]:
    """Every kind the simulation uses (kind plural -> items), listed concurrently, once each."""
    async with await Client.connect(
        kubeconfig=kubeconfig, context=context, user_agent="karpy-simulate"
    ) as client:
        lists = await asyncio.gather(*(_list(client, k) for k in LISTED))
    return {k.plural: items for k, items in zip(LISTED, lists, strict=True)}


def nodeclass_kinds(listed: dict[str, list[JSON]]) -> dict[str, str]:
    """The NodeClass kinds the cluster's NodePools reference (kind -> the first NodePool)."""
    kinds: dict[str, str] = {}
    for raw in listed[NODEPOOLS.plural]:
        key = nodepool_nodeclass(raw)
        if key is not None and key[1]:
            kinds.setdefault(key[1], f"NodePool {_name(raw)!r}")
    return kinds


def pending_plan_input(
    objects: ScenarioObjects,
    *,
    preference_policy: PreferencePolicy = "Respect",
    min_values_policy: MinValuesPolicy = "Strict",
    default_spread: Sequence[Mapping[str, Any]] = (),
) -> Inputs:
    """The provisioner's input for the cluster's pending pods, on the nodes it has: what
    `karpy run` would plan now. Unreadable objects are left out, as the provisioner leaves
    them, and their pending pods are reported in `Inputs.errors`."""
    bound = [p for p in objects.pods if podutil.node_name(p)]
    return build_input(
        ClusterObjects(
            pending=[p for p in objects.pods if not podutil.node_name(p)],
            nodes=state_nodes(nodes=objects.nodes, nodeclaims=objects.nodeclaims, pods=bound),
            daemonsets=objects.daemonsets,
            claims=objects.claims,
            volumes=objects.volumes,
            storage_classes=objects.storage_classes,
            limit_ranges=objects.limit_ranges,
            namespaces=objects.namespaces,
            templates=objects.templates,
            configs=objects.configs,
            nodeclasses=objects.nodeclasses,
            overlays=objects.overlays,
            buffers=objects.buffers,
            pod_templates=objects.pod_templates,
        ),
        preference_policy=preference_policy,
        min_values_policy=min_values_policy,
        default_spread=default_spread,
    )
