"""`capacitybuffer.status`: what each CapacityBuffer resolved to, in the API's status fields.

The buffer's spec is resolved by `karpy.state.inputs.resolve` (the same function `karpy
simulate` uses): a `podTemplateRef` names the chunk directly; for a `scalableRef` the workload's
pod template is copied into a PodTemplate `capacitybuffer-<name>-pod-template` owned by the
buffer (Cluster Autoscaler's convention, so the status always names a PodTemplate). The status
gets `podTemplateRef`, `podTemplateGeneration`, `replicas` and `provisioningStrategy`, and
`ReadyForProvisioning` Karpenter's reason: True `Resolved` once resolved, else False with
`PodTemplateNotFound`, `ScalableRefNotFound` (a buffer whose reference appears later recovers
to `Resolved`) or `ResolutionFailed`. `Provisioning` is not this controller's: the provisioner
writes it after each scheduling pass (`karpy.controllers.provisioning.buffers`). Buffers are
looked at again every 30 s, since a workload's replicas (and so a `percentage`) change without
a buffer event.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import structlog

from karpy.apis.autoscaling.v1beta1 import (
    API_VERSION,
    CONDITION_READY_FOR_PROVISIONING,
    KIND,
    REASON_RESOLUTION_FAILED,
    REASON_RESOLVED,
)
from karpy.apis.conditions import Conditions
from karpy.apis.descriptors import CAPACITYBUFFERS
from karpy.controllers.common.status import write_conditions
from karpy.kube import Client, Clock, Informer, RealClock, Result
from karpy.kube.builder import Builder
from karpy.kube.errors import KubeError, NotFoundError
from karpy.kube.resources import PODTEMPLATES, Resource
from karpy.state.inputs import SCALABLE_KINDS, Resolution, resolve

__all__ = ["MESSAGE_RESOLVED", "NAME", "CapacityBufferStatusController"]

NAME: Final = "capacitybuffer.status"
MESSAGE_RESOLVED: Final = "Pod template resolved successfully"
RESYNC_SECONDS: Final = 30.0
JSON = dict[str, Any]
log = structlog.get_logger("karpy.controllers.capacitybuffer")


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _key(obj: Mapping[str, Any]) -> str:
    meta = _meta(obj)
    return f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}"


class CapacityBufferStatusController:
    """Resolves every CapacityBuffer and writes its status."""

    name: Final = NAME

    def __init__(
        self,
        *,
        client: Client,
        buffers: Informer,
        pod_templates: Informer,
        clock: Clock | None = None,
        resync: float = RESYNC_SECONDS,
    ) -> None:
        self.client = client
        self.buffers = buffers
        self.pod_templates = pod_templates
        self.clock = clock or RealClock()
        self.resync = resync

    def setup(self, builder: Builder[str]) -> None:
        builder.watches(self.buffers).workers(2).log_kind("CapacityBuffer")
        builder.watches(self.pod_templates, mapper=self._referring)

    def _referring(self, template: JSON) -> list[str]:
        """The buffers in the template's namespace that name it (by spec or status)."""
        namespace = _meta(template).get("namespace")
        name = _meta(template).get("name")
        out: list[str] = []
        for b in self.buffers.list():
            if _meta(b).get("namespace") != namespace:
                continue
            refs = (
                (b.get("spec") or {}).get("podTemplateRef"),
                (b.get("status") or {}).get("podTemplateRef"),
            )
            if any((r or {}).get("name") == name for r in refs):
                out.append(_key(b))
        return out

    async def reconcile(self, key: str) -> Result | None:
        buffer = self.buffers.get(key)
        if buffer is None or _meta(buffer).get("deletionTimestamp"):
            return None
        resolution = await self._resolve(buffer)
        if resolution.error is None and (buffer.get("spec") or {}).get("scalableRef"):
            resolution = await self._write_template(buffer, resolution)
        result = await self._write_status(buffer, resolution)
        return result or Result(requeue_after=self.resync)

    async def _resolve(self, buffer: JSON) -> Resolution:
        scalable = (buffer.get("spec") or {}).get("scalableRef") or {}
        workload: JSON | None = None
        group, kind = str(scalable.get("apiGroup") or ""), str(scalable.get("kind") or "")
        plural = SCALABLE_KINDS.get((group, kind))
        if plural is not None:
            version = "v1"
            resource = Resource(group, version, kind, plural, namespaced=True)
            try:
                workload = await self.client.get(
                    resource,
                    str(scalable.get("name") or ""),
                    namespace=str(_meta(buffer).get("namespace") or "default"),
                )
            except NotFoundError:
                workload = None
        return resolve(
            buffer,
            pod_template=lambda ns, name: self.pod_templates.get(f"{ns}/{name}"),
            workload=lambda _ns, _g, _k, _n: workload,
        )

    async def _write_template(self, buffer: JSON, resolution: Resolution) -> Resolution:
        """The workload's template as the buffer's own PodTemplate; its generation recorded."""
        meta = _meta(buffer)
        namespace = str(meta.get("namespace") or "default")
        name = str(resolution.template_name)
        template = dict(resolution.template or {})
        tmeta = template.get("metadata") or {}
        body: JSON = {
            "apiVersion": "v1",
            "kind": "PodTemplate",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "ownerReferences": [
                    {
                        "apiVersion": API_VERSION,
                        "kind": KIND,
                        "name": meta.get("name"),
                        "uid": meta.get("uid"),
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "template": {
                "metadata": {
                    k: v for k, v in tmeta.items() if k in ("labels", "annotations") and v
                },
                "spec": template.get("spec") or {},
            },
        }
        current = self.pod_templates.get(f"{namespace}/{name}")
        try:
            if current is None:
                written = await self.client.create(PODTEMPLATES, body)
            elif current.get("template") != body["template"]:
                body["metadata"]["resourceVersion"] = _meta(current).get("resourceVersion")
                written = await self.client.update(PODTEMPLATES, body)
            else:
                written = current
        except KubeError as err:
            return Resolution(
                error=f"failed to write PodTemplate {namespace}/{name} for the buffer: {err}",
                reason=REASON_RESOLUTION_FAILED,
            )
        generation = _meta(written).get("generation")
        return Resolution(
            template_name=name,
            template=written.get("template"),
            generation=int(generation) if generation is not None else None,
            replicas=resolution.replicas,
        )

    async def _write_status(self, buffer: JSON, resolution: Resolution) -> Result | None:
        spec = buffer.get("spec") or {}
        conditions = Conditions.of(buffer, now=self.clock.wall())
        extra: JSON = {"provisioningStrategy": spec.get("provisioningStrategy")}
        if resolution.error is None:
            conditions.set(
                CONDITION_READY_FOR_PROVISIONING,
                "True",
                reason=REASON_RESOLVED,
                message=MESSAGE_RESOLVED,
            )
            extra["podTemplateRef"] = {"name": resolution.template_name}
            extra["replicas"] = resolution.replicas
            extra["podTemplateGeneration"] = resolution.generation
        else:
            log.info(
                "capacity buffer not ready", CapacityBuffer=_key(buffer), error=resolution.error
            )
            conditions.set(
                CONDITION_READY_FOR_PROVISIONING,
                "False",
                reason=resolution.reason or REASON_RESOLUTION_FAILED,
                message=resolution.status_message,
            )
            extra["podTemplateRef"] = (
                {"name": resolution.template_name} if resolution.template_name else None
            )
            extra["replicas"] = None
            extra["podTemplateGeneration"] = None
        return await write_conditions(
            self.client,
            resource=CAPACITYBUFFERS,
            obj=buffer,
            conditions=conditions,
            extra=extra,
        )
