"""CapacityBuffers as the engine sees them: virtual pods of each buffer's template.

Two steps, as Cluster Autoscaler splits them. `resolve` turns a buffer's spec into what its
status records (the PodTemplate of one chunk, its generation, the number of chunks): the status
controller writes that to the API, and `karpy simulate` computes it for scenario files.
`virtual_pods` turns a buffer whose status is `ReadyForProvisioning` into that many pods of the
template, which the input builder adds to the pods to place. They are never created in the API;
the provisioner launches nodes for them as for real pods, and consolidation must find room for
them too, so a buffer keeps its room and no more.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from karpy.apis.autoscaling.v1beta1 import (
    ACTIVE_CAPACITY,
    CONDITION_READY_FOR_PROVISIONING,
    REASON_POD_TEMPLATE_NOT_FOUND,
    REASON_RESOLUTION_FAILED,
    REASON_SCALABLE_REF_NOT_FOUND,
)
from karpy.scheduling.resources import ResourceError, parse_resources, pod_requests

__all__ = [
    "ANNOTATION_CAPACITY_BUFFER",
    "SCALABLE_KINDS",
    "Resolution",
    "generated_template_name",
    "resolve",
    "virtual_pods",
    "with_status",
]

JSON = Mapping[str, Any]
ANNOTATION_CAPACITY_BUFFER: Final = "autoscaling.x-k8s.io/capacity-buffer"
"""On a virtual pod: the buffer (`namespace/name`) it stands for."""
SCALABLE_KINDS: Final = {
    ("apps", "Deployment"): "deployments",
    ("apps", "ReplicaSet"): "replicasets",
    ("apps", "StatefulSet"): "statefulsets",
    ("", "ReplicationController"): "replicationcontrollers",
    ("batch", "Job"): "jobs",
}
"""Workloads a `scalableRef` may name (group, kind) -> plural: their `spec.template` is a chunk."""

PodTemplateLookup = Callable[[str, str], JSON | None]
"""(namespace, name) -> the PodTemplate, or None."""
WorkloadLookup = Callable[[str, str, str, str], JSON | None]
"""(namespace, group, kind, name) -> the workload, or None."""


@dataclass(frozen=True)
class Resolution:
    """What a buffer's status records; `error` set when it is not ready for provisioning, with
    Karpenter's `reason` for it and, where Karpenter's message differs from our `error` (which
    names the field), that `message`."""

    template_name: str | None = None
    template: JSON | None = None
    """The chunk's pod template (`metadata` and `spec`)."""
    generation: int | None = None
    replicas: int | None = None
    error: str | None = None
    reason: str | None = None
    message: str | None = None

    @property
    def status_message(self) -> str:
        """The `ReadyForProvisioning` message when the buffer is not ready."""
        return self.message or self.error or ""


def _not_found(plural: str, group: str, name: str) -> str:
    """The API server's words for a missing object (what Karpenter's status repeats)."""
    resource = f"{plural}.{group}" if group else plural
    return f'{resource} "{name}" not found'


def generated_template_name(buffer_name: str) -> str:
    """The PodTemplate written for a `scalableRef` buffer (Cluster Autoscaler's name)."""
    return f"capacitybuffer-{buffer_name}-pod-template"


def _meta(obj: JSON) -> JSON:
    return obj.get("metadata") or {}


def _workload_replicas(group: str, kind: str, workload: JSON) -> int:
    spec = workload.get("spec") or {}
    field = "parallelism" if (group, kind) == ("batch", "Job") else "replicas"
    value = spec.get(field)
    return 1 if value is None else int(value)


def resolve(
    buffer: JSON, *, pod_template: PodTemplateLookup, workload: WorkloadLookup
) -> Resolution:
    """The buffer's chunk template and number of chunks, or why it has none."""
    spec = buffer.get("spec") or {}
    namespace = str(_meta(buffer).get("namespace") or "default")
    name = str(_meta(buffer).get("name") or "")
    strategy = spec.get("provisioningStrategy") or ACTIVE_CAPACITY
    if strategy != ACTIVE_CAPACITY:
        return Resolution(
            error=f"spec.provisioningStrategy: {strategy!r} is not supported "
            f"(only {ACTIVE_CAPACITY!r})",
            reason=REASON_RESOLUTION_FAILED,
        )
    scalable_replicas: int | None = None
    ref = spec.get("podTemplateRef")
    if not ref and not spec.get("scalableRef"):
        return Resolution(
            error="spec: neither podTemplateRef nor scalableRef is set",
            reason=REASON_RESOLUTION_FAILED,
            message="Neither podTemplateRef nor scalableRef is set",
        )
    if ref:
        template_name = str(ref.get("name") or "")
        found = pod_template(namespace, template_name)
        if found is None:
            return Resolution(
                error=f"spec.podTemplateRef: PodTemplate {namespace}/{template_name} not found",
                reason=REASON_POD_TEMPLATE_NOT_FOUND,
                message=_not_found("podtemplates", "", template_name),
            )
        template: JSON = found.get("template") or {}
        generation = _meta(found).get("generation")
    else:
        scalable = spec.get("scalableRef") or {}
        group, kind = str(scalable.get("apiGroup") or ""), str(scalable.get("kind") or "")
        target = str(scalable.get("name") or "")
        if (group, kind) not in SCALABLE_KINDS:
            return Resolution(
                error=f"spec.scalableRef: kind {group}/{kind} is not supported (supported: "
                + ", ".join(f"{g or 'core'}/{k}" for g, k in sorted(SCALABLE_KINDS))
                + ")",
                reason=REASON_RESOLUTION_FAILED,
            )
        obj = workload(namespace, group, kind, target)
        if obj is None:
            return Resolution(
                error=f"spec.scalableRef: {kind} {namespace}/{target} not found",
                reason=REASON_SCALABLE_REF_NOT_FOUND,
                message=_not_found(SCALABLE_KINDS[(group, kind)], group, target),
            )
        template = (obj.get("spec") or {}).get("template") or {}
        template_name = generated_template_name(name)
        generation = None
        scalable_replicas = _workload_replicas(group, kind, obj)
    try:
        count = _chunks(spec, template, scalable_replicas)
    except (ResourceError, ValueError) as err:
        return Resolution(
            template_name=template_name,
            template=template,
            error=str(err),
            reason=REASON_RESOLUTION_FAILED,
        )
    return Resolution(
        template_name=template_name,
        template=template,
        generation=int(generation) if generation is not None else None,
        replicas=count,
    )


def _chunks(spec: JSON, template: JSON, scalable_replicas: int | None) -> int:
    """`replicas` and `percentage` (the larger), capped by `limits`; with neither, as many as
    `limits` hold."""
    wanted: list[int] = []
    if spec.get("replicas") is not None:
        wanted.append(max(0, int(spec["replicas"])))
    if spec.get("percentage") is not None and scalable_replicas is not None:
        wanted.append(math.ceil(max(0, int(spec["percentage"])) * scalable_replicas / 100))
    cap = _limit_cap(spec.get("limits"), template)
    if not wanted:
        if cap is None:
            raise ValueError(
                "spec: neither replicas nor percentage is set, and spec.limits bounds no "
                "resource the pod template requests"
            )
        return cap
    count = max(wanted)
    return count if cap is None else min(count, cap)


def _limit_cap(limits: JSON | None, template: JSON) -> int | None:
    if not limits:
        return None
    parsed = parse_resources(limits, field="spec.limits")
    requests = pod_requests(template.get("spec") or {})
    caps = [
        parsed[name] // amount
        for name, amount in requests.items()
        if name in parsed and amount > 0 and name != "pods"
    ]
    return min(caps) if caps else None


def _ready(buffer: JSON) -> bool:
    for c in (buffer.get("status") or {}).get("conditions") or ():
        if c.get("type") == CONDITION_READY_FOR_PROVISIONING:
            return bool(c.get("status") == "True")
    return False


def virtual_pods(
    buffers: Iterable[JSON], pod_templates: Mapping[tuple[str, str], JSON]
) -> list[JSON]:
    """The virtual pods of every buffer its status says is ready: `status.replicas` pods of the
    PodTemplate `status.podTemplateRef`, while that template is still at the status's
    generation (a changed template waits for the status to catch up, as upstream)."""
    out: list[JSON] = []
    for buffer in buffers:
        status = buffer.get("status") or {}
        meta = _meta(buffer)
        if meta.get("deletionTimestamp") or not _ready(buffer):
            continue
        strategy = status.get("provisioningStrategy") or ACTIVE_CAPACITY
        ref_name = (status.get("podTemplateRef") or {}).get("name")
        count = int(status.get("replicas") or 0)
        if strategy != ACTIVE_CAPACITY or not ref_name or count <= 0:
            continue
        namespace = str(meta.get("namespace") or "default")
        found = pod_templates.get((namespace, str(ref_name)))
        if found is None:
            continue
        generation = status.get("podTemplateGeneration")
        current = _meta(found).get("generation")
        if generation is not None and current is not None and int(generation) != int(current):
            continue
        out.extend(_pods(buffer, found, count))
    return out


def _pods(buffer: JSON, pod_template: JSON, count: int) -> list[dict[str, Any]]:
    meta = _meta(buffer)
    name = str(meta.get("name") or "")
    namespace = str(meta.get("namespace") or "default")
    uid = str(meta.get("uid") or f"{namespace}/{name}")
    template = pod_template.get("template") or {}
    tmeta = template.get("metadata") or {}
    spec = dict(template.get("spec") or {})
    spec.pop("nodeName", None)
    # claims would pin the virtual pods to volumes they never get: upstream drops them
    volumes = [
        v
        for v in spec.get("volumes") or ()
        if "persistentVolumeClaim" not in v and "ephemeral" not in v
    ]
    if volumes:
        spec["volumes"] = volumes
    else:
        spec.pop("volumes", None)
    version = (
        f"{meta.get('resourceVersion') or ''}/{_meta(pod_template).get('resourceVersion') or ''}"
    )
    return [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"capacitybuffer-{name}-{i}",
                "namespace": namespace,
                "uid": f"capacitybuffer/{uid}/{i}",
                "resourceVersion": version,
                "labels": dict(tmeta.get("labels") or {}),
                "annotations": {ANNOTATION_CAPACITY_BUFFER: f"{namespace}/{name}"},
            },
            "spec": spec,
        }
        for i in range(count)
    ]


def with_status(buffer: JSON, resolution: Resolution) -> tuple[JSON, JSON]:
    """A resolved buffer as the status controller leaves it, and the PodTemplate its status
    names: for planners that have no controller (`karpy simulate`)."""
    meta = _meta(buffer)
    namespace = str(meta.get("namespace") or "default")
    status = {
        "podTemplateRef": {"name": resolution.template_name},
        "replicas": resolution.replicas,
        "podTemplateGeneration": resolution.generation,
        "conditions": [{"type": CONDITION_READY_FOR_PROVISIONING, "status": "True"}],
    }
    template = {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": {
            "name": resolution.template_name,
            "namespace": namespace,
            "generation": resolution.generation,
        },
        "template": dict(resolution.template or {}),
    }
    return {**buffer, "status": status}, template
